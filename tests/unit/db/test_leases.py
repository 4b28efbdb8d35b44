"""engine.db.leases: which operations and steps a worker may claim, the lease a claim
takes, its renewal, and the ways a claim is handed back (counted or not); the workers'
own rows."""

from __future__ import annotations

import datetime

from sqlalchemy import select

from engine.db import leases
from engine.db.models import Operation, Step, Worker
from engine.db.session import Database
from engine.vocabulary import Action, OperationState, StepState
from tests.unit.db.conftest import NOW, add_operation, add_stack, later
from tests.unit.metric_deltas import Moved

LEASE = 30.0


def claim_operations(db: Database, owner: str = "w1", now: datetime.datetime = NOW,
                     limit: int = 10) -> list[str]:
    with db.transaction() as session:
        return [operation.id for operation in
                leases.claim_operations(session, owner, now, LEASE, limit)]


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
                leases.claim_steps(session, owner, now, LEASE, limit, **options)]


# --- operations -----------------------------------------------------------------------------


def test_a_pending_operation_is_claimed_with_a_lease_and_counted(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        operation_id = add_operation(session, add_stack(session, tenant_id)).id

    assert claim_operations(db) == [operation_id]

    row = operation_row(db, operation_id)
    assert (row.lease_owner, row.lease_expires_at, row.attempt, row.failures) == (
        "w1", later(LEASE), 1, 1)


def test_a_live_lease_keeps_an_operation_and_an_expired_one_frees_it(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        operation_id = add_operation(session, add_stack(session, tenant_id)).id
    claim_operations(db, "w1")

    assert claim_operations(db, "w2", later(LEASE - 1)) == []
    assert claim_operations(db, "w2", later(LEASE + 1)) == [operation_id]
    row = operation_row(db, operation_id)
    assert (row.lease_owner, row.attempt, row.failures) == ("w2", 2, 2)


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
                                  finished_at=NOW, lease_owner="w9",
                                  lease_expires_at=later(LEASE)).id
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


def test_renewing_an_operation_works_only_for_its_holder(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        operation_id = add_operation(session, add_stack(session, tenant_id)).id
    claim_operations(db, "w1")

    with db.transaction() as session:
        assert leases.renew_operation(session, operation_id, "w1", later(10), LEASE)
        assert not leases.renew_operation(session, operation_id, "w2", later(20), LEASE)
    assert operation_row(db, operation_id).lease_expires_at == later(10 + LEASE)


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
        "w1", later(5), 0, 1), "the lease ends at the given time; the owner is not cleared"
    assert operation_row(db, theirs).failures == 1


def test_an_operation_whose_holder_let_its_lease_lapse_is_counted_taken_over(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        died = add_operation(session, add_stack(session, tenant_id, "a")).id
        handed = add_operation(session, add_stack(session, tenant_id, "b")).id
    claim_operations(db, "w1")
    with db.transaction() as session:  # a graceful stop hands one over, its try taken back
        leases.give_back_operations(session, "w1", [handed], later(1))
    moved = Moved()

    assert set(claim_operations(db, "w2", later(LEASE + 1))) == {died, handed}

    assert moved("kiln_lease_takeovers_total", kind="operation") == 1


# --- steps ----------------------------------------------------------------------------------


def test_a_ready_step_is_claimed_running_with_a_lease_and_counted(
        db: Database, tenant_id: str) -> None:
    [step_id] = add_steps(db, tenant_id, {})

    assert claim_steps(db) == [(step_id, False)]

    row = step_row(db, step_id)
    assert (row.state, row.lease_owner, row.lease_expires_at, row.attempt, row.failures,
            row.started_at) == (StepState.RUNNING, "w1", later(LEASE), 1, 1, NOW)


def test_a_running_step_is_claimed_again_only_once_its_lease_expired(
        db: Database, tenant_id: str) -> None:
    [step_id] = add_steps(db, tenant_id, {})
    claim_steps(db, "w1")

    assert claim_steps(db, "w2", later(LEASE - 1)) == []
    assert claim_steps(db, "w2", later(LEASE + 1)) == [(step_id, True)]
    row = step_row(db, step_id)
    assert (row.lease_owner, row.attempt, row.failures, row.started_at) == ("w2", 2, 2, NOW)


def test_steps_not_ready_are_not_claimed(db: Database, tenant_id: str) -> None:
    add_steps(db, tenant_id, *({"state": state} for state in StepState
                               if state not in (StepState.READY, StepState.RUNNING)))
    add_steps(db, tenant_id, {"state": StepState.RUNNING, "lease_owner": "w9",
                              "lease_expires_at": later(LEASE)})

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


def test_renewing_steps_keeps_only_those_still_ours(db: Database, tenant_id: str) -> None:
    ours, theirs = add_steps(db, tenant_id, {}, {})
    claim_steps(db, "w1", limit=1)
    claim_steps(db, "w2", limit=1)

    with db.transaction() as session:
        assert leases.renew_steps(session, "w1", [ours, theirs], later(10), LEASE) == {ours}
        assert leases.renew_steps(session, "w1", [], later(10), LEASE) == set()

    assert step_row(db, ours).lease_expires_at == later(10 + LEASE)
    assert step_row(db, theirs).lease_expires_at == later(LEASE)


# --- workers --------------------------------------------------------------------------------


def test_workers_heartbeat_stop_and_are_listed_with_the_steps_they_hold(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        for worker_id, started in (("w2", later(2)), ("w1", later(1))):
            leases.register_worker(session, Worker(id=worker_id, host="h", pid=1,
                                                   started_at=started, heartbeat_at=started))
    add_steps(db, tenant_id, {}, {}, {})
    claim_steps(db, "w1", limit=2)
    claim_steps(db, "w2", now=later(-LEASE - 1), limit=1)  # its lease has lapsed by now

    with db.transaction() as session:
        leases.heartbeat_worker(session, "w1", later(3))
        leases.heartbeat_worker(session, "w2", later(4), stopped=True)
    with db.read() as session:
        listed = [(worker.id, worker.heartbeat_at, worker.stopped_at, held)
                  for worker, held in leases.list_workers(session, NOW)]
        assert session.scalar(select(Worker.id).where(Worker.stopped_at.is_(None))) == "w1"

    assert listed == [("w1", later(3), None, 2), ("w2", later(4), later(4), 0)]


def test_a_step_whose_holder_let_its_lease_lapse_is_counted_taken_over(
        db: Database, tenant_id: str) -> None:
    died, backed_off, ready = add_steps(db, tenant_id, {}, {}, {})
    claim_steps(db, "w1", limit=2)
    with db.transaction() as session:
        leases.back_off_step(session, session.get_one(Step, backed_off), "w1", later(1))
    moved = Moved()

    # Suspects (the two claimed before) come one per claim.
    claimed = claim_steps(db, "w2", later(LEASE + 1)) + claim_steps(db, "w2", later(LEASE + 1))

    assert {step_id for step_id, _ in claimed} == {died, backed_off, ready}
    assert moved("kiln_lease_takeovers_total", kind="step") == 1
