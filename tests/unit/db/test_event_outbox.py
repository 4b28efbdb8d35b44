"""engine.db.event_outbox on SQLite: every event of a stack with sinks (a resource's, the
stack's, a lifecycle plugin call's) owes a delivery to each sink, written in the event's
transaction and with Heat's notification body; deliveries are claimed with a lease and
settled only by their claim."""

from __future__ import annotations

import datetime
import json
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from engine.db import event_outbox, event_rows
from engine.db.event_outbox import Result
from engine.db.models import EventDelivery, Stack
from engine.db.session import Database
from engine.vocabulary import Action, Status
from tests.unit.db.conftest import NOW, add_operation, add_stack, later

SINKS = [{"type": "webhook", "target": "http://a.example/hook", "secret": "sa"},
         {"type": "webhook", "target": "http://b.example/hook", "secret": "sb"}]


def with_sinks(session: Session, tenant_id: str, sinks: list[dict[str, Any]] = SINKS
               ) -> Stack:
    return add_stack(session, tenant_id, environment={"event_sinks": sinks})


def deliveries(db: Database) -> list[EventDelivery]:
    with db.read() as session:
        return list(session.scalars(select(EventDelivery).order_by(EventDelivery.id)))


def resource_event(session: Session, stack: Stack, name: str = "r") -> str:
    return event_rows.add_event(session, stack_id=stack.id, resource_name=name,
                                physical_resource_id="phys", resource_type="OS::Heat::None",
                                action=Action.CREATE, status=Status.COMPLETE, reason="done",
                                now=NOW)


def test_each_event_of_a_stack_with_sinks_owes_each_sink_in_its_transaction(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = with_sinks(session, tenant_id)
        plain = add_stack(session, tenant_id)
        operation = add_operation(session, stack)
        resource = resource_event(session, stack)
        stack_event = event_rows.add_stack_event(session, stack, NOW)
        call = event_rows.add_lifecycle_event(session, stack, operation.id, {
            "plugin": "quota", "phase": "pre", "action": Action.CREATE,
            "verdict": "allow"}, "allowed", NOW)
        resource_event(session, plain)  # no sinks: owes nothing

    rows = deliveries(db)
    assert [(row.event_id, row.target, row.secret) for row in rows] == [
        (event_id, sink["target"], sink["secret"])
        for event_id in (resource, stack_event, call) for sink in SINKS]
    assert {(row.attempts, row.next_attempt_at, row.claim) for row in rows} == {
        (0, NOW, None)}
    body = json.loads(rows[0].body)
    assert body == {
        "id": resource, "type": "os.heat.event", "version": "0.1",
        "timestamp": NOW.isoformat(),
        "payload": {"resource_name": "r", "physical_resource_id": "phys",
                    "stack_id": stack.id, "stack_name": stack.name, "tenant_id": tenant_id,
                    "resource_action": "CREATE", "resource_status": "COMPLETE",
                    "resource_status_reason": "done", "resource_type": "OS::Heat::None",
                    "resource_properties": {}, "version": "0.1"}}
    assert json.loads(rows[4].body)["payload"]["lifecycle"]["plugin"] == "quota"
    assert "sa" not in rows[0].body, "the secret is never in the body"


def test_a_savepoint_rolled_back_takes_its_events_deliveries_with_it(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = with_sinks(session, tenant_id, SINKS[:1])
        kept = resource_event(session, stack, "kept")
        event_rows.write_pending(session)
        savepoint = session.begin_nested()
        resource_event(session, stack, "dropped")
        event_rows.write_pending(session)
        savepoint.rollback()

    assert [row.event_id for row in deliveries(db)] == [kept]


def test_the_sinks_follow_the_environment(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = with_sinks(session, tenant_id)
        assert stack.event_sinks == SINKS
        stack.environment = {"parameters": {}}
        resource_event(session, stack)

    assert deliveries(db) == []
    with db.read() as session:
        assert session.get(Stack, stack.id).event_sinks is None  # type: ignore[union-attr]


def take(db: Database, at: float, name: str, limit: int = 10, max_attempts: int = 10
         ) -> event_outbox.Claim:
    """A claim at ``later(at)`` with a lease of 15 s."""
    with db.transaction() as session:
        return event_outbox.claim_due(session, lambda: later(at), limit,
                                      datetime.timedelta(seconds=15), name, max_attempts)


def test_a_delivery_whose_claims_never_settle_is_given_up_at_its_last_claim(
        db: Database, tenant_id: str) -> None:
    """A sender that dies (or fails) on a delivery every time never writes its result:
    the tries are counted at the claim, so the delivery is given up instead of being
    sent after every lease forever; one handed back untried keeps its try."""
    with db.transaction() as session:
        [first, second] = [resource_event(session, with_sinks(session, tenant_id, SINKS[:1]))
                           for _ in range(2)]

    assert [(d.event_id, d.attempts) for d in take(db, 0, "a", max_attempts=2).due] == [
        (first, 1), (second, 1)]
    rows = deliveries(db)
    with db.transaction() as session:
        event_outbox.settle(session, "a", [Result(rows[1].id, next_attempt_at=later(1))],
                            later(1))
    assert [d.attempts for d in take(db, 16, "b", max_attempts=2).due] == [2, 1], (
        "the untried one's try was handed back")

    last = take(db, 32, "c", max_attempts=2)
    assert [(d.event_id, d.attempts) for d in last.given_up] == [(first, 2)]
    assert [(d.event_id, d.attempts) for d in last.due] == [(second, 2)]
    assert last.taken_at == later(32)
    given_up = deliveries(db)[0]
    assert (given_up.next_attempt_at, given_up.given_up_at, given_up.claim,
            given_up.last_error) == (None, later(32), None, event_outbox.UNSETTLED)
    assert take(db, 1000, "d", max_attempts=2).due == [], "given up: never claimed again"


def test_a_claim_holds_its_deliveries_until_its_lease_runs_out(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        resource_event(session, with_sinks(session, tenant_id))

    def claim(at: float, name: str, limit: int = 10) -> list[int]:
        return [due.id for due in take(db, at, name, limit).due]

    first, second = claim(0, "a", limit=1), claim(0, "b")
    assert (len(first), len(second)) == (1, 1) and first != second
    assert claim(1, "c") == [], "claimed deliveries are not due"
    assert claim(16, "d") == first + second, "a dead claimant's deliveries are due again"

    with db.transaction() as session:
        # "a" outlived its lease: "d" holds the delivery now, and only "d" settles it.
        event_outbox.settle(session, "a", [Result(first[0], delivered=True)], later(17))
        event_outbox.settle(session, "d", [
            Result(second[0], tried=True, error="HTTP 500", next_attempt_at=later(30))],
            later(17))
    rows = {row.id: row for row in deliveries(db)}
    assert sorted(rows) == first + second
    assert (rows[second[0]].attempts, rows[second[0]].next_attempt_at,
            rows[second[0]].last_error, rows[second[0]].claim) == (
        2, later(30), "HTTP 500", None), "tries are counted by the claims"

    with db.transaction() as session:
        event_outbox.settle(session, "d", [Result(first[0], delivered=True)], later(18))
        assert event_outbox.pending_count(session) == 1
    assert claim(31, "e") == second
    with db.transaction() as session:
        event_outbox.settle(session, "e", [Result(second[0], tried=True, error="gone")],
                            later(32))
    [given_up] = deliveries(db)
    assert (given_up.next_attempt_at, given_up.given_up_at, given_up.attempts) == (
        None, later(32), 3)
    with db.read() as session:
        assert event_outbox.pending_count(session) == 0
        assert not event_outbox.any_due(session, later(10_000))
        assert session.scalar(select(func.count()).select_from(EventDelivery)) == 1


def test_a_stacks_later_deliveries_to_a_target_wait_for_its_earlier_ones(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = with_sinks(session, tenant_id, SINKS[:1])
        other = with_sinks(session, tenant_id, SINKS[:1])
        first, second = resource_event(session, stack), resource_event(session, stack)
        elsewhere = resource_event(session, other)

    def claim(at: float, name: str, limit: int = 10) -> list[str]:
        return [due.event_id for due in take(db, at, name, limit).due]

    assert claim(0, "a", limit=1) == [first]
    assert claim(0, "b") == [elsewhere], "held up behind the claimed one: another stack's"
    with db.transaction() as session:
        [row] = [r for r in session.scalars(select(EventDelivery))
                 if r.event_id == first]
        event_outbox.settle(session, "a", [Result(row.id, tried=True, error="HTTP 500",
                                                  next_attempt_at=later(5))], later(1))
    assert claim(2, "c") == [], "still behind the one waiting to be tried again"
    assert claim(5, "d") == [first, second]
