"""The fields of a stack request body (create, adopt, preview, validate, update),
checked as Heat's API checks them before anything reads them.

Heat's ``InstantiationData`` and ``param_utils`` set the rules and the messages:
``timeout_mins`` must look like a non-negative integer, ``disable_rollback`` and
``converge`` are ``true``/``false``, ``tags`` a comma-separated string (Kiln also takes
the list it stores), ``parameters`` and ``files`` maps, ``environment`` a map or its
text, ``environment_files`` a list of names. Where Heat has no check and fails deeper
down (a ``files`` that is a string, a number for ``template``), Kiln answers a 400
naming the field. Keys Heat does not know are ignored, as Heat ignores them.

Pure: a body in, typed values or ``BadRequest`` out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.errors import BadRequest
from engine.schema import check_tags, extract_bool, extract_int

# The stack's timeout column is a 32-bit integer on every database Kiln runs on.
MAX_TIMEOUT_MINS = 2**31 - 1


def check_body(body: Mapping[str, Any]) -> None:
    """Refuse a body whose known fields have the wrong type, before any field is read."""
    template = body.get("template")
    if template is not None and not isinstance(template, (str, Mapping)):
        raise BadRequest(reason="Template not in valid format: the template must be a map "
                                "or its YAML or JSON text.")
    _map_or_none(body, "parameters", "parameters must be a map")
    files = _map_or_none(body, "files", "files must be a map")
    if files is not None and not all(isinstance(v, str) for v in files.values()):
        raise BadRequest(reason="files must map each file name to its contents (text)")
    environment = body.get("environment")
    if environment is not None and not isinstance(environment, (str, Mapping)):
        raise BadRequest(reason="Environment not in valid format: The environment is not a "
                                "valid YAML mapping data type.")
    names = body.get("environment_files")
    if names is not None and (not isinstance(names, list)
                              or not all(isinstance(n, str) for n in names)):
        raise BadRequest(reason="environment_files must be a list of file names")
    timeout_mins(body.get("timeout_mins"))
    if "disable_rollback" in body:
        extract_bool(body["disable_rollback"], "disable_rollback")
    tags(body.get("tags"))
    if "converge" in body:
        extract_bool(body["converge"], "converge")
    cleared = body.get("clear_parameters")
    if cleared is not None and (not isinstance(cleared, list)
                                or not all(isinstance(n, str) for n in cleared)):
        raise BadRequest(reason="clear_parameters must be a list of parameter names")


def refuse_converge(body: Mapping[str, Any]) -> None:
    """A create or its preview: Heat takes ``converge`` on updates only."""
    if "converge" in body:
        raise BadRequest(reason="converge flag only supported in stack update (or update "
                                "preview) request.")


def _map_or_none(body: Mapping[str, Any], key: str, message: str) -> Mapping[str, Any] | None:
    value = body.get(key)
    if value is not None and not isinstance(value, Mapping):
        raise BadRequest(reason=message)
    return value


def timeout_mins(value: Any) -> int | None:
    """``timeout_mins``: 0 and absent mean the default. Kiln bounds it by the column."""
    if value in (None, ""):
        return None
    return extract_int(value, "timeout_mins", MAX_TIMEOUT_MINS) or None


def tags(value: Any) -> list[str]:
    """A comma-separated string (Heat's form) or a list of strings (the stored form),
    each tag trimmed, empty ones dropped, none over 80 characters."""
    if not value:
        return []
    if isinstance(value, str):
        found = value.split(",")
    elif isinstance(value, list) and all(isinstance(t, str) for t in value):
        found = list(value)
    else:
        raise BadRequest(reason="tags must be a comma-separated string of tags")
    found = [t.strip() for t in found if t.strip()]
    check_tags(found)
    return found


def files(body: Mapping[str, Any]) -> dict[str, Any]:
    return dict(_map_or_none(body, "files", "files must be a map") or {})
