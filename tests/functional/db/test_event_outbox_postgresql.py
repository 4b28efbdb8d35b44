"""engine.db.event_outbox's claims on PostgreSQL (a real server), in real concurrent
transactions: claims take disjoint deliveries, and one waits for another's commit so a
stack's later deliveries stay behind an earlier one that is held; a claim whose lease ran
out leaves its deliveries to the next. The rules themselves:
tests/unit/db/test_event_outbox.py."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import delete, select

from engine.db import event_outbox, event_rows
from engine.db.event_outbox import Result
from engine.db.models import EventDelivery
from engine.db.session import Database
from engine.vocabulary import Action, Status
from tests.unit.db.conftest import NOW, add_stack, add_tenant, later

pytestmark = pytest.mark.postgresql

LEASE = datetime.timedelta(seconds=15)
SINK = {"type": "webhook", "target": "http://a.example/hook", "secret": "sa"}


@pytest.fixture
def db(postgresql_database: Database) -> Iterator[Database]:
    """The module's database, its outbox empty: a claim takes every stack's deliveries."""
    with postgresql_database.transaction() as session:
        session.execute(delete(EventDelivery))
    yield postgresql_database


def events(db: Database, per_stack: list[int]) -> list[list[str]]:
    """Events of new stacks with one sink, ``per_stack[i]`` of the i-th stack, written
    round-robin (each stack's in order): their ids, per stack."""
    with db.transaction() as session:
        tenant_id = add_tenant(session).id
        stacks = [add_stack(session, tenant_id, environment={"event_sinks": [SINK]})
                  for _ in per_stack]
        ids: list[list[str]] = [[] for _ in per_stack]
        for round_ in range(max(per_stack)):
            for i, stack in enumerate(stacks):
                if round_ < per_stack[i]:
                    ids[i].append(event_rows.add_event(
                        session, stack_id=stack.id, resource_name=f"r{round_}",
                        physical_resource_id="", resource_type="OS::Heat::None",
                        action=Action.CREATE, status=Status.COMPLETE, reason="",
                        now=NOW))
                    event_rows.write_pending(session)  # ids in this order
    return ids


def claim(db: Database, at: float, name: str, limit: int = 10) -> list[str]:
    """The events whose deliveries a claim at ``later(at)`` takes, committed."""
    with db.transaction() as session:
        taken = event_outbox.claim_due(session, lambda: later(at), limit, LEASE, name, 10)
    return [due.event_id for due in taken.due]


def test_a_claim_waits_for_the_one_before_it_and_keeps_each_stacks_order(
        db: Database) -> None:
    [s, t, u] = events(db, [3, 2, 1])
    answers: list[list[str]] = []
    with db.transaction() as first:
        taken = event_outbox.claim_due(first, lambda: later(0), 2, LEASE, "a", 10)
        assert [due.event_id for due in taken.due] == [s[0], t[0]]
        # The second claim, beside the first: were it not to wait for the first's commit,
        # its snapshot would show s[0] and t[0] still due, and it would take s[1] and t[1].
        second = threading.Thread(target=lambda: answers.append(claim(db, 0, "b")))
        second.start()
        second.join(0.3)
        assert second.is_alive(), "it waits for the first claim's commit"
    second.join(10)
    assert answers == [[u[0]]], "disjoint, and each stack's later ones held back"

    # Four claims at once: each takes one stack's earliest or nothing, never a stack's
    # later delivery while its earlier one is held.
    with db.transaction() as session:
        session.execute(delete(EventDelivery))
    [s, t, u] = events(db, [2, 2, 2])
    start = threading.Barrier(4)
    taken_by: dict[str, list[str]] = {}

    def racing(name: str) -> None:
        start.wait(5)
        taken_by[name] = claim(db, 0, name, limit=1)

    racers = [threading.Thread(target=racing, args=(f"r{i}",)) for i in range(4)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(10)
    assert len(taken_by) == 4
    assert sorted(event for ids in taken_by.values() for event in ids) == sorted(
        [s[0], t[0], u[0]])
    assert sorted(len(ids) for ids in taken_by.values()) == [0, 1, 1, 1]


def test_a_claim_whose_lease_ran_out_is_claimed_again_and_cannot_settle(
        db: Database) -> None:
    [[first, second]] = events(db, [2])
    assert claim(db, 0, "a", limit=1) == [first]
    assert claim(db, 14, "b") == [], "held, and the later one behind it"
    assert claim(db, 15, "c") == [first, second], "a lease's end: due again"

    with db.transaction() as session:
        rows = {row.event_id: row for row in session.scalars(select(EventDelivery))}
        assert (rows[first].claim, rows[first].attempts) == ("c", 2)
        # "a" answers late: the delivery is "c"'s now, and "a" writes nothing.
        event_outbox.settle(session, "a", [Result(rows[first].id, delivered=True)],
                            later(16))
    with db.read() as session:
        assert event_outbox.pending_count(session) == 2
