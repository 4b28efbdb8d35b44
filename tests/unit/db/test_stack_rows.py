"""engine.db.stack_rows on SQLite: stack lookups, live stacks counted, busy stacks, and a
new stack or operation inserted or refused."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from engine.db import event_rows, stack_rows
from engine.db.models import Event, Operation, Stack
from engine.db.session import Database
from engine.errors import ActionInProgress, EntityNotFound, StackExists
from engine.vocabulary import Action, OperationState, Status
from tests.unit.db.conftest import (
    NOW,
    TEMPLATE,
    add_operation,
    add_stack,
    add_tenant,
    later,
)


def test_stacks_are_found_by_id_deleted_or_not_and_by_name_live_only(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        other = add_tenant(session).id
        gone = add_stack(session, tenant_id, "s", deleted_at=NOW)
        live = add_stack(session, tenant_id, "s", created_at=later(1))

    with db.read() as session:
        assert stack_rows.find_stack_by_id(session, tenant_id, gone.id) == ("s", gone.id)
        assert stack_rows.find_stack_by_id(session, other, gone.id) is None
        assert stack_rows.find_live_stack_by_name(session, tenant_id, "s") == ("s", live.id)
        assert stack_rows.get_stack(session, tenant_id, "s", live.id).id == live.id
        with pytest.raises(EntityNotFound):
            stack_rows.get_stack(session, tenant_id, "other-name", live.id)
        assert stack_rows.load_stack(session, live.id).template == TEMPLATE
        with pytest.raises(EntityNotFound):
            stack_rows.load_stack(session, "no-such-id")


def test_live_stacks_are_counted_without_nested_or_deleted_ones(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        top = add_stack(session, tenant_id)
        add_stack(session, tenant_id, owner_id=top.id, parent_resource="r")
        add_stack(session, tenant_id, deleted_at=NOW)
        add_stack(session, add_tenant(session).id)

    with db.read() as session:
        assert stack_rows.count_live_stacks(session, tenant_id) == 1


def test_a_stack_is_busy_while_an_operation_is_unfinished(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        add_operation(session, stack, state=OperationState.COMPLETE, finished_at=NOW)
    with db.read() as session:
        assert not stack_rows.is_busy(session, stack.id)
        assert stack_rows.unfinished_operation(session, stack.id) is None

    with db.transaction() as session:
        running = add_operation(session, stack, state=OperationState.RUNNING)
    with db.read() as session:
        assert stack_rows.is_busy(session, stack.id)
        found = stack_rows.unfinished_operation(session, stack.id)
        assert found is not None and found.id == running.id
    with db.transaction() as session:
        locked, operation = stack_rows.lock_stack(session, tenant_id, stack.name, stack.id)
        assert (locked.id, operation and operation.id) == (stack.id, running.id)


def test_a_new_stack_comes_with_its_operation_and_its_first_event(
        db: Database, tenant_id: str) -> None:
    db.work.wait(0)
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, "s", action=Action.CREATE,
                          status=Status.IN_PROGRESS, status_reason="Stack CREATE started")
    with db.transaction() as session:
        taken = Stack(**{column: getattr(stack, column) for column in (
            "tenant_id", "name", "action", "status", "template", "parameters", "environment",
            "files", "tags", "created_at")}, id="another-id")
        with pytest.raises(StackExists):
            stack_rows.add_stack_with_operation(session, taken, Operation(), NOW)

    fresh = Stack(id="fresh-id", tenant_id=tenant_id, name="fresh", action=Action.CREATE,
                  status=Status.IN_PROGRESS, status_reason="Stack CREATE started",
                  template=TEMPLATE, parameters={}, environment={}, files={}, tags=[],
                  created_at=NOW)
    with db.transaction() as session:
        stack_rows.add_stack_with_operation(session, fresh, Operation(
            id="op-id", stack_id="fresh-id", action=Action.CREATE,
            state=OperationState.PENDING, created_at=NOW, deadline_at=later(60)), NOW)

    assert db.work.wait(0)
    with db.read() as session:
        [event] = session.scalars(select(Event).where(Event.stack_id == "fresh-id"))
        assert stack_rows.unfinished_operation(session, "fresh-id") is not None
    assert (event.resource_name, event.physical_resource_id, event.resource_type,
            event.action, event.status, event.reason) == (
        "fresh", "fresh-id", event_rows.STACK_TYPE, Action.CREATE, Status.IN_PROGRESS,
        "Stack CREATE started")


def test_a_second_unfinished_operation_is_action_in_progress(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, "busy", action=Action.UPDATE,
                          status=Status.IN_PROGRESS)
        add_operation(session, stack, action=Action.UPDATE)

    with db.transaction() as session:
        stack = session.get_one(Stack, stack.id)
        with pytest.raises(ActionInProgress, match="busy"):
            stack_rows.add_operation(session, stack, Operation(
                id="second", stack_id=stack.id, action=Action.DELETE,
                state=OperationState.PENDING, created_at=NOW, deadline_at=later(60)))
        # The savepoint rolled back alone: the transaction goes on.
        assert stack_rows.is_busy(session, stack.id)
