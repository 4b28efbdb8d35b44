"""engine.db.steps: a plan written as step rows, steps closed under their lease, what
waited on them released, and the operation's count of open steps kept with them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import event, func, select

from engine.db import steps
from engine.db.models import Operation, Step, StepDependency
from engine.db.session import Database
from engine.vocabulary import Action, OperationState, StepState
from tests.unit.db.conftest import add_operation, add_stack, later

C = Action.CREATE
# a and b need nothing; c needs a; d needs a and b.
DIAMOND: dict[steps.StepKey, list[steps.StepKey]] = {
    ("a", C): [], ("b", C): [], ("c", C): [("a", C)], ("d", C): [("a", C), ("b", C)]}


def planned(db: Database, tenant_id: str,
            requires: Mapping[steps.StepKey, Sequence[steps.StepKey]] = DIAMOND,
            types: Mapping[str, str] | None = None) -> str:
    """A RUNNING operation with ``requires`` written as its steps: its id."""
    with db.transaction() as session:
        operation = add_operation(session, add_stack(session, tenant_id),
                                  state=OperationState.RUNNING)
        steps.add_steps(session, operation, requires, types)
        return operation.id


def by_name(db: Database, operation_id: str) -> dict[str, Step]:
    with db.read() as session:
        return {step.resource_name: step for step in session.scalars(
            select(Step).where(Step.operation_id == operation_id))}


def operation(db: Database, operation_id: str) -> Operation:
    with db.read() as session:
        found = session.get(Operation, operation_id)
        assert found is not None
        return found


def run(db: Database, operation_id: str, *names: str, owner: str = "w1") -> None:
    """Put the named steps under ``owner``'s lease, as a claim does."""
    with db.transaction() as session:
        for step in session.scalars(select(Step).where(Step.operation_id == operation_id,
                                                       Step.resource_name.in_(names))):
            step.state, step.lease_owner, step.lease_expires_at = StepState.RUNNING, owner, \
                later(30)


def step_row(db: Database, operation_id: str, name: str) -> Step:
    return by_name(db, operation_id)[name]


def complete(db: Database, operation_id: str, name: str, owner: str = "w1") -> bool:
    with db.transaction() as session:
        step = session.scalars(select(Step).where(Step.operation_id == operation_id,
                                                  Step.resource_name == name)).one()
        return steps.complete_step(session, step, owner, later(5))


def fail(db: Database, operation_id: str, name: str, reason: str, owner: str = "w1") -> bool:
    with db.transaction() as session:
        step = session.scalars(select(Step).where(Step.operation_id == operation_id,
                                                  Step.resource_name == name)).one()
        return steps.fail_step(session, step, owner, later(5), reason) is not None


def states(db: Database, operation_id: str) -> dict[str, tuple[str, int]]:
    return {name: (step.state, step.prerequisites_left)
            for name, step in by_name(db, operation_id).items()}


# --- writing a plan -------------------------------------------------------------------------


def test_a_plan_is_written_ready_or_waiting_with_its_prerequisites(
        db: Database, tenant_id: str) -> None:
    operation_id = planned(db, tenant_id, types={"a": "T::A"})

    assert states(db, operation_id) == {
        "a": (StepState.READY, 0), "b": (StepState.READY, 0), "c": (StepState.WAITING, 1),
        "d": (StepState.WAITING, 2)}
    rows = by_name(db, operation_id)
    assert rows["a"].resource_type == "T::A" and rows["b"].resource_type is None
    assert {row.action for row in rows.values()} == {C}
    with db.read() as session:
        edges = {(step, prerequisite) for step, prerequisite in session.execute(
            select(StepDependency.step_id, StepDependency.prerequisite_id))}
    ids = {name: row.id for name, row in rows.items()}
    assert edges == {(ids["c"], ids["a"]), (ids["d"], ids["a"]), (ids["d"], ids["b"])}
    assert operation(db, operation_id).open_steps == 4


def test_a_plan_is_written_in_three_statements_whatever_its_size(
        db: Database, tenant_id: str) -> None:
    chain = {(f"r{n}", C): [(f"r{n - 1}", C)] if n else [] for n in range(300)}
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement.split()[0])

    with db.transaction() as session:
        operation = add_operation(session, add_stack(session, tenant_id),
                                  state=OperationState.RUNNING)
        event.listen(db.engine, "before_cursor_execute", record)
        try:
            steps.add_steps(session, operation, chain)
        finally:
            event.remove(db.engine, "before_cursor_execute", record)

    # The steps, their ids read back, their edges.
    assert sent == ["INSERT", "SELECT", "INSERT"]
    assert states(db, operation.id)["r0"] == (StepState.READY, 0)
    assert states(db, operation.id)["r299"] == (StepState.WAITING, 1)
    with db.read() as session:
        assert session.scalar(select(func.count()).select_from(StepDependency)) == 299


def test_writing_a_plan_wakes_workers_when_it_commits(db: Database, tenant_id: str) -> None:
    db.work.wait(0)
    planned(db, tenant_id)
    assert db.work.wait(0)


def test_load_steps_reads_the_steps_named(db: Database, tenant_id: str) -> None:
    rows = by_name(db, planned(db, tenant_id))
    with db.read() as session:
        loaded = steps.load_steps(session, [rows["a"].id, rows["d"].id])
    assert sorted(step.resource_name for step in loaded) == ["a", "d"]


# --- progress -------------------------------------------------------------------------------


def test_progress_is_saved_and_only_a_start_resets_the_count_of_failed_tries(
        db: Database, tenant_id: str) -> None:
    operation_id = planned(db, tenant_id)
    run(db, operation_id, "a")
    step_id = step_row(db, operation_id, "a").id
    with db.transaction() as session:
        session.get_one(Step, step_id).failures = 2

    with db.transaction() as session:
        assert steps.save_progress_many(session, "w1", [
            steps.Progress(step_id, {"look": 1}, later(10), started=False)]) == {step_id}
    row = step_row(db, operation_id, "a")
    assert (row.token, row.started, row.next_poll_at, row.failures) == (
        {"look": 1}, True, later(10), 2)

    with db.transaction() as session:
        assert steps.save_progress_many(session, "w1", [
            steps.Progress(step_id, {"look": 2}, later(20), started=True)]) == {step_id}
    assert step_row(db, operation_id, "a").failures == 0


def test_progress_is_not_saved_by_a_worker_that_lost_the_lease(
        db: Database, tenant_id: str) -> None:
    operation_id = planned(db, tenant_id)
    run(db, operation_id, "a", owner="w2")
    run(db, operation_id, "b")
    ids = {name: step_row(db, operation_id, name).id for name in ("a", "b")}

    with db.transaction() as session:
        assert steps.save_progress_many(session, "w1", [
            steps.Progress(ids["a"], {"x": 1}, later(10), started=True),
            steps.Progress(ids["b"], {"x": 2}, later(10), started=False)]) == {ids["b"]}
    assert step_row(db, operation_id, "a").token is None
    assert step_row(db, operation_id, "b").token == {"x": 2}


# --- completing -----------------------------------------------------------------------------


def test_completing_a_step_closes_it_and_releases_what_waited_only_on_it(
        db: Database, tenant_id: str) -> None:
    operation_id = planned(db, tenant_id)
    run(db, operation_id, "a")
    db.work.wait(0)

    assert complete(db, operation_id, "a")

    assert states(db, operation_id) == {
        "a": (StepState.COMPLETE, 0), "b": (StepState.READY, 0), "c": (StepState.READY, 0),
        "d": (StepState.WAITING, 1)}
    row = step_row(db, operation_id, "a")
    assert (row.lease_owner, row.lease_expires_at, row.finished_at) == (None, None, later(5))
    assert operation(db, operation_id).open_steps == 3
    assert db.work.wait(0), "a released step wakes the workers"


def test_a_step_whose_lease_was_lost_is_not_completed(db: Database, tenant_id: str) -> None:
    operation_id = planned(db, tenant_id)
    run(db, operation_id, "a", owner="w2")

    assert not complete(db, operation_id, "a", owner="w1")

    assert step_row(db, operation_id, "a").state == StepState.RUNNING
    assert step_row(db, operation_id, "c").state == StepState.WAITING
    assert operation(db, operation_id).open_steps == 4


def test_completing_the_last_open_step_hands_the_operation_to_its_finisher(
        db: Database, tenant_id: str) -> None:
    operation_id = planned(db, tenant_id, {("a", C): [], ("b", C): []})
    run(db, operation_id, "a", "b")

    assert complete(db, operation_id, "a")
    assert operation(db, operation_id).state == OperationState.RUNNING
    assert complete(db, operation_id, "b")
    found = operation(db, operation_id)
    assert (found.state, found.open_steps) == (OperationState.FINISHING, 0)


def test_many_steps_complete_together_and_release_by_how_many_closed(
        db: Database, tenant_id: str) -> None:
    operation_id = planned(db, tenant_id)
    run(db, operation_id, "a", "b")
    rows = by_name(db, operation_id)

    with db.transaction() as session:
        closed, ready = steps.complete_steps(session, operation_id,
                                             [rows["a"].id, rows["b"].id, rows["c"].id],
                                             "w1", later(5))

    assert closed == {rows["a"].id, rows["b"].id}, "c was never running"
    assert ready == {rows["c"].id, rows["d"].id}, "c waited on a; d on a and b"
    assert states(db, operation_id) == {
        "a": (StepState.COMPLETE, 0), "b": (StepState.COMPLETE, 0),
        "c": (StepState.READY, 0), "d": (StepState.READY, 0)}
    assert operation(db, operation_id).open_steps == 2


def test_completing_steps_no_longer_ours_changes_nothing(db: Database, tenant_id: str) -> None:
    operation_id = planned(db, tenant_id)
    run(db, operation_id, "a", owner="w2")
    rows = by_name(db, operation_id)

    with db.transaction() as session:
        assert steps.complete_steps(session, operation_id, [rows["a"].id], "w1",
                                    later(5)) == (set(), set())
    assert states(db, operation_id)["a"] == (StepState.RUNNING, 0)
    assert operation(db, operation_id).open_steps == 4


# --- failing and cancelling -----------------------------------------------------------------


def test_a_failed_step_cancels_the_steps_not_started_and_keeps_the_first_reason(
        db: Database, tenant_id: str) -> None:
    operation_id = planned(db, tenant_id)
    run(db, operation_id, "a", "b")

    assert fail(db, operation_id, "a", "boom")

    assert states(db, operation_id) == {
        "a": (StepState.FAILED, 0), "b": (StepState.RUNNING, 0),
        "c": (StepState.CANCELLED, 1), "d": (StepState.CANCELLED, 2)}
    assert step_row(db, operation_id, "a").failure_reason == "boom"
    assert step_row(db, operation_id, "c").finished_at == later(5)
    found = operation(db, operation_id)
    assert (found.open_steps, found.failure_reason, found.state) == (
        1, "boom", OperationState.RUNNING)

    assert fail(db, operation_id, "b", "later")
    found = operation(db, operation_id)
    assert (found.open_steps, found.failure_reason, found.state) == (
        0, "boom", OperationState.FINISHING)


def test_a_step_whose_lease_was_lost_is_not_failed(db: Database, tenant_id: str) -> None:
    operation_id = planned(db, tenant_id)
    run(db, operation_id, "a", owner="w2")

    assert not fail(db, operation_id, "a", "boom", owner="w1")

    assert states(db, operation_id)["c"] == (StepState.WAITING, 1)
    assert operation(db, operation_id).failure_reason is None


def test_cancelling_closes_every_open_step_and_names_those_mid_action(
        db: Database, tenant_id: str) -> None:
    operation_id = planned(db, tenant_id)
    run(db, operation_id, "a")
    assert complete(db, operation_id, "a")
    run(db, operation_id, "b")

    with db.transaction() as session:
        found = session.get_one(Operation, operation_id)
        assert steps.cancel_open_steps(session, found, later(9)) == ["b"]

    assert {name: state for name, (state, _) in states(db, operation_id).items()} == {
        "a": StepState.COMPLETE, "b": StepState.CANCELLED, "c": StepState.CANCELLED,
        "d": StepState.CANCELLED}
    row = step_row(db, operation_id, "b")
    assert (row.lease_owner, row.finished_at) == (None, later(9))
    assert operation(db, operation_id).open_steps == 0


def test_an_empty_plan_leaves_no_step_open(db: Database, tenant_id: str) -> None:
    operation_id = planned(db, tenant_id, {})

    assert by_name(db, operation_id) == {}
    assert operation(db, operation_id).open_steps == 0
