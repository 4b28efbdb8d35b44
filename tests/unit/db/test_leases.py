"""engine.db.leases: which operations and steps a worker may claim, how long a claim is its
worker's (while the worker lives: neither fenced nor stopped), the ways a claim is handed
back (counted or not), and the workers' liveness: one row each, renewed by a heartbeat
that fences the workers whose liveness lapsed. (On PostgreSQL, with its own clock and
concurrent writers: tests/functional/db/test_leases_postgresql.py.)"""

from __future__ import annotations

import datetime

import pytest
from sqlalchemy import delete

from engine.db import leases
from engine.db.models import Operation, Step, Worker
from engine.db.session import Database
from engine.vocabulary import Action, OperationState, StepState
from tests.unit.db.conftest import NOW, add_operation, add_stack, later
from tests.unit.metric_deltas import Moved

LEASE = 2.0


@pytest.fixture(autouse=True)
def workers(db: Database) -> None:
    """w1 and w2, alive from NOW for a lease; w1 first."""
    register(db, "w1")
    register(db, "w2", later(0.001))


def register(db: Database, worker_id: str, now: datetime.datetime = NOW) -> leases.Renewal:
    with db.transaction() as session:
        return leases.register_worker(session, worker_id, "h", 1, now, LEASE)


def renew(db: Database, worker_id: str, now: datetime.datetime) -> leases.Renewal:
    with db.transaction() as session:
        return leases.renew_liveness(session, worker_id, now, LEASE)


def fenced_by(renewal: leases.Renewal) -> list[str]:
    return sorted(worker.id for worker in renewal.fenced)


def worker_row(db: Database, worker_id: str) -> Worker:
    with db.read() as session:
        return session.get_one(Worker, worker_id)


def claim_operations(db: Database, owner: str = "w1", now: datetime.datetime = NOW,
                     limit: int = 10) -> list[str]:
    with db.transaction() as session:
        return [operation.id for operation in
                leases.claim_operations(session, owner, now, limit)]


def operation_row(db: Database, operation_id: str) -> Operation:
    with db.read() as session:
        return session.get_one(Operation, operation_id)


def step_row(db: Database, step_id: int) -> Step:
    with db.read() as session:
        return session.get_one(Step, step_id)


def add_steps(db: Database, tenant_id: str, *rows: dict[str, object]) -> list[int]:
    """Steps of one operation, READY unless a row says otherwise: their ids, in order."""
    with db.transaction() as session:
        operation = add_operation(session, add_stack(session, tenant_id),
                                  state=OperationState.RUNNING)
        made = [Step(operation_id=operation.id, stack_id=operation.stack_id,
                     resource_name=f"r{i}", action=Action.CREATE, prerequisites_left=0,
                     **{"state": StepState.READY, **row})
                for i, row in enumerate(rows)]
        session.add_all(made)
        session.flush()
        return [step.id for step in made]


def claim_steps(db: Database, owner: str = "w1", now: datetime.datetime = NOW,
                limit: int = 10, **options: object) -> list[tuple[int, bool]]:
    with db.transaction() as session:
        return [(step.id, suspect) for step, suspect in
                leases.claim_steps(session, owner, now, limit, **options)]


# --- liveness -------------------------------------------------------------------------------


def test_a_registered_worker_is_alive_for_a_lease_and_each_renewal_extends_it(
        db: Database) -> None:
    row = worker_row(db, "w1")
    assert (row.started_at, row.heartbeat_at, row.alive_until, row.fenced_at) == (
        NOW, NOW, later(LEASE), None)

    assert renew(db, "w1", later(1.5)) == leases.Renewal(alive=True, fenced=[])

    row = worker_row(db, "w1")
    assert (row.heartbeat_at, row.alive_until) == (later(1.5), later(1.5 + LEASE))
    assert worker_row(db, "w2").alive_until == later(0.001 + LEASE), "one row renewed"


def test_a_worker_whose_liveness_lapsed_is_fenced_by_the_next_heartbeat_of_another(
        db: Database) -> None:
    renew(db, "w2", later(LEASE))
    assert worker_row(db, "w1").fenced_at is None, "not before its liveness has passed"

    renewal = renew(db, "w2", later(LEASE + 0.5))

    assert renewal.alive and fenced_by(renewal) == ["w1"]
    assert worker_row(db, "w1").fenced_at == later(LEASE + 0.5)
    assert db.work.wait(0), "a fence wakes the workers: what it held is free"
    assert fenced_by(renew(db, "w2", later(LEASE + 1))) == [], "fenced once"


def test_a_fenced_worker_never_renews_again(db: Database) -> None:
    renew(db, "w2", later(LEASE + 0.5))

    assert renew(db, "w1", later(LEASE + 0.6)) == leases.Renewal(alive=False, fenced=[])
    assert renew(db, "w1", later(LEASE + 0.7)).alive is False
    row = worker_row(db, "w1")
    assert (row.alive_until, row.heartbeat_at) == (later(LEASE), NOW), "nothing renewed"


def test_a_late_renewal_before_any_fence_keeps_the_worker(db: Database) -> None:
    # Past its liveness, but nobody fenced it meanwhile: nothing it held was taken, and
    # it fences w2, whose liveness lapsed too.
    renewal = renew(db, "w1", later(LEASE + 5))

    assert renewal.alive and fenced_by(renewal) == ["w2"]
    assert worker_row(db, "w1").fenced_at is None


def test_a_restarted_worker_fences_its_dead_predecessors_as_it_registers(
        db: Database) -> None:
    renewal = register(db, "w3", later(LEASE + 1))

    assert renewal.alive and fenced_by(renewal) == ["w1", "w2"]


def test_a_stopped_worker_is_never_fenced_and_cannot_renew(db: Database) -> None:
    with db.transaction() as session:
        leases.stop_worker(session, "w1", later(1))

    assert fenced_by(renew(db, "w2", later(LEASE + 0.5))) == []
    assert renew(db, "w1", later(LEASE + 0.6)).alive is False
    row = worker_row(db, "w1")
    assert (row.stopped_at, row.heartbeat_at, row.fenced_at) == (later(1), later(1), None)


def test_a_forgotten_worker_cannot_renew(db: Database) -> None:
    with db.transaction() as session:
        session.execute(delete(Worker).where(Worker.id == "w1"))

    assert renew(db, "w1", later(1)).alive is False


def test_alive_is_neither_stopped_nor_fenced_nor_past_its_liveness(db: Database) -> None:
    with db.read() as session:
        w1 = session.get_one(Worker, "w1")
    assert leases.is_alive(w1, later(LEASE))
    assert not leases.is_alive(w1, later(LEASE + 0.001))
    renew(db, "w2", later(LEASE + 0.5))
    assert not leases.is_alive(worker_row(db, "w1"), later(1))  # fenced


# --- operations -----------------------------------------------------------------------------


def test_a_pending_operation_is_claimed_for_as_long_as_its_worker_lives_and_counted(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        operation_id = add_operation(session, add_stack(session, tenant_id)).id

    assert claim_operations(db) == [operation_id]

    row = operation_row(db, operation_id)
    assert (row.lease_owner, row.lease_expires_at, row.attempt, row.failures) == (
        "w1", None, 1, 1)


def test_a_live_worker_keeps_an_operation_and_only_a_fence_frees_it(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        operation_id = add_operation(session, add_stack(session, tenant_id)).id
    claim_operations(db, "w1")

    assert claim_operations(db, "w2", later(3600)) == [], "a lapse alone frees nothing"
    renew(db, "w2", later(LEASE + 1))  # fences w1
    assert claim_operations(db, "w2", later(LEASE + 1)) == [operation_id]
    row = operation_row(db, operation_id)
    assert (row.lease_owner, row.attempt, row.failures) == ("w2", 2, 2)


def test_an_operation_of_a_stopped_or_forgotten_worker_is_free(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stopped = add_operation(session, add_stack(session, tenant_id, "a"),
                                lease_owner="w2").id
        forgotten = add_operation(session, add_stack(session, tenant_id, "b"),
                                  lease_owner="gone").id
        leases.stop_worker(session, "w2", later(1))

    assert set(claim_operations(db, "w1", later(1))) == {stopped, forgotten}


def test_which_states_are_claimed(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        ids = {state: add_operation(session, add_stack(session, tenant_id, state),
                                    state=state).id
               for state in OperationState}
        late = add_operation(session, add_stack(session, tenant_id, "late"),
                             state=OperationState.RUNNING, deadline_at=NOW).id

    claimed = set(claim_operations(db, now=later(1)))

    assert claimed == {ids[OperationState.PENDING], ids[OperationState.FINISHING],
                       ids[OperationState.NOTIFYING], late}, \
        "running ones only past their deadline, ended ones never"


def test_a_new_operation_waits_for_its_stacks_post_ops(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        notifying = add_operation(session, stack, state=OperationState.NOTIFYING,
                                  finished_at=NOW, lease_owner="w2").id
        waiting = add_operation(session, stack).id

    assert claim_operations(db) == []
    with db.transaction() as session:
        session.get_one(Operation, notifying).state = OperationState.COMPLETE
    assert claim_operations(db) == [waiting]


def test_operations_are_claimed_oldest_first_up_to_the_limit(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        newer = add_operation(session, add_stack(session, tenant_id, "a"),
                              created_at=later(2)).id
        older = add_operation(session, add_stack(session, tenant_id, "b"),
                              created_at=later(1)).id

    assert claim_operations(db, limit=1) == [older]
    assert claim_operations(db, limit=1) == [newer]


def test_a_completed_phase_releases_and_a_failed_one_backs_off_still_counted(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        first = add_operation(session, add_stack(session, tenant_id, "a")).id
        second = add_operation(session, add_stack(session, tenant_id, "b")).id
    claim_operations(db)

    with db.transaction() as session:
        leases.release_operation(session, session.get_one(Operation, first))
        leases.back_off_operation(session, session.get_one(Operation, second), later(60))

    released, backed_off = operation_row(db, first), operation_row(db, second)
    assert (released.lease_owner, released.lease_expires_at, released.failures) == (
        None, None, 0)
    assert (backed_off.lease_owner, backed_off.lease_expires_at, backed_off.failures) == (
        None, later(60), 1)
    assert claim_operations(db, now=later(59)) == [first]
    assert claim_operations(db, now=later(61)) == [second]


def test_operations_given_back_have_their_try_taken_back(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        ours = add_operation(session, add_stack(session, tenant_id, "a")).id
        theirs = add_operation(session, add_stack(session, tenant_id, "b")).id
    claim_operations(db, "w1", limit=1)
    claim_operations(db, "w2", limit=1)

    with db.transaction() as session:
        assert leases.give_back_operations(session, "w1", [ours, theirs], later(5)) == {ours}
        assert leases.give_back_operations(session, "w1", [], later(5)) == set()

    row = operation_row(db, ours)
    assert (row.lease_owner, row.lease_expires_at, row.failures, row.attempt) == (
        None, later(5), 0, 1), "nobody's from the given time, its try taken back"
    assert operation_row(db, theirs).failures == 1


def test_operations_a_bug_dropped_are_given_back_counted_for_a_while(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        ours = add_operation(session, add_stack(session, tenant_id, "a")).id
        theirs = add_operation(session, add_stack(session, tenant_id, "b")).id
    claim_operations(db, "w1", limit=1)
    claim_operations(db, "w2", limit=1)

    with db.transaction() as session:
        assert leases.abandon_operations(session, "w1", [ours, theirs], later(30)) == {ours}

    row = operation_row(db, ours)
    assert (row.lease_owner, row.lease_expires_at, row.failures) == (None, later(30), 1)
    assert claim_operations(db, "w2", later(29)) == []
    assert claim_operations(db, "w2", later(31)) == [ours]


def test_an_operation_whose_holder_was_fenced_is_counted_taken_over(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        died = add_operation(session, add_stack(session, tenant_id, "a")).id
        handed = add_operation(session, add_stack(session, tenant_id, "b")).id
    claim_operations(db, "w1")
    with db.transaction() as session:  # a graceful stop hands one over, its try taken back
        leases.give_back_operations(session, "w1", [handed], later(1))
    renew(db, "w2", later(LEASE + 1))  # fences w1
    moved = Moved()

    assert set(claim_operations(db, "w2", later(LEASE + 1))) == {died, handed}

    assert moved("kiln_lease_takeovers_total", kind="operation") == 1


# --- steps ----------------------------------------------------------------------------------


def test_a_ready_step_is_claimed_running_for_as_long_as_its_worker_lives_and_counted(
        db: Database, tenant_id: str) -> None:
    [step_id] = add_steps(db, tenant_id, {})

    assert claim_steps(db) == [(step_id, False)]

    row = step_row(db, step_id)
    assert (row.state, row.lease_owner, row.lease_expires_at, row.attempt, row.failures,
            row.started_at) == (StepState.RUNNING, "w1", None, 1, 1, NOW)


def test_a_running_step_is_claimed_again_only_once_its_holder_was_fenced(
        db: Database, tenant_id: str) -> None:
    [step_id] = add_steps(db, tenant_id, {})
    claim_steps(db, "w1")

    assert claim_steps(db, "w2", later(3600)) == []
    renew(db, "w2", later(LEASE + 1))  # fences w1
    assert claim_steps(db, "w2", later(LEASE + 1)) == [(step_id, True)]
    row = step_row(db, step_id)
    assert (row.lease_owner, row.attempt, row.failures, row.started_at) == ("w2", 2, 2, NOW)


def test_steps_not_ready_are_not_claimed(db: Database, tenant_id: str) -> None:
    add_steps(db, tenant_id, *({"state": state} for state in StepState
                               if state not in (StepState.READY, StepState.RUNNING)))
    add_steps(db, tenant_id, {"state": StepState.RUNNING, "lease_owner": "w2"})

    assert claim_steps(db) == []


def test_room_caps_the_steps_of_a_type(db: Database, tenant_id: str) -> None:
    ids = add_steps(db, tenant_id, {"resource_type": "T::Slow"}, {"resource_type": "T::Slow"},
                    {"resource_type": "T::Full"}, {})

    assert claim_steps(db, room={"T::Slow": 1, "T::Full": 0}) == [
        (ids[0], False), (ids[3], False)]
    assert claim_steps(db, room={"T::Slow": 1}) == [(ids[1], False), (ids[2], False)]


def test_suspects_that_died_less_than_alone_from_times_come_back_together(
        db: Database, tenant_id: str) -> None:
    ids = add_steps(db, tenant_id, {"failures": 1}, {"failures": 1}, {"failures": 3}, {})

    assert claim_steps(db, alone_from=2) == [(ids[0], True), (ids[1], True), (ids[3], False)]


def test_a_suspect_that_died_more_often_is_claimed_alone(db: Database, tenant_id: str) -> None:
    ids = add_steps(db, tenant_id, {"failures": 3}, {"failures": 1}, {"failures": 3}, {})

    assert claim_steps(db, alone_from=2) == [(ids[0], True), (ids[3], False)]
    assert claim_steps(db, alone_from=2) == [(ids[1], True)]


def test_a_step_backs_off_only_for_its_holder(db: Database, tenant_id: str) -> None:
    [step_id] = add_steps(db, tenant_id, {})
    claim_steps(db, "w1")

    with db.transaction() as session:
        step = session.get_one(Step, step_id)
        assert not leases.back_off_step(session, step, "w2", later(60))
        assert leases.back_off_step(session, step, "w1", later(60))

    row = step_row(db, step_id)
    assert (row.state, row.lease_owner, row.lease_expires_at, row.failures) == (
        StepState.RUNNING, None, later(60), 1)
    assert claim_steps(db, "w2", later(59)) == []
    assert claim_steps(db, "w2", later(61)) == [(step_id, True)]


def test_steps_given_back_have_their_try_taken_back(db: Database, tenant_id: str) -> None:
    ours, theirs, fresh = add_steps(db, tenant_id, {}, {}, {"failures": 0})
    claim_steps(db, "w1", limit=1)
    claim_steps(db, "w2", limit=1)
    with db.transaction() as session:
        session.get_one(Step, ours).failures = 0  # given back already once

    with db.transaction() as session:
        assert leases.give_back_steps(session, "w1", [ours, theirs, fresh], later(5)) == {
            ours}
        assert leases.give_back_steps(session, "w1", [], later(5)) == set()

    row = step_row(db, ours)
    assert (row.lease_owner, row.lease_expires_at, row.failures) == (None, later(5), 0), \
        "never below none"
    assert step_row(db, theirs).failures == 1


def test_steps_a_bug_dropped_are_given_back_counted_for_a_while(
        db: Database, tenant_id: str) -> None:
    ours, theirs = add_steps(db, tenant_id, {}, {})
    claim_steps(db, "w1", limit=1)
    claim_steps(db, "w2", limit=1)

    with db.transaction() as session:
        assert leases.abandon_steps(session, "w1", [ours, theirs], later(30)) == {ours}
        assert leases.abandon_steps(session, "w1", [], later(30)) == set()

    row = step_row(db, ours)
    assert (row.lease_owner, row.lease_expires_at, row.failures) == (None, later(30), 1)
    assert claim_steps(db, "w2", later(29)) == []
    assert claim_steps(db, "w2", later(31)) == [(ours, True)]


def test_still_held_tells_the_steps_ours_from_those_their_operation_ended(
        db: Database, tenant_id: str) -> None:
    ours, theirs, ended = add_steps(db, tenant_id, {}, {}, {})
    claim_steps(db, "w1", limit=1)
    claim_steps(db, "w2", limit=1)
    claim_steps(db, "w1", limit=1)
    with db.transaction() as session:
        session.get_one(Step, ended).state = StepState.CANCELLED

    with db.read() as session:
        assert leases.still_held(session, "w1", [ours, theirs, ended]) == leases.HeldSteps(
            kept={ours}, ended={ended})
        assert leases.still_held(session, "w1", []) == leases.HeldSteps(set(), set())


def test_a_step_whose_holder_was_fenced_is_counted_taken_over(
        db: Database, tenant_id: str) -> None:
    died, backed_off, ready = add_steps(db, tenant_id, {}, {}, {})
    claim_steps(db, "w1", limit=2)
    with db.transaction() as session:
        leases.back_off_step(session, session.get_one(Step, backed_off), "w1", later(1))
    renew(db, "w2", later(LEASE + 1))  # fences w1
    moved = Moved()

    # Suspects (the two claimed before) come one per claim.
    claimed = claim_steps(db, "w2", later(LEASE + 1)) + claim_steps(db, "w2", later(LEASE + 1))

    assert {step_id for step_id, _ in claimed} == {died, backed_off, ready}
    assert moved("kiln_lease_takeovers_total", kind="step") == 1


# --- workers --------------------------------------------------------------------------------


def test_workers_are_listed_with_the_steps_they_hold_while_alive(
        db: Database, tenant_id: str) -> None:
    add_steps(db, tenant_id, {}, {}, {}, {})
    claim_steps(db, "w1", limit=2)
    claim_steps(db, "w2", limit=1)
    register(db, "w3", later(1))
    claim_steps(db, "w3", later(1), limit=1)
    with db.transaction() as session:
        leases.stop_worker(session, "w2", later(1))

    with db.read() as session:
        listed = [(worker.id, worker.stopped_at, held)
                  for worker, held in leases.list_workers(session, later(1))]
        assert [w.id for w, _ in leases.list_workers(session, later(LEASE + 0.5))
                if leases.is_alive(w, later(LEASE + 0.5))] == ["w3"]

    assert listed == [("w1", None, 2), ("w2", later(1), 0), ("w3", None, 1)]
