"""The request body an update amounts to: PUT replaces the definition, PATCH
(``existing=true``) starts from the stored one and changes what the body gives.

Pure: from the stored stack's definition and the request body to a create-shaped body,
which the create path then checks exactly as it checks a create.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.errors import BadRequest
from engine.template.parse import document

# What an update may change besides the definition; absent ones keep the stored value.
KEPT_FIELDS = ("tags", "timeout_mins", "disable_rollback")


def update_body(stored: Mapping[str, Any], body: Mapping[str, Any], *,
                patch: bool) -> dict[str, Any]:
    """``stored`` has the stack's template, parameters, environment, files and the
    KEPT_FIELDS; the result is a body for the create path (with ``stack_name``)."""
    if not isinstance(body, Mapping):
        raise BadRequest(reason="The request body must be a JSON object")
    result: dict[str, Any] = {key: body[key] if key in body else stored.get(key)
                              for key in KEPT_FIELDS}
    result["stack_name"] = stored["stack_name"]
    template = body.get("template")
    if template is None and patch:
        template = stored["template"]  # PATCH: "template": null keeps the stored one
    if template is None:
        raise BadRequest(reason="No template specified")
    result["template"] = template
    if patch:
        environment = _merged(stored.get("environment") or {}, body.get("environment"))
        parameters = {**(stored.get("parameters") or {}), **(body.get("parameters") or {})}
        for name in body.get("clear_parameters") or ():
            parameters.pop(name, None)  # back to the template's default
        environment["parameters"] = {**environment.get("parameters", {}), **parameters}
        files = {**(stored.get("files") or {}), **(body.get("files") or {})}
    else:
        environment = dict(body.get("environment") or {})
        environment["parameters"] = {**environment.get("parameters", {}),
                                     **(body.get("parameters") or {})}
        files = dict(body.get("files") or {})
    result["environment"] = environment
    result["files"] = files
    return result


def _merged(stored: Mapping[str, Any], given: Any) -> dict[str, Any]:
    """Environment sections merged one level deep, as Heat merges a PATCH's."""
    result = {section: dict(value) if isinstance(value, Mapping) else value
              for section, value in stored.items()}
    if isinstance(given, str):
        given = document(given, "environment").data or {}
    if isinstance(given, Mapping):
        for section, value in given.items():
            if isinstance(value, Mapping) and isinstance(result.get(section), Mapping):
                result[section] = {**result[section], **value}
            else:
                result[section] = value
    return result
