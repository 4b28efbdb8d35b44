"""Events: one per state a stack or resource takes, and per lifecycle plugin call; read
in filtered, ordered pages.

A transaction's events are written together, at its commit: :func:`add_event` keeps
the row in the session (``session.info``) and one ``INSERT`` with every row
(``executemany``) writes them once the ORM's own changes are flushed. An event row
inserted by the ORM is one statement each (its ``seq`` key is read back, and on SQLite
the ORM cannot batch an insert whose keys it reads back), and a round of 1,000 steps
writes 1,000 events. Rows are inserted in the order they were added, so ``seq`` (the
order the API reads and pages them in) is the order they were written in. A savepoint
rolled back drops the events added in it; a transaction rolled back drops them all. The
deliveries an event owes its stack's event sinks are written with it
(``engine.db.event_outbox``).
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import (
    JSON,
    bindparam,
    event,
    insert,
    select,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session, SessionTransaction

from engine.db import event_outbox
from engine.db.base import table
from engine.db.models import Event, Resource, Stack
from engine.db.paging import keyset_after
from engine.vocabulary import Status

Now = datetime.datetime
_PENDING = "kiln_pending_events"  # in session.info


def add_event(session: Session, *, stack_id: str, resource_name: str, physical_resource_id: str,
              resource_type: str, action: str, status: str, reason: str, now: Now,
              properties: Any = None, lifecycle: Any = None) -> str:
    """Add an event to the transaction's (written at its commit); its id."""
    event_id = str(uuid.uuid4())
    _pending(session).rows.append({
        "id": event_id, "stack_id": stack_id, "resource_name": resource_name,
        "physical_resource_id": physical_resource_id or "", "resource_type": resource_type,
        "action": action, "status": status,
        # NOTE: Heat's column is 255 characters too; the full text stays in the stack
        # or resource status reason.
        "reason": reason[:255], "properties": properties, "call": lifecycle,
        "created_at": now})
    return event_id


def add_resource_event(session: Session, stack: Stack, row: Resource, reason: str,
                       now: Now) -> str:
    """An event on the resource as it stands (its state, physical id and type)."""
    return add_event(session, stack_id=stack.id, resource_name=row.name,
                     physical_resource_id=row.physical_id or "", resource_type=row.type,
                     action=row.action, status=row.status, reason=reason, now=now)


def write_pending(session: Session) -> None:
    """Write the events added so far in this transaction (a read of events in the
    transaction that added them sees them; the commit writes the rest)."""
    pending: _Pending | None = session.info.get(_PENDING)
    if pending is None or pending.written == len(pending.rows):
        return
    session.flush()  # the rows they name (a new stack) first
    rows = pending.rows[pending.written:]
    session.execute(_INSERT, rows)
    # What they owe their stacks' event sinks, in the same transaction: an event is
    # never committed without its deliveries, nor they without it.
    event_outbox.add_deliveries(session, rows)
    pending.written = len(pending.rows)


# SQL NULL, not JSON null, for an event that is no plugin call, so "is a plugin call" is
# an indexable test; an executemany's rows cannot carry null(), so the bound value's
# type says so (and the parameter needs a name of its own: a column's is reserved).
_CALL = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
# The table's, not the entity's: an ORM insert of many rows would go through the ORM's
# bulk path, which this needs none of.
_INSERT = insert(table(Event)).values(lifecycle=bindparam("call", type_=_CALL))


@dataclasses.dataclass
class _Pending:
    """A transaction's events: every row added (in order), how many of them are written,
    and where each open savepoint began (rows added, rows written)."""

    rows: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    written: int = 0
    savepoints: weakref.WeakKeyDictionary[SessionTransaction, tuple[int, int]] = (
        dataclasses.field(default_factory=weakref.WeakKeyDictionary))


def _pending(session: Session) -> _Pending:
    pending: _Pending | None = session.info.get(_PENDING)
    if pending is None:
        pending = session.info[_PENDING] = _Pending()
    return pending


# Listened for on every session (the class): the rows are added by this module only, so
# any session that holds some has these hooks.

@event.listens_for(Session, "after_transaction_create")
def _savepoint_begun(session: Session, transaction: SessionTransaction) -> None:
    if transaction.nested:
        pending = _pending(session)
        pending.savepoints[transaction] = (len(pending.rows), pending.written)


@event.listens_for(Session, "before_commit")
def _write_at_commit(session: Session) -> None:
    if session.in_nested_transaction():
        return  # a savepoint's release: its events are the enclosing transaction's
    write_pending(session)


@event.listens_for(Session, "after_commit")
def _committed(session: Session) -> None:
    if not session.in_nested_transaction():
        session.info.pop(_PENDING, None)


@event.listens_for(Session, "after_soft_rollback")
def _rolled_back(session: Session, previous: SessionTransaction) -> None:
    pending: _Pending | None = session.info.get(_PENDING)
    if pending is None:
        return
    if not previous.nested:
        session.info.pop(_PENDING, None)
        return
    begun = pending.savepoints.pop(previous, None)
    if begun is not None:
        added, written = begun
        # Rows written inside the savepoint are gone with it: written again at the next
        # write; rows added inside it are dropped.
        del pending.rows[added:]
        pending.written = min(pending.written, written)


STACK_TYPE = "OS::Heat::Stack"


def add_stack_event(session: Session, stack: Stack, now: Now) -> str:
    """The stack-level event of the stack's current state: clients (``--wait``) find an
    operation's end by these, named after the stack and carrying its id."""
    return add_event(session, stack_id=stack.id, resource_name=stack.name,
                     physical_resource_id=stack.id, resource_type=STACK_TYPE,
                     action=stack.action, status=stack.status, reason=stack.status_reason,
                     now=now)


LIFECYCLE_TYPE = "Kiln::LifecyclePlugin"


def add_lifecycle_event(session: Session, stack: Stack, operation_id: str,
                        record: Mapping[str, Any], reason: str, now: Now) -> str:
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
    write_pending(session)
    query = (select(Event).where(Event.stack_id == stack_id, Event.lifecycle.is_not(None))
             .order_by(Event.seq))
    return list(session.scalars(query))


def recent_lifecycle_events(session: Session, plugin: str, limit: int
                            ) -> list[tuple[Event, Stack]]:
    """The last ``limit`` calls of lifecycle plugin ``plugin`` recorded for any stack
    (soft-deleted ones too), newest first, each with its stack."""
    write_pending(session)
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
    write_pending(session)
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
    write_pending(session)
    return session.scalars(
        select(Event).where(Event.stack_id == stack_id, Event.id == event_id)).first()
