"""engine.db.event_rows on SQLite: an event's reason cut to 255 characters, plugin calls
marked and naming their operation, events filtered, ordered and paged, and a
transaction's events written together at its commit."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from sqlalchemy import event, select
from sqlalchemy.orm import Session

from engine.db import event_rows
from engine.db.models import Event, Stack
from engine.db.session import Database
from engine.vocabulary import Action, Status
from tests.unit.db.conftest import (
    NOW,
    add_operation,
    add_stack,
)


def add_events(db: Database, stack: Stack, *rows: tuple[str, str, str]) -> list[str]:
    """(resource name, action, status) each: the events' ids, in order."""
    with db.transaction() as session:
        return [event_rows.add_event(session, stack_id=stack.id, resource_name=name,
                                  physical_resource_id="", resource_type=f"T::{name}",
                                  action=action, status=status, reason="", now=NOW)
                for name, action, status in rows]


def test_an_event_keeps_255_characters_of_its_reason_and_marks_plugin_calls(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        event_rows.add_event(session, stack_id=stack.id, resource_name="r",
                          physical_resource_id="", resource_type="T", action=Action.CREATE,
                          status=Status.FAILED, reason="x" * 300, now=NOW)
        event_rows.add_event(session, stack_id=stack.id, resource_name=stack.name,
                          physical_resource_id=stack.id, resource_type=event_rows.STACK_TYPE,
                          action=Action.CREATE, status=Status.IN_PROGRESS, reason="",
                          now=NOW, lifecycle={"plugin": "quota"})

    with db.read() as session:
        first, call = session.scalars(select(Event).order_by(Event.seq))
        assert (first.reason, first.lifecycle) == ("x" * 255, None)
        assert [e.id for e in event_rows.list_lifecycle_events(session, stack.id)] == [call.id]


def test_a_plugin_calls_event_names_its_operation(db: Database, tenant_id: str) -> None:
    record = {"plugin": "quota", "phase": "post", "action": Action.UPDATE,
              "verdict": "done", "is_stack_failure": True}
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        operation = add_operation(session, stack, Action.UPDATE)
        event_rows.add_lifecycle_event(session, stack, operation.id, record, "why", NOW)

    with db.read() as session:
        [event] = event_rows.list_lifecycle_events(session, stack.id)
        assert event.lifecycle == {**record, "operation_id": operation.id}
        assert (event.resource_type, event.action, event.status, event.reason) == (
            event_rows.LIFECYCLE_TYPE, Action.UPDATE, Status.FAILED, "why")
        assert [found.id for found, _stack in event_rows.recent_lifecycle_events(
            session, "quota", 5)] == [event.id]


def test_events_are_filtered_ordered_and_paged(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack, child = add_stack(session, tenant_id), add_stack(session, tenant_id)
    ids = add_events(db, stack, ("b", Action.CREATE, Status.IN_PROGRESS),
                     ("a", Action.CREATE, Status.IN_PROGRESS),
                     ("b", Action.CREATE, Status.COMPLETE))
    [nested] = add_events(db, child, ("n", Action.CREATE, Status.COMPLETE))

    def events(stack_ids: list[str] | None = None, **options: Any) -> list[str]:
        arguments: dict[str, Any] = {"resource_name": None, "filters": {}, "limit": None,
                                     "marker": None, "ascending": True}
        with db.read() as session:
            return [event.id for event in event_rows.list_events(
                session, stack_ids or [stack.id], **{**arguments, **options})]

    assert events() == ids
    assert events(ascending=False) == ids[::-1]
    assert events([stack.id, child.id]) == [*ids, nested]
    assert events(resource_name="b") == [ids[0], ids[2]]
    assert events(filters={"resource_status": [Status.COMPLETE]}) == [ids[2]]
    assert events(sort_keys=["resource_type"]) == [ids[1], ids[0], ids[2]]
    assert events(limit=1, marker=ids[0]) == [ids[1]]
    assert events(marker=nested) == ids, "a marker of another stack's event is ignored"
    with db.read() as session:
        found = event_rows.find_event(session, stack.id, ids[1])
        assert found is not None and found.resource_name == "a"
        assert event_rows.find_event(session, child.id, ids[1]) is None


@contextlib.contextmanager
def event_inserts(db: Database) -> Iterator[list[str]]:
    """The INSERTs into events sent meanwhile (an executemany is one)."""
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.startswith("INSERT INTO events"):
            sent.append(statement)

    event.listen(db.engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(db.engine, "before_cursor_execute", record)


def names(session: Session, stack: Stack) -> list[str]:
    """The resource names of the stack's events, in their order."""
    return [row.resource_name for row in event_rows.list_events(
        session, [stack.id], resource_name=None, filters={}, limit=None, marker=None,
        ascending=True)]


def add_named(session: Session, stack: Stack, name: str) -> str:
    return event_rows.add_event(session, stack_id=stack.id, resource_name=name,
                                physical_resource_id="", resource_type="T",
                                action=Action.CREATE, status=Status.COMPLETE, reason="",
                                now=NOW)


def test_a_transactions_events_are_written_at_its_commit_in_one_statement_in_order(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)

    with event_inserts(db) as sent:
        ids = add_events(db, stack, *((f"r{n}", Action.CREATE, Status.COMPLETE)
                                      for n in range(50)))

    assert len(sent) == 1
    with db.read() as session:
        assert [row.id for row in session.scalars(
            select(Event).where(Event.stack_id == stack.id).order_by(Event.seq))] == ids


def test_a_savepoint_rolled_back_drops_the_events_added_in_it(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        add_named(session, stack, "before")
        with contextlib.suppress(RuntimeError), session.begin_nested():
            add_named(session, stack, "inside")
            # A read writes what is pending, "before" too: undone with the savepoint,
            # and written again.
            assert names(session, stack) == ["before", "inside"]
            raise RuntimeError
        add_named(session, stack, "after")
        with session.begin_nested():
            add_named(session, stack, "released")

    with db.read() as session:
        assert names(session, stack) == ["before", "after", "released"]


def test_a_transaction_rolled_back_writes_none_of_its_events(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
    with contextlib.suppress(RuntimeError), db.transaction() as session:
        add_named(session, stack, "undone")
        raise RuntimeError

    add_events(db, stack, ("kept", Action.CREATE, Status.COMPLETE))

    with db.read() as session:
        assert names(session, stack) == ["kept"]
