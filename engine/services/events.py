"""A stack's events (its resources' and its lifecycle plugin calls'); soft-deleted stacks
keep theirs."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from engine.budget import MAX_NESTED_DEPTH
from engine.context import RequestContext
from engine.db import event_rows, stack_trees
from engine.db.models import Event
from engine.db.session import Database
from engine.errors import EventNotFound, InvalidFilter, OperatorViewForbidden
from engine.services.records import EventRecord
from engine.services.stack_lookup import named_stack

# What a plugin's recent calls show of each recorded call; ``operation_id`` is None for
# a call recorded before calls named their operation.
RECENT_CALL_KEYS = ("operation_id", "action", "phase", "verdict", "message", "duration_ms")
EVENT_FILTERS = {"resource_status", "resource_action", "resource_name", "resource_type"}


@dataclasses.dataclass(frozen=True)
class EventQuery:
    filters: Mapping[str, list[str]] = dataclasses.field(default_factory=dict)
    limit: int | None = None
    marker: str | None = None
    ascending: bool = False  # the order when neither sort_dir nor a known sort key is given
    sort_keys: tuple[str, ...] = ()
    sort_dir: str | None = None


class StackEvents:
    def __init__(self, db: Database) -> None:
        self._db = db

    def list_events(self, ctx: RequestContext, name: str, stack_id: str, query: EventQuery,
                    resource_name: str | None = None, *, nested_depth: int = 0
                    ) -> list[EventRecord]:
        """One page of the stack's events (of one resource's, with ``resource_name``),
        newest first unless asked otherwise; soft-deleted stacks keep theirs. With
        ``nested_depth`` the events of the stacks nested in it, that many levels down
        (at most the nesting limit), are in the same page, each naming its stack."""
        unknown = sorted(set(query.filters) - EVENT_FILTERS)
        if unknown:
            raise InvalidFilter(keys=unknown)
        filters = {k: v for k, v in query.filters.items() if v}
        if resource_name is not None:
            filters.pop("resource_name", None)  # the path names the resource
        if query.sort_dir is not None:
            ascending = query.sort_dir == "asc"
        elif any(k in event_rows.EVENT_SORT_KEYS for k in query.sort_keys):
            ascending = True  # Heat: known sort keys without a direction sort ascending
        else:
            ascending = query.ascending
        with self._db.read() as session:
            stack = named_stack(session, ctx, name, stack_id)
            nested = stack_trees.descendants(session, stack.id,
                                             min(max(nested_depth, 0), MAX_NESTED_DEPTH))
            rows = event_rows.list_events(session, [stack.id, *nested],
                                          resource_name=resource_name,
                                          filters=filters, limit=query.limit,
                                          marker=query.marker, ascending=ascending,
                                          sort_keys=query.sort_keys)
            return [_event(row, (nested[row.stack_id], row.stack_id)
                           if row.stack_id in nested else None) for row in rows]

    def lifecycle_calls(self, ctx: RequestContext, name: str, stack_id: str
                        ) -> list[dict[str, Any]]:
        """Every lifecycle plugin call recorded for the stack, oldest first, each with
        its operation's id (None for a call recorded before calls named it)."""
        with self._db.read() as session:
            stack = named_stack(session, ctx, name, stack_id)
            return [{"operation_id": None, **(row.lifecycle or {}), "event_id": row.id,
                     "time": row.created_at.isoformat(timespec="seconds")}
                    for row in event_rows.list_lifecycle_events(session, stack.id)]

    def recent_lifecycle_calls(self, ctx: RequestContext, plugin: str, limit: int
                               ) -> list[dict[str, Any]]:
        """The last ``limit`` calls of lifecycle plugin ``plugin`` across every tenant's
        stacks, newest first: an admin's read (the console's plugin page)."""
        if not ctx.is_admin:
            raise OperatorViewForbidden(what="lifecycle plugin calls")
        with self._db.read() as session:
            rows = event_rows.recent_lifecycle_events(session, plugin, limit)
            return [{"stack_id": stack.id, "stack_name": stack.name,
                     "tenant_id": stack.tenant_id, "event_id": event.id,
                     **{key: (event.lifecycle or {}).get(key) for key in RECENT_CALL_KEYS},
                     "at": event.created_at.isoformat(timespec="seconds")}
                    for event, stack in rows]

    def get_event(self, ctx: RequestContext, name: str, stack_id: str, resource_name: str,
                  event_id: str) -> EventRecord:
        with self._db.read() as session:
            stack = named_stack(session, ctx, name, stack_id)
            row = event_rows.find_event(session, stack.id, event_id)
            if row is None or row.resource_name != resource_name:
                raise EventNotFound(event_id=event_id)
            return _event(row)


def _event(row: Event, stack: tuple[str, str] | None = None) -> EventRecord:
    return EventRecord(id=row.id, resource_name=row.resource_name,
                       physical_resource_id=row.physical_resource_id,
                       resource_type=row.resource_type, action=row.action, status=row.status,
                       reason=row.reason, properties=dict(row.properties or {}),
                       created_at=row.created_at, lifecycle=row.lifecycle, stack=stack)
