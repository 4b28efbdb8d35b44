"""The request body an update amounts to: PUT replaces the definition, PATCH
(``existing=true``) starts from the stored one and changes what the body gives.

Pure (but for a WARNING naming a stored event sink an update drops): from the stored
stack's definition and the request body to a create-shaped body, which the create path
then checks exactly as it checks a create.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from engine.errors import BadRequest, ImmutableParameterModified
from engine.ir.model import ResolvedStack
from engine.template import event_sinks
from engine.template.environment import parse_environment
from engine.template.event_sinks import SinkRules

LOG = logging.getLogger(__name__)

# What an update may change besides the definition; absent ones keep the stored value.
KEPT_FIELDS = ("tags", "timeout_mins", "disable_rollback")


def update_body(stored: Mapping[str, Any], body: Mapping[str, Any], *,
                patch: bool, sink_rules: SinkRules | None = None) -> dict[str, Any]:
    """``stored`` has the stack's template, parameters, environment, files and the
    KEPT_FIELDS; the result is a body for the create path (with ``stack_name``).
    A PATCH that names no event sinks keeps the stored ones that ``sink_rules`` still
    allow; the others are dropped (a WARNING each), not refused: the tenant did not send
    them (``event_sinks.carried``)."""
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
        given = _parsed(body.get("environment"))
        environment = _merged(stored.get("environment") or {}, given)
        if "event_sinks" not in given and environment.get("event_sinks"):
            environment["event_sinks"] = _carried_sinks(
                environment["event_sinks"], sink_rules or SinkRules(), stored["stack_name"])
        parameters = {**(stored.get("parameters") or {}),
                      **(given.get("parameters") or {}), **(body.get("parameters") or {})}
        for name in body.get("clear_parameters") or ():
            parameters.pop(name, None)  # back to the template's default
        environment["parameters"] = parameters
        files = {**(stored.get("files") or {}), **(body.get("files") or {})}
    else:
        environment = dict(_parsed(body.get("environment")))
        environment["parameters"] = {**(environment.get("parameters") or {}),
                                     **(body.get("parameters") or {})}
        files = dict(body.get("files") or {})
    result["environment"] = environment
    result["files"] = files
    # With environment_files the create path rebuilds the environment from the files,
    # as Heat does, on top of the stored (PATCH) or given (PUT) parameters.
    if body.get("environment_files"):
        result["environment_files"] = body["environment_files"]
        result["parameters"] = environment["parameters"]
    return result


def _carried_sinks(sinks: Any, rules: SinkRules, stack_name: str) -> list[Any]:
    kept, dropped = event_sinks.carried(sinks, rules)
    for reason in dropped:
        LOG.warning("stack %s: a stored event sink is dropped by its update, not sent to: "
                    "%s", stack_name, reason)
    return kept


def _parsed(given: Any) -> Mapping[str, Any]:
    """The body's environment, its sections checked before they are merged."""
    return parse_environment(given)


def _merged(stored: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """Environment sections merged one level deep, as Heat merges a PATCH's."""
    result = {section: dict(value) if isinstance(value, Mapping) else value
              for section, value in stored.items()}
    if given:
        for section, value in given.items():
            if isinstance(value, Mapping) and isinstance(result.get(section), Mapping):
                result[section] = {**result[section], **value}
            else:
                result[section] = value
    return result


def check_immutable(stored: ResolvedStack | None, new: ResolvedStack) -> None:
    """Refuse an update that changes a parameter the new template marks ``immutable``
    (compared as typed values, so ``"1"`` and ``1`` for a number are the same)."""
    if stored is None:
        return  # the stored stack cannot be read (a type uninstalled): nothing to compare
    changed = sorted(name for name, schema in new.parameter_schemas.items()
                     if schema.immutable and name in stored.parameter_schemas
                     and stored.parameters.get(name) != new.parameters.get(name))
    if changed:
        raise ImmutableParameterModified(keys=", ".join(changed))
