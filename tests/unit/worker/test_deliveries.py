"""engine.worker.deliveries against a real receiver on loopback: each delivery is signed
and carries the event's id; a failure is tried again after a back-off with jitter (and
the rest of its target's batch waits as long, untried), given up after the last try; a
redirect is followed only to the same host, and one that is no URL fails its delivery
alone; a send ends at its deadline; each target's deliveries are settled as soon as they
are done; a scheme the operator does not allow, or an address that is not public, is
given up at once."""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import hmac
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

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
                            threads=2, allow_private_targets=True)  # loopback receivers


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


def deliverer(db: Database, clock: Clock, settings: DeliverySettings = SETTINGS,
              sender: deliveries.Sender = deliveries.send) -> Deliverer:
    return Deliverer(db, settings, clock=clock, random_fraction=lambda: 0.5, sender=sender)


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


def test_a_redirect_that_is_no_url_is_that_deliverys_failure_not_the_rounds(
        db: Database, clock: Clock, receiver: Receiver) -> None:
    """A Location whose port is no port made the round raise before it settled: every
    delivery of the claim, other tenants' too, was sent again after each lease, forever
    (regression)."""
    receiver.redirects["/broken"] = "http://127.0.0.1:99999/"
    [broken] = owe(db, clock, f"{receiver.url}/broken")
    [fine] = owe(db, clock, f"{receiver.url}/fine")

    deliverer(db, clock).run_once()

    assert [r.event_id for r in receiver.on("/fine")] == [fine]
    [row] = outbox(db)
    assert (row.event_id, row.attempts, row.claim, row.last_error) == (
        broken, 1, None, "ValueError: Port out of range 0-65535")


def test_a_sender_that_raises_fails_its_delivery_and_the_round_goes_on(
        db: Database, clock: Clock, receiver: Receiver) -> None:
    def sender(target: str, *args: Any) -> deliveries.Answer:
        if target.endswith("/bug"):
            raise RuntimeError("a bug met on the way")
        return deliveries.send(target, *args)

    [bug] = owe(db, clock, f"{receiver.url}/bug")
    [fine] = owe(db, clock, f"{receiver.url}/fine")

    deliverer(db, clock, sender=sender).run_once()

    assert [r.event_id for r in receiver.on("/fine")] == [fine]
    [row] = outbox(db)
    assert (row.event_id, row.attempts, row.last_error, row.next_attempt_at is not None) == (
        bug, 1, "RuntimeError: a bug met on the way", True)


def test_a_send_ends_at_its_deadline_however_the_answer_trickles(receiver: Receiver) -> None:
    """http.client's timeout is per socket read: an answer trickled a byte at a time
    never reached it, and one receiver could hold its thread past the claim's lease."""
    receiver.trickles.add("/slow")
    settings = dataclasses.replace(SETTINGS, timeout_seconds=0.3)
    started = time.monotonic()

    answer = deliveries.send(f"{receiver.url}/slow", b"{}", {}, settings)

    assert time.monotonic() - started < 1.0
    assert answer == deliveries.Answer(False, "no answer within 0.3 s")
    assert len(receiver.on("/slow")) == 1


def test_each_targets_deliveries_are_settled_as_soon_as_they_are_done(
        db: Database, clock: Clock, receiver: Receiver) -> None:
    """A slow receiver's thread does not hold back what the others' found out."""
    seen_settled = threading.Event()

    def sender(target: str, *args: Any) -> deliveries.Answer:
        if target.endswith("/slow"):
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not seen_settled.is_set():
                if [r.event_id for r in outbox(db)] == [slow]:
                    seen_settled.set()
                time.sleep(0.01)
            return deliveries.Answer(False, "slow")
        return deliveries.send(target, *args)

    [slow] = owe(db, clock, f"{receiver.url}/slow")
    owe(db, clock, f"{receiver.url}/fast")

    deliverer(db, clock, sender=sender).run_once()

    assert seen_settled.is_set(), "the fast target's delivery was settled while /slow sent"


def test_a_target_that_is_not_public_is_refused_where_it_resolves(
        db: Database, clock: Clock, receiver: Receiver) -> None:
    """Checked on the address a name resolved to, at each connection (redirects too),
    so neither a literal address nor a name (DNS rebinding) reaches the engines' own
    networks unless the operator allows it."""
    settings = dataclasses.replace(SETTINGS, allow_private_targets=False)
    port = receiver.server.server_address[1]
    owe(db, clock, f"http://localhost:{port}/by-name")

    deliverer(db, clock, settings).run_once()

    [row] = outbox(db)
    assert (row.attempts, row.given_up_at) == (1, clock())
    assert row.last_error.startswith("the target's address 127.0.0.1 is not public")
    assert receiver.requests == []
    for address in ("127.0.0.1", "10.1.2.3", "169.254.169.254", "100.64.0.1", "0.0.0.0",
                    "::1", "fe80::1%eth0", "fc00::1", "::ffff:192.168.0.1", "224.0.0.1"):
        assert not deliveries.is_public(address), address
    for address in ("8.8.8.8", "2001:4860:4860::8888", "::ffff:8.8.8.8"):
        assert deliveries.is_public(address), address


def test_a_scheme_the_operator_does_not_allow_is_given_up_at_once(
        db: Database, clock: Clock, receiver: Receiver) -> None:
    owe(db, clock, f"{receiver.url}/plain")

    deliverer(db, clock, dataclasses.replace(SETTINGS, allowed_schemes=("https",))
              ).run_once()

    [row] = outbox(db)
    assert (row.attempts, row.given_up_at, row.last_error) == (
        1, clock(), 'the scheme "http" is not allowed')
    assert receiver.requests == []
