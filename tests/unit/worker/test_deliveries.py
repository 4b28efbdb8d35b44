"""engine.worker.deliveries against a real receiver on loopback: each delivery is signed
and carries the event's id; a failure is tried again after a back-off with jitter (and
the rest of its target's batch waits as long, untried), given up after the last try; a
redirect is followed only to the same host; a scheme the operator does not allow is
given up at once."""

from __future__ import annotations

import datetime
import hashlib
import hmac
import logging
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from engine.db import event_rows
from engine.db.models import EventDelivery
from engine.db.session import Database
from engine.vocabulary import Action, Status
from engine.worker import deliveries
from engine.worker.deliveries import Deliverer, DeliverySettings, backoff_seconds
from tests.unit.conftest import Clock
from tests.unit.db.conftest import add_stack, add_tenant
from tests.unit.metric_deltas import Moved
from tests.webhook_receiver import Receiver, running

SECRET = "a-secret-to-sign-with"
SETTINGS = DeliverySettings(timeout_seconds=2.0, max_attempts=3, backoff_seconds=1.0,
                            max_backoff_seconds=3.0, poll_seconds=0.01, batch_size=10,
                            threads=2)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from running()


def owe(db: Database, clock: Clock, target: str, count: int = 1) -> list[str]:
    """``count`` events of a stack whose one sink is ``target``: their ids."""
    with db.transaction() as session:
        tenant = add_tenant(session)
        stack = add_stack(session, tenant.id, environment={"event_sinks": [
            {"type": "webhook", "target": target, "secret": SECRET}]})
        return [event_rows.add_event(session, stack_id=stack.id, resource_name=f"r{n}",
                                     physical_resource_id="", resource_type="T",
                                     action=Action.CREATE, status=Status.COMPLETE,
                                     reason="", now=clock())
                for n in range(count)]


def outbox(db: Database) -> list[EventDelivery]:
    with db.read() as session:
        return list(session.scalars(select(EventDelivery).order_by(EventDelivery.id)))


def deliverer(db: Database, clock: Clock, settings: DeliverySettings = SETTINGS
              ) -> Deliverer:
    return Deliverer(db, settings, clock=clock, random_fraction=lambda: 0.5)


def test_the_signature_is_hmac_sha256_over_the_timestamp_and_body() -> None:
    expected = hmac.new(b"k", b"1700000000.{}", hashlib.sha256).hexdigest()

    assert deliveries.signature("k", "1700000000", b"{}") == f"sha256={expected}"


def test_the_backoff_doubles_up_to_its_ceiling_with_its_second_half_random() -> None:
    def waits(fraction: float) -> list[float]:
        return [backoff_seconds(n, SETTINGS, lambda: fraction) for n in range(1, 5)]

    assert waits(0.0) == [0.5, 1.0, 1.5, 1.5]
    assert waits(1.0) == [1.0, 2.0, 3.0, 3.0]
    assert SETTINGS.lease_seconds == 6.0


def test_a_delivery_is_signed_and_named_by_its_event_and_then_gone(
        db: Database, clock: Clock, receiver: Receiver) -> None:
    moved = Moved()
    ids = owe(db, clock, f"{receiver.url}/hook", 3)

    assert deliverer(db, clock).run_once() is False  # not a full batch: nothing more

    got = receiver.on("/hook")
    assert [r.event_id for r in got] == ids, "one target's events go in their order"
    assert all(r.signed_with(SECRET) for r in got)
    assert [r.event["id"] for r in got] == ids
    assert {(r.headers["x-kiln-attempt"], r.headers["content-type"]) for r in got} == {
        ("1", "application/json")}
    assert outbox(db) == []
    assert moved("kiln_event_deliveries_total", outcome="delivered") == 3


def test_a_failure_is_retried_after_a_backoff_and_its_targets_batch_waits_as_long(
        db: Database, clock: Clock, receiver: Receiver,
        caplog: pytest.LogCaptureFixture) -> None:
    moved = Moved()
    receiver.fail_first("/flaky?token=hidden", 500, 503, 500)
    first, second = owe(db, clock, f"{receiver.url}/flaky?token=hidden", 2)
    sender = deliverer(db, clock)

    with caplog.at_level(logging.INFO, logger="engine.worker.deliveries"):
        sender.run_once()
        rows = outbox(db)
        # 1 s doubled once per earlier failure, three quarters of it with a fraction 0.5
        assert [(r.event_id, r.attempts, r.next_attempt_at, r.last_error) for r in rows] == [
            (first, 1, clock() + datetime.timedelta(seconds=0.75), "HTTP 500"),
            (second, 0, clock() + datetime.timedelta(seconds=0.75), "")]
        assert deliverer(db, clock).run_once() is False, "not due yet"

        clock.advance(1)
        sender.run_once()
        clock.advance(2)
        sender.run_once()  # the third try of the first fails: given up

    rows = outbox(db)
    assert [(r.event_id, r.attempts, r.next_attempt_at, r.given_up_at is not None)
            for r in rows] == [(first, 3, None, True), (second, 0, rows[1].next_attempt_at,
                                                        False)]
    assert moved("kiln_event_deliveries_total", outcome="retried") == 2
    assert moved("kiln_event_deliveries_total", outcome="given_up") == 1
    text = caplog.text
    assert f"gave up event {first}" in text and "after 3 tries: HTTP 500" in text
    assert SECRET not in text and "hidden" not in text, "no secret, no query in a log line"

    clock.advance(5)
    sender.run_once()
    assert [r.event_id for r in receiver.deduped("/flaky?token=hidden").values()] == [
        first, second]
    assert [r.event_id for r in outbox(db)] == [first], "the given-up one stays, for the record"


def test_a_redirect_is_followed_only_to_the_same_host(
        db: Database, clock: Clock, receiver: Receiver) -> None:
    receiver.redirects["/moved"] = "/here"
    receiver.redirects["/away"] = "http://localhost:9/elsewhere"
    [moved] = owe(db, clock, f"{receiver.url}/moved")
    [away] = owe(db, clock, f"{receiver.url}/away")

    deliverer(db, clock).run_once()

    assert [r.event_id for r in receiver.on("/here")] == [moved]
    [row] = outbox(db)
    assert (row.event_id, row.last_error) == (
        away, "HTTP 307: a redirect to another host is not followed")


def test_a_scheme_the_operator_does_not_allow_is_given_up_at_once(
        db: Database, clock: Clock, receiver: Receiver) -> None:
    owe(db, clock, f"{receiver.url}/plain")

    deliverer(db, clock, DeliverySettings(allowed_schemes=("https",))).run_once()

    [row] = outbox(db)
    assert (row.attempts, row.given_up_at, row.last_error) == (
        1, clock(), 'the scheme "http" is not allowed')
    assert receiver.requests == []
