"""Events: one per state a stack or resource takes, and per lifecycle plugin call; read
in filtered, ordered pages."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import (
    null,
    select,
)
from sqlalchemy.orm import Session

from engine.db.models import Event, Stack
from engine.db.paging import keyset_after
from engine.vocabulary import Status

Now = datetime.datetime


def add_event(session: Session, *, stack_id: str, resource_name: str, physical_resource_id: str,
              resource_type: str, action: str, status: str, reason: str, now: Now,
              properties: Any = None, lifecycle: Any = None) -> Event:
    event = Event(id=str(uuid.uuid4()), stack_id=stack_id, resource_name=resource_name,
                  physical_resource_id=physical_resource_id or "",
                  resource_type=resource_type, action=action, status=status,
                  # NOTE: Heat's column is 255 characters too; the full text stays in
                  # the stack or resource status reason.
                  reason=reason[:255], properties=properties,
                  # SQL NULL, not JSON null, so "is a plugin call" is an indexable test.
                  lifecycle=null() if lifecycle is None else lifecycle,
                  created_at=now)
    session.add(event)
    return event


STACK_TYPE = "OS::Heat::Stack"


def add_stack_event(session: Session, stack: Stack, now: Now) -> Event:
    """The stack-level event of the stack's current state: clients (``--wait``) find an
    operation's end by these, named after the stack and carrying its id."""
    return add_event(session, stack_id=stack.id, resource_name=stack.name,
                     physical_resource_id=stack.id, resource_type=STACK_TYPE,
                     action=stack.action, status=stack.status, reason=stack.status_reason,
                     now=now)


LIFECYCLE_TYPE = "Kiln::LifecyclePlugin"


def add_lifecycle_event(session: Session, stack: Stack, operation_id: str,
                        record: Mapping[str, Any], reason: str, now: Now) -> Event:
    """The stack event of one lifecycle plugin call (``record``, a call record as a dict)
    of operation ``operation_id``, whose id the stored record carries (``operation_id``):
    ``<ACTION>_IN_PROGRESS`` for a pre-op, the stack's final status for a post-op."""
    status = Status.IN_PROGRESS if record["phase"] == "pre" else (
        Status.FAILED if record.get("is_stack_failure") else Status.COMPLETE)
    return add_event(session, stack_id=stack.id, resource_name=stack.name,
                     physical_resource_id=stack.id, resource_type=LIFECYCLE_TYPE,
                     action=record["action"], status=status, reason=reason, now=now,
                     lifecycle={**record, "operation_id": operation_id})


def list_lifecycle_events(session: Session, stack_id: str) -> list[Event]:
    query = (select(Event).where(Event.stack_id == stack_id, Event.lifecycle.is_not(None))
             .order_by(Event.seq))
    return list(session.scalars(query))


def recent_lifecycle_events(session: Session, plugin: str, limit: int
                            ) -> list[tuple[Event, Stack]]:
    """The last ``limit`` calls of lifecycle plugin ``plugin`` recorded for any stack
    (soft-deleted ones too), newest first, each with its stack."""
    query = (select(Event, Stack).join(Stack, Stack.id == Event.stack_id)
             .where(Event.lifecycle.is_not(None),
                    Event.lifecycle["plugin"].as_string() == plugin)
             .order_by(Event.seq.desc()).limit(limit))
    return [(event, stack) for event, stack in session.execute(query)]


# Event sort keys. Events are numbered as they are written, so "event_time" orders by
# that number: the same order as the time, without ties between events of one instant.
EVENT_SORT_KEYS = {"event_time": Event.seq, "resource_type": Event.resource_type}


EVENT_FILTER_COLUMNS = {"resource_status": Event.status, "resource_action": Event.action,
                        "resource_name": Event.resource_name,
                        "resource_type": Event.resource_type}


def list_events(session: Session, stack_ids: Sequence[str], *, resource_name: str | None,
                filters: dict[str, list[str]], limit: int | None, marker: str | None,
                ascending: bool, sort_keys: Sequence[str] = ()) -> list[Event]:
    """One page of the events of a stack (and of the stacks nested in it, when
    ``stack_ids`` names them too): filters compare the stored columns; the order is
    ``sort_keys`` (known ones) then the event number; a marker naming no event of these
    stacks is ignored."""
    query = select(Event).where(Event.stack_id.in_(stack_ids))
    if resource_name is not None:
        query = query.where(Event.resource_name == resource_name)
    for key, values in filters.items():
        query = query.where(EVENT_FILTER_COLUMNS[key].in_(values))
    keys: list[Any] = []
    for name in dict.fromkeys(k for k in sort_keys if k in EVENT_SORT_KEYS):
        keys.append(EVENT_SORT_KEYS[name])
        if name == "event_time":
            break  # unique: any later key could never decide
    else:
        keys.append(Event.seq)
    if marker:
        anchor = session.scalars(
            select(Event).where(Event.id == marker, Event.stack_id.in_(stack_ids))).first()
        if anchor is not None:
            values = [getattr(anchor, k.key) for k in keys]
            query = query.where(keyset_after(keys, values, not ascending))
    query = query.order_by(*(k.asc() if ascending else k.desc() for k in keys))
    if limit is not None:
        query = query.limit(limit)
    return list(session.scalars(query))


def find_event(session: Session, stack_id: str, event_id: str) -> Event | None:
    return session.scalars(
        select(Event).where(Event.stack_id == stack_id, Event.id == event_id)).first()
