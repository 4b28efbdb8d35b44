"""engine.db.transitions: each named transition of a stack, an operation or a resource,
checked on the rows it writes and the events it adds."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.db import event_rows, steps, transitions
from engine.db.models import Operation, OperationContext, Resource, Stack, Step
from engine.db.session import Database
from engine.errors import ActionInProgress, StackExists
from engine.vocabulary import Action, CancelReason, OperationState, Status, StepState
from tests.unit.db.conftest import NOW, add_operation, add_resource, add_stack, later

CONTEXT: OperationContext = {"tenant_id": "t", "token_tenant_id": "t", "role": "member",
                             "request_id": "req-1", "username": "u"}
DEFINITION = {"template": {"resources": {}}, "parameters": {}, "environment": {},
              "files": {}}
NEW_DEFINITION = {"template": {"resources": {"r": {"type": "OS::Heat::None"}}},
                  "parameters": {"p": 1}, "environment": {}, "files": {}}


def events(session: Session, stack: Stack) -> list[tuple[str, str, str, str]]:
    """(resource name, action, status, reason) of the stack's events, oldest first; the
    stack's own are named "stack"."""
    return [("stack" if event.resource_name == stack.name else event.resource_name,
             event.action, event.status, event.reason)
            for event in event_rows.list_events(session, [stack.id], resource_name=None,
                                                filters={}, limit=None, marker=None,
                                                ascending=True)]


def operations(session: Session, stack: Stack) -> list[Operation]:
    return list(session.scalars(select(Operation).where(Operation.stack_id == stack.id)
                                .order_by(Operation.created_at, Operation.action)))


def running_steps(session: Session, operation: Operation, *running: str,
                  waiting: tuple[str, ...] = ()) -> None:
    """Steps for ``running`` (under a lease) and ``waiting`` resources of the operation."""
    steps.add_steps(session, operation, {
        **{(name, Action.CREATE): [] for name in running},
        **{(name, Action.CREATE): [(running[0], Action.CREATE)] for name in waiting}})
    for step in session.scalars(select(Step).where(Step.operation_id == operation.id,
                                                   Step.resource_name.in_(running))):
        step.state, step.lease_owner = StepState.RUNNING, "w1"


def step_states(session: Session, operation: Operation) -> dict[str, str]:
    return {step.resource_name: step.state for step in session.scalars(
        select(Step).where(Step.operation_id == operation.id))}


# --- resources --------------------------------------------------------------------------


def test_a_resource_s_state_is_written_with_its_event(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        row = add_resource(session, stack, "r", physical_id="phys-1")

        transitions.set_resource_state(session, stack, row, Action.UPDATE, Status.FAILED,
                                       "broken", later(5))

        assert (row.action, row.status, row.status_reason, row.updated_at) == (
            Action.UPDATE, Status.FAILED, "broken", later(5))
        [event] = event_rows.list_events(session, [stack.id], resource_name=None, filters={},
                                         limit=None, marker=None, ascending=True)
        assert (event.resource_name, event.physical_resource_id, event.resource_type,
                event.action, event.status, event.reason) == (
            "r", "phys-1", "OS::Heat::None", "UPDATE", "FAILED", "broken")


def test_many_resources_states_are_written_with_their_events_in_order(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        first, second = add_resource(session, stack, "b"), add_resource(session, stack, "a")

    with db.transaction() as session:
        transitions.set_resource_states(session, stack, [
            transitions.NewState(first.id, "b", "T::B", "phys-b", Action.CREATE,
                                 Status.COMPLETE, "done", {"data": {"k": 1}}),
            transitions.NewState(second.id, "a", "T::A", None, Action.DELETE,
                                 Status.COMPLETE, "gone", {})], later(5))

    with db.read() as session:
        rows = {row.name: row for row in session.scalars(select(Resource))}
        assert [(r.action, r.status, r.status_reason, r.physical_id, r.data, r.updated_at)
                for r in (rows["b"], rows["a"])] == [
            ("CREATE", "COMPLETE", "done", "phys-b", {"k": 1}, later(5)),
            ("DELETE", "COMPLETE", "gone", None, {}, later(5))]
        assert [(e.resource_name, e.physical_resource_id, e.resource_type, e.action,
                 e.reason) for e in event_rows.list_events(
                     session, [stack.id], resource_name=None, filters={}, limit=None,
                     marker=None, ascending=True)] == [
            ("b", "phys-b", "T::B", "CREATE", "done"), ("a", "", "T::A", "DELETE", "gone")]


def test_a_marked_resource_has_an_event_only_when_its_state_changes(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        row = add_resource(session, stack, "r")

        transitions.mark_resource(session, stack, row, Action.CHECK, Status.FAILED, "first",
                                  later(1))
        transitions.mark_resource(session, stack, row, Action.CHECK, Status.FAILED,
                                  "second", later(2))

        assert (row.action, row.status, row.status_reason, row.updated_at) == (
            "CHECK", "FAILED", "second", later(2))
        assert events(session, stack) == [("r", "CHECK", "FAILED", "first")]


# --- starting an operation --------------------------------------------------------------


def test_a_new_operation_is_pending_until_its_deadline(db: Database, tenant_id: str) -> None:
    operation = transitions.new_operation(CONTEXT, "stack-id", Action.UPDATE, NOW, 90,
                                          {"converge": True})

    assert (operation.stack_id, operation.action, operation.state, operation.attempt) == (
        "stack-id", "UPDATE", OperationState.PENDING, 0)
    assert (operation.created_at, operation.deadline_at) == (NOW, later(90))
    assert operation.context == CONTEXT and operation.context is not CONTEXT
    assert (operation.payload, operation.lifecycle) == ({"converge": True}, {})


def test_a_new_stack_is_stored_in_progress_with_its_operation_and_event(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = Stack(id="new-stack", tenant_id=tenant_id, name="new", template={},
                      parameters={}, environment={}, files={}, tags=[], created_at=NOW)
        operation = transitions.new_operation(CONTEXT, stack.id, Action.ADOPT, NOW, 60)

        transitions.begin_stack(session, stack, operation, "Stack ADOPT started", NOW)

        assert (stack.action, stack.status, stack.status_reason) == (
            "ADOPT", "IN_PROGRESS", "Stack ADOPT started")
        assert events(session, stack) == [
            ("stack", "ADOPT", "IN_PROGRESS", "Stack ADOPT started")]
        assert [op.id for op in operations(session, stack)] == [operation.id]


def test_a_new_stack_s_name_is_its_tenant_s_own(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        add_stack(session, tenant_id, name="taken")
        stack = Stack(id="new-stack", tenant_id=tenant_id, name="taken", template={},
                      parameters={}, environment={}, files={}, tags=[], created_at=NOW)

        with pytest.raises(StackExists):
            transitions.begin_stack(session, stack, transitions.new_operation(
                CONTEXT, stack.id, Action.CREATE, NOW, 60), "Stack CREATE started", NOW)


@pytest.mark.parametrize(("action", "shown", "touched"), [
    (Action.UPDATE, "UPDATE", True), (Action.DELETE, "DELETE", False),
    (Action.ABANDON, "DELETE", False)])
def test_beginning_shows_the_stack_in_progress_with_its_event(
        db: Database, tenant_id: str, action: Action, shown: str, touched: bool) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        operation = transitions.new_operation(CONTEXT, stack.id, action, later(5), 60)

        transitions.begin(session, stack, operation, f"Stack {action} started", later(5))

        assert (stack.action, stack.status, stack.status_reason) == (
            shown, "IN_PROGRESS", f"Stack {action} started")
        assert stack.updated_at == (later(5) if touched else None)
        assert events(session, stack) == [
            ("stack", shown, "IN_PROGRESS", f"Stack {action} started")]
        assert [op.id for op in operations(session, stack)] == [operation.id]


def test_beginning_on_a_busy_stack_is_refused(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        add_operation(session, stack)

        with pytest.raises(ActionInProgress):
            transitions.begin(session, stack, transitions.new_operation(
                CONTEXT, stack.id, Action.UPDATE, NOW, 60), "Stack UPDATE started", NOW)

        assert (stack.action, stack.status) == ("CREATE", "COMPLETE")
        assert events(session, stack) == []


def test_a_cancel_request_moves_the_deadline_and_says_who(db: Database,
                                                          tenant_id: str) -> None:
    with db.transaction() as session:
        operation = add_operation(session, add_stack(session, tenant_id),
                                  payload={"planned": True})

        transitions.request_cancel(operation, CancelReason.CANCEL_UPDATE, later(7))

        assert operation.payload == {"planned": True, "cancelled": "cancel_update"}
        assert operation.deadline_at == later(7)


@pytest.mark.parametrize(("payload", "by"), [
    (None, None), ({"planned": True}, None), ({"cancelled": ""}, None),
    ({"cancelled": "operator"}, CancelReason.OPERATOR),
    ({"cancelled": "delete", "then": {}}, CancelReason.DELETE)])
def test_who_cancelled_an_operation_is_read_from_its_payload(
        db: Database, tenant_id: str, payload: object, by: CancelReason | None) -> None:
    with db.transaction() as session:
        operation = add_operation(session, add_stack(session, tenant_id), payload=payload)

        assert transitions.cancelled_by(operation) == by


def test_a_delete_of_a_busy_stack_cancels_its_operation_and_follows_it(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, action=Action.UPDATE,
                          status=Status.IN_PROGRESS)
        running = add_operation(session, stack, Action.UPDATE, OperationState.RUNNING)

        transitions.cancel_then_delete(session, stack, running, CONTEXT, 120,
                                       "Stack DELETE started", later(3))

        assert running.payload == {"cancelled": "delete", "then": {
            "action": "DELETE", "context": CONTEXT, "timeout_seconds": 120}}
        assert running.deadline_at == later(3)
        assert (stack.action, stack.status, stack.status_reason) == (
            "DELETE", "IN_PROGRESS", "Stack DELETE started")
        assert events(session, stack) == [
            ("stack", "DELETE", "IN_PROGRESS", "Stack DELETE started")]


# --- a worker's phases ------------------------------------------------------------------


@pytest.mark.parametrize(("plan", "state"), [
    ({("a", Action.CREATE): []}, OperationState.RUNNING), ({}, OperationState.FINISHING)])
def test_steps_started_make_the_operation_running_and_planned(
        db: Database, tenant_id: str, plan: dict[steps.StepKey, list[steps.StepKey]],
        state: OperationState) -> None:
    with db.transaction() as session:
        operation = add_operation(session, add_stack(session, tenant_id),
                                  payload={"converge": True})

        transitions.start_steps(session, operation, plan, {})

        assert (operation.state, operation.open_steps) == (state, len(plan))
        assert operation.payload == {"converge": True, "planned": True}


def test_a_stopped_operation_is_finishing_with_its_reason(db: Database,
                                                          tenant_id: str) -> None:
    with db.transaction() as session:
        operation = add_operation(session, add_stack(session, tenant_id),
                                  state=OperationState.RUNNING)

        transitions.stop(operation, "Create timed out")

        assert (operation.state, operation.failure_reason) == (
            OperationState.FINISHING, "Create timed out")


def test_aborting_fails_the_resources_mid_action_and_cancels_every_open_step(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        operation = add_operation(session, stack, state=OperationState.RUNNING)
        mid = add_resource(session, stack, "mid", status=Status.IN_PROGRESS)
        later_one = add_resource(session, stack, "later", action=Action.INIT)
        running_steps(session, operation, "mid", waiting=("later",))

        transitions.abort_open_steps(session, operation, stack, "CREATE aborted", later(9),
                                     waiting_reason="waited")

        assert step_states(session, operation) == {"mid": "CANCELLED", "later": "CANCELLED"}
        assert operation.open_steps == 0
        assert (mid.action, mid.status, mid.status_reason, mid.updated_at) == (
            "CREATE", "FAILED", "CREATE aborted", later(9))
        assert (later_one.action, later_one.status) == ("INIT", "COMPLETE")
        assert events(session, stack) == [("mid", "CREATE", "FAILED", "CREATE aborted")]


def test_a_deleted_stack_keeps_its_row_without_resources_or_outputs(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, outputs=[{"output_key": "o"}])
        add_resource(session, stack, "r")

        transitions.mark_stack_deleted(session, stack, later(4))

        assert (stack.deleted_at, stack.outputs) == (later(4), None)
        assert session.scalars(select(Resource).where(Resource.stack_id == stack.id)
                               ).all() == []


@pytest.mark.parametrize(("status", "post_order", "state"), [
    (Status.COMPLETE, [], OperationState.COMPLETE),
    (Status.FAILED, [], OperationState.FAILED),
    (Status.FAILED, ["quota"], OperationState.NOTIFYING)])
def test_concluding_writes_the_stack_s_final_state_and_closes_the_operation(
        db: Database, tenant_id: str, status: Status, post_order: list[str],
        state: OperationState) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, action=Action.CREATE,
                          status=Status.IN_PROGRESS)
        operation = add_operation(session, stack, Action.CREATE, OperationState.FINISHING,
                                  lifecycle={"post_order": post_order})

        transitions.conclude(session, operation, stack, status, "the reason", later(2))

        assert (stack.action, stack.status, stack.status_reason) == (
            "CREATE", status, "the reason")
        assert events(session, stack) == [("stack", "CREATE", status, "the reason")]
        assert (operation.state, operation.finished_at) == (state, later(2))
        assert operation.lifecycle == {"post_order": post_order, "outcome": status}


def test_an_abandon_concludes_as_a_delete(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        operation = add_operation(session, stack, Action.ABANDON, OperationState.FINISHING)

        transitions.conclude(session, operation, stack, Status.COMPLETE, "done", later(2))

        assert (stack.action, stack.status) == ("DELETE", "COMPLETE")


def test_concluding_a_cancelled_operation_starts_the_delete_that_follows(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, action=Action.DELETE,
                          status=Status.IN_PROGRESS, status_reason="Stack DELETE started")
        operation = add_operation(session, stack, Action.UPDATE, OperationState.FINISHING,
                                  payload={"cancelled": "delete", "then": {
                                      "action": "DELETE", "context": CONTEXT,
                                      "timeout_seconds": 300}})

        transitions.conclude(session, operation, stack, Status.FAILED, "cancelled",
                             later(2))

        assert (stack.action, stack.status, stack.status_reason) == (
            "DELETE", "IN_PROGRESS", "Stack DELETE started")
        assert events(session, stack) == []
        follow_up = next(op for op in operations(session, stack) if op.id != operation.id)
        assert (follow_up.action, follow_up.state, follow_up.context) == (
            "DELETE", OperationState.PENDING, CONTEXT)
        assert follow_up.deadline_at == later(302)
        assert (operation.state, operation.finished_at) == (OperationState.FAILED, later(2))


@pytest.mark.parametrize(("action", "payload", "rollback"), [
    (Action.UPDATE, {"previous": DEFINITION, "target": NEW_DEFINITION, "planned": True},
     {"kind": "update", "target": DEFINITION, "previous": NEW_DEFINITION}),
    (Action.CREATE, {"planned": True}, {"kind": "create"})])
def test_a_rollback_is_queued_as_an_operation_of_its_own(
        db: Database, tenant_id: str, action: Action, payload: object,
        rollback: object) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, action=action, status=Status.FAILED)
        failed = add_operation(session, stack, action, OperationState.FINISHING,
                               payload=payload, context=CONTEXT, deadline_at=later(30),
                               finished_at=later(5))

        transitions.start_rollback(session, failed, stack, "Stack ROLLBACK started",
                                   later(5))

        queued = next(op for op in operations(session, stack) if op.id != failed.id)
        assert (queued.action, queued.state, queued.payload, queued.context) == (
            "ROLLBACK", OperationState.PENDING, rollback, CONTEXT)
        assert queued.deadline_at == later(5 + 60)  # at least a minute
        assert (stack.action, stack.status, stack.status_reason) == (
            "ROLLBACK", "IN_PROGRESS", "Stack ROLLBACK started")
        assert events(session, stack) == [
            ("stack", "ROLLBACK", "IN_PROGRESS", "Stack ROLLBACK started")]


def test_a_rollback_is_queued_when_the_failed_operation_has_no_context(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, action=Action.CREATE, status=Status.FAILED)
        failed = add_operation(session, stack, Action.CREATE, OperationState.FINISHING,
                               payload={"planned": True}, context=None,
                               finished_at=later(5))

        transitions.start_rollback(session, failed, stack, "Stack ROLLBACK started",
                                   later(5))

        queued = next(op for op in operations(session, stack) if op.id != failed.id)
        assert (queued.action, queued.context) == ("ROLLBACK", {})


@pytest.mark.parametrize(("outcome", "state"), [
    (Status.COMPLETE, OperationState.COMPLETE), (Status.FAILED, OperationState.FAILED)])
def test_settling_after_the_post_ops_takes_the_stack_s_outcome(
        db: Database, tenant_id: str, outcome: Status, state: OperationState) -> None:
    with db.transaction() as session:
        operation = add_operation(session, add_stack(session, tenant_id),
                                  state=OperationState.NOTIFYING,
                                  lifecycle={"outcome": outcome})

        transitions.settle(operation)

        assert operation.state == state


def test_giving_up_fails_the_resources_mid_action_and_the_stack(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, status=Status.IN_PROGRESS)
        operation = add_operation(session, stack, state=OperationState.RUNNING)
        add_resource(session, stack, "mid", status=Status.IN_PROGRESS)
        running_steps(session, operation, "mid")

        transitions.give_up(session, operation, stack, "CREATE aborted", "Kiln failed",
                            later(6), waiting_reason="waited")

        assert events(session, stack) == [("mid", "CREATE", "FAILED", "CREATE aborted"),
                                          ("stack", "CREATE", "FAILED", "Kiln failed")]
        assert (operation.state, operation.failure_reason, operation.finished_at) == (
            OperationState.FAILED, "Kiln failed", later(6))


def test_abandoning_ends_the_operation_and_fails_the_stack_alone(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, status=Status.IN_PROGRESS)
        operation = add_operation(session, stack, Action.ABANDON, OperationState.RUNNING)
        mid = add_resource(session, stack, "mid", status=Status.IN_PROGRESS)
        running_steps(session, operation, "mid")

        transitions.abandon(session, operation, "Kiln failed", later(6))

        assert step_states(session, operation) == {"mid": "CANCELLED"}
        assert mid.status == "IN_PROGRESS"  # the fewest writes
        assert (stack.action, stack.status, stack.status_reason) == (
            "DELETE", "FAILED", "Kiln failed")
        assert events(session, stack) == [("stack", "DELETE", "FAILED", "Kiln failed")]
        assert (operation.state, operation.failure_reason, operation.finished_at) == (
            OperationState.FAILED, "Kiln failed", later(6))


def test_abandoning_a_finished_operation_only_settles_it(db: Database,
                                                         tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        operation = add_operation(session, stack, state=OperationState.NOTIFYING,
                                  finished_at=later(1), lifecycle={"outcome": "COMPLETE"})

        transitions.abandon(session, operation, "Kiln failed", later(6))

        assert operation.state == OperationState.COMPLETE
        assert (stack.status, events(session, stack)) == ("COMPLETE", [])


# --- the operator's repairs -------------------------------------------------------------


def test_ending_an_operation_fails_it_and_the_resources_mid_action(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, status=Status.IN_PROGRESS)
        operation = add_operation(session, stack, state=OperationState.RUNNING,
                                  lease_owner="w1", lease_expires_at=later(30))
        mid = add_resource(session, stack, "mid", action=Action.UPDATE,
                           status=Status.IN_PROGRESS)
        done = add_resource(session, stack, "done")
        running_steps(session, operation, "mid")

        transitions.end_operation(session, stack, operation, "Reset by operator admin",
                                  later(8))

        assert step_states(session, operation) == {"mid": "CANCELLED"}
        assert (mid.action, mid.status, mid.status_reason) == (
            "UPDATE", "FAILED", "Reset by operator admin")
        assert done.status == "COMPLETE"
        assert events(session, stack) == [
            ("mid", "UPDATE", "FAILED", "Reset by operator admin")]
        assert (operation.state, operation.failure_reason, operation.finished_at,
                operation.updated_at) == (OperationState.FAILED, "Reset by operator admin",
                                          later(8), later(8))
        assert (operation.lease_owner, operation.lease_expires_at) == (None, None)
        assert stack.status == "IN_PROGRESS"  # the stack's state is reset_stack's


def test_a_reset_sets_the_stack_s_state_with_its_event(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, status=Status.IN_PROGRESS)

        transitions.reset_stack(session, stack, Action.UPDATE, Status.FAILED, "by hand",
                                later(3))

        assert (stack.action, stack.status, stack.status_reason, stack.updated_at) == (
            "UPDATE", "FAILED", "by hand", later(3))
        assert events(session, stack) == [("stack", "UPDATE", "FAILED", "by hand")]



def test_ending_an_operation_leaves_the_post_ops_it_owes_to_a_worker(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, status=Status.IN_PROGRESS)
        operation = add_operation(
            session, stack, state=OperationState.PENDING, lease_owner="w1",
            lease_expires_at=later(30), failures=2,
            lifecycle={"pre": [{"plugin": "quota"}, {"plugin": "placement"}]})

        transitions.end_operation(session, stack, operation, "Reset by operator admin",
                                  later(8), Status.COMPLETE)

        # A worker claims a NOTIFYING operation whose lease is free and calls them.
        assert (operation.state, operation.finished_at, operation.failures) == (
            OperationState.NOTIFYING, later(8), 0)
        assert (operation.lease_owner, operation.lease_expires_at) == (None, None)
        assert operation.lifecycle["post_order"] == ["placement", "quota"]
        assert operation.lifecycle["outcome"] == Status.COMPLETE


def test_the_post_ops_owed_are_those_ordered_less_those_called(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        before_order = add_operation(
            session, stack, lifecycle={"pre": [{"plugin": "a"}, {"plugin": "b"}]})
        assert transitions.owed_post_ops(before_order) == ["b", "a"]
        before_order.finished_at = later(1)  # one unfinished operation per stack

        ordered = add_operation(session, stack, lifecycle={
            "pre": [{"plugin": "a"}, {"plugin": "b"}], "post_order": ["b", "a"],
            "post": [{"plugin": "b"}]})
        assert transitions.owed_post_ops(ordered) == ["a"]
