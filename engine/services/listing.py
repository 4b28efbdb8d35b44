"""Heat's list filters, turned into what Kiln's queries compare.

Heat accepts several names for one filter (``name`` and ``stack_name``), a status written
either alone (``COMPLETE``) or with its action (``CREATE_COMPLETE``), and repeated keys
(an IN list). These functions apply those rules once, for stacks and for resources.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.services.records import ResourceRecord
from engine.services.stack_requests import MAX_TIMEOUT_MINS
from engine.vocabulary import Status

# Tried in this order on each status filter value.
STATUSES = (Status.COMPLETE, Status.FAILED, Status.IN_PROGRESS)

# Heat's stack list filter names (its STACK_KEYS plus the older short names) -> the name
# stack_list.list_stacks compares; unknown keys are ignored, as Heat ignores them.
STACK_FILTERS = {
    "id": "id",
    "name": "name", "stack_name": "name",
    "status": "status", "stack_status": "status",
    "action": "action", "stack_action": "action",
    "tenant": "tenant",
    "stack_user_project_id": "stack_user_project_id",
    "username": "owner", "stack_owner": "owner",
    "owner_id": "parent", "parent": "parent",
    "stack_status_reason": "status_reason",
    "disable_rollback": "disable_rollback",
    "timeout_mins": "timeout_mins",
}

# Resource list query keys Heat accepts; any other key is a 400 (InvalidFilter).
RESOURCE_QUERY_KEYS = frozenset({"type", "status", "name", "action", "id",
                                 "physical_resource_id", "nested_depth", "with_detail"})


def split_statuses(values: Iterable[str]) -> tuple[set[str], set[str]]:
    """(actions, statuses) named by status filters: ``CREATE_COMPLETE`` gives CREATE and
    COMPLETE, ``COMPLETE`` just COMPLETE; a value naming no status adds nothing."""
    actions: set[str] = set()
    statuses: set[str] = set()
    for value in values:
        for status in STATUSES:
            index = value.rfind(status)
            if index != -1:
                statuses.add(value[index:])
                if index > 1:
                    actions.add(value[:index - 1])
                break
    return actions, statuses


def stack_filters(given: Mapping[str, list[str]]) -> dict[str, list[Any]]:
    """Query parameters -> {filter: values} for ``stack_list.list_stacks``. Aliases merge
    into one IN list; a status with an action filters on both (as in Heat, an action
    from a status joins the action filter rather than narrowing it)."""
    found: dict[str, list[Any]] = {}
    for key, values in given.items():
        target = STACK_FILTERS.get(key)
        if target is not None and values:
            found.setdefault(target, []).extend(values)
    if "status" in found:
        actions, statuses = split_statuses(found["status"])
        found["status"] = sorted(statuses)
        if actions:
            found["action"] = sorted(actions | set(found.get("action", [])))
    if "disable_rollback" in found:
        # A filter compares, it does not validate (Heat's filters reject nothing): a value
        # that is not a boolean is dropped, so it matches no stack, where a request body's
        # flag (schema.extract_bool) would be a 400.
        found["disable_rollback"] = [v.lower() == "true" for v in found["disable_rollback"]
                                     if v.lower() in ("true", "false")]
    if "timeout_mins" in found:
        # A value no stored timeout can have (not an integer, or past the column's range)
        # matches no stack, like a status that names none.
        found["timeout_mins"] = [int(v) for v in found["timeout_mins"]
                                 if _is_int(v) and abs(int(v)) <= MAX_TIMEOUT_MINS]
    return found


def resource_filter(given: Mapping[str, list[str]]) -> dict[str, set[str]]:
    """The comparisons a resource list makes, from its (already checked) query keys."""
    found = {key: set(values) for key, values in given.items()
             if key not in ("nested_depth", "with_detail") and values}
    if "status" in found:
        actions, statuses = split_statuses(found["status"])
        found["status"] = statuses
        if actions:
            found["action"] = found.get("action", set()) | actions
    return found


def resource_matches(record: ResourceRecord, row_id: int, wanted: Mapping[str, set[str]]
                     ) -> bool:
    """Heat's resource filters: ``type`` is a substring match, the others exact; ``id``
    is the internal row id, as in Heat (whose resource ``id`` is never shown either)."""
    actual = {"name": record.name, "status": record.status, "action": record.action,
              "physical_resource_id": record.physical_id, "id": str(row_id)}
    for key, values in wanted.items():
        if key == "type":
            if not any(value in record.type for value in values):
                return False
        elif actual[key] not in values:
            return False
    return True


def _is_int(value: str) -> bool:
    try:
        int(value)
    except ValueError:
        return False
    return True
