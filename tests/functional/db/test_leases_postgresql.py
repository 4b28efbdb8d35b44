"""engine.db.leases on PostgreSQL (a real server): the database's clock decides a worker's
liveness, whatever the engine host's clock says; a renewal and a fence of the same worker
are put one after the other by its row lock, and a heartbeat never waits on another
worker's; the claims stay index scans. The rules themselves: tests/unit/db/test_leases.py."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import func, insert, select, text
from sqlalchemy.orm import Session

from engine.db import leases, steps
from engine.db.models import Step, Worker
from engine.db.session import Database
from engine.vocabulary import Action, OperationState, StepState
from tests.functional.conftest import migrated_database
from tests.unit.db.conftest import add_operation, add_stack, add_tenant

pytestmark = pytest.mark.postgresql

LEASE = 2.0
# The engine host's clock, a day off the database's: it must not matter.
SKEWED = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=1)


@pytest.fixture
def db() -> Iterator[Database]:
    with migrated_database() as database:
        yield database


def register(db: Database, worker_id: str) -> leases.Renewal:
    with db.transaction() as session:
        return leases.register_worker(session, worker_id, "h", 1, SKEWED, LEASE)


def database_now(db: Database) -> datetime.datetime:
    with db.read() as session:
        now = session.scalar(select(func.clock_timestamp()))
    assert now is not None
    return now


def lapse(db: Database, worker_id: str) -> None:
    """As if ``worker_id`` had not renewed for longer than a lease."""
    with db.transaction() as session:
        session.execute(text("UPDATE workers SET alive_until = now() - interval '1 second' "
                             "WHERE id = :id"), {"id": worker_id})


def test_liveness_is_kept_by_the_databases_clock_not_the_hosts(db: Database) -> None:
    before = database_now(db)
    register(db, "w1")
    after = database_now(db)

    with db.read() as session:
        row = session.get_one(Worker, "w1")
    assert row.alive_until is not None
    assert before + datetime.timedelta(seconds=LEASE) <= row.alive_until \
        <= after + datetime.timedelta(seconds=LEASE)
    assert row.heartbeat_at == SKEWED, "the host's time, for people to read"
    # A day behind, the host would have it lapsed long ago: another's heartbeat does not.
    assert register(db, "w2").fenced == []


def test_a_fence_waits_for_no_renewal_and_a_renewal_that_waited_on_a_fence_fails(
        db: Database) -> None:
    register(db, "w1")
    register(db, "w2")
    lapse(db, "w1")

    # w1 renews, late, and pauses before its commit: w2's heartbeat passes it by.
    with db.transaction() as renewing:
        assert leases.renew_liveness(renewing, "w1", SKEWED, LEASE).alive
        with db.transaction() as session:
            assert leases.renew_liveness(session, "w2", SKEWED, LEASE).fenced == []
    with db.transaction() as session:
        assert leases.renew_liveness(session, "w2", SKEWED, LEASE).fenced == [], \
            "renewed meanwhile"

    # w2 fences w1 and pauses before its commit: w1's renewal waits, then fails.
    lapse(db, "w1")
    answers: list[leases.Renewal] = []
    with db.transaction() as fencing:
        assert [w.id for w in leases.renew_liveness(fencing, "w2", SKEWED, LEASE).fenced
                ] == ["w1"]
        renewing_thread = threading.Thread(target=lambda: answers.append(
            _renew_alone(db, "w1")))
        renewing_thread.start()
        renewing_thread.join(0.5)
        assert renewing_thread.is_alive(), "it waits on the fence's row lock"
    renewing_thread.join(10)
    assert answers == [leases.Renewal(alive=False, fenced=[])]


def _renew_alone(db: Database, worker_id: str) -> leases.Renewal:
    with db.transaction() as session:
        return leases.renew_liveness(session, worker_id, SKEWED, LEASE)


def test_a_claim_takes_a_dead_workers_steps_only_once_it_is_fenced(db: Database) -> None:
    register(db, "w1")
    register(db, "w2")
    step_id = _steps(db, 1)[0]
    with db.transaction() as session:
        assert [s.step.id for s in leases.claim_steps(session, "w1", SKEWED, 10)] == [step_id]
    lapse(db, "w1")

    with db.transaction() as session:
        assert leases.claim_steps(session, "w2", SKEWED, 10) == [], "lapsed, not fenced"
        assert [w.id for w in leases.renew_liveness(session, "w2", SKEWED, LEASE).fenced
                ] == ["w1"]
    with db.transaction() as session:
        assert [s.step.id for s in leases.claim_steps(session, "w2", SKEWED, 10)] == [step_id]


def test_the_claims_stay_index_scans_with_many_steps_held_and_closed(db: Database) -> None:
    register(db, "w1")
    _steps(db, 20000, state=StepState.COMPLETE)
    _steps(db, 1000, state=StepState.RUNNING, lease_owner="w1")
    ready = _steps(db, 50)
    with db.transaction() as session:
        session.execute(text("ANALYZE"))
        plan = _explain(session)
    assert "Seq Scan on steps" not in plan, plan
    with db.transaction() as session:
        assert [s.step.id for s in leases.claim_steps(session, "w1", SKEWED, 100)] == ready


def _explain(session: Session) -> str:
    """The plan PostgreSQL chooses for the step claim."""
    compiled = leases.CLAIMABLE_STEPS.compile(dialect=session.get_bind().dialect)
    rows = session.connection().exec_driver_sql(
        "EXPLAIN " + str(compiled),
        {name: (SKEWED if name == "now" else 100 if name == "limit" else value)
         for name, value in compiled.params.items()})
    return "\n".join(row[0] for row in rows)


def _steps(db: Database, count: int, state: str = StepState.READY,
           lease_owner: str | None = None) -> list[int]:
    """``count`` steps of a new operation, in one statement: their ids."""
    with db.transaction() as session:
        operation = add_operation(session, add_stack(session, add_tenant(session).id),
                                  state=OperationState.RUNNING)
        return list(session.scalars(insert(Step).returning(Step.id), [
            {"operation_id": operation.id, "stack_id": operation.stack_id,
             "resource_name": f"r{i}", "action": Action.CREATE, "state": state,
             "prerequisites_left": 0, "lease_owner": lease_owner} for i in range(count)]))


def test_a_step_a_close_made_ready_is_the_closers_to_claim_before_anyone_sees_it(
        db: Database) -> None:
    register(db, "w1")
    register(db, "w2")
    create = Action.CREATE
    with db.transaction() as session:
        operation = add_operation(session, add_stack(session, add_tenant(session).id),
                                  state=OperationState.RUNNING)
        steps.add_steps(session, operation, {("a", create): [], ("b", create): [("a", create)]})
        operation_id = operation.id
    with db.transaction() as session:
        [claimed] = leases.claim_steps(session, "w1", SKEWED, 10)
    a = claimed.step.id

    with db.transaction() as closing:
        _, ready = steps.complete_steps(closing, operation_id, [a], "w1", SKEWED, wake=False)
        # Another worker's claim meanwhile: b is READY only inside the closing
        # transaction, whose row lock its SKIP LOCKED passes by.
        with db.transaction() as other:
            assert leases.claim_steps(other, "w2", SKEWED, 10) == []
        [b] = leases.claim_ready(closing, "w1", SKEWED, ready, 10, {})
    with db.read() as session:
        row = session.get_one(Step, b.id)
        assert (row.resource_name, row.state, row.lease_owner) == ("b", StepState.RUNNING, "w1")
