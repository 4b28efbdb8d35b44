"""Event sink deliveries: a thread of every engine process that sends what the outbox owes
(``engine.db.event_outbox``) to webhook sinks, signed, and retries with back-off
(specs/event-sinks.rst).

Each round claims a batch of due deliveries in one short transaction, sends them with no
transaction open, and settles them in another. The sends of one target go one after the
other, in the order the events were written, and different targets' on a few threads of
its own, so a slow receiver holds up neither the worker's steps (another thread) nor
other tenants' sinks for longer than its timeout. Delivery is at least once: a process
killed after a receiver took an event but before the result was written leaves the row
due again when its lease runs out, and the event is sent again with the same id
(:data:`EVENT_ID_HEADER`), which is how a receiver drops the repeat.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import hmac
import http.client
import logging
import random
import ssl
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from engine import config, metrics
from engine.clock import Clock, utcnow
from engine.db import event_outbox
from engine.db.event_outbox import Due, Result
from engine.db.session import Database
from engine.errors import DatabaseUnavailable
from engine.template.event_sinks import shown_target

LOG = logging.getLogger(__name__)

EVENT_ID_HEADER = "X-Kiln-Event-Id"
TIMESTAMP_HEADER = "X-Kiln-Timestamp"
SIGNATURE_HEADER = "X-Kiln-Signature"
ATTEMPT_HEADER = "X-Kiln-Attempt"
USER_AGENT = "Kiln-Event-Sink/1"
#: Redirects followed per send, and only 307/308 to the same scheme, host and port.
MAX_REDIRECTS = 3
#: What is read of a receiver's answer before the connection is closed.
MAX_ANSWER_BYTES = 65536
_REDIRECTS = frozenset({307, 308})


@dataclasses.dataclass(frozen=True)
class DeliverySettings:
    """``[event_sinks]``: see their help in ``engine/config.py``."""

    timeout_seconds: float = config.declared_default("event_sinks", "timeout_seconds")
    max_attempts: int = config.declared_default("event_sinks", "max_attempts")
    backoff_seconds: float = config.declared_default("event_sinks", "backoff_seconds")
    max_backoff_seconds: float = config.declared_default("event_sinks", "max_backoff_seconds")
    poll_seconds: float = config.declared_default("event_sinks", "poll_seconds")
    batch_size: int = config.declared_default("event_sinks", "batch_size")
    threads: int = config.declared_default("event_sinks", "threads")
    allowed_schemes: tuple[str, ...] = tuple(
        config.declared_default("event_sinks", "allowed_schemes"))

    @property
    def lease_seconds(self) -> float:
        """How long a claim holds its deliveries: a send starts only while a whole one
        (connect, then the answer, each bounded by the timeout) fits in what is left."""
        return 3 * self.timeout_seconds


def backoff_seconds(failures: int, settings: DeliverySettings,
                    random_fraction: Callable[[], float]) -> float:
    """The wait after a delivery's ``failures``-th failed try: ``backoff_seconds``
    doubled for each earlier failure, at most ``max_backoff_seconds``; its second half is
    random, so the deliveries that failed together (a receiver down) come back spread."""
    ceiling = min(settings.max_backoff_seconds,
                  settings.backoff_seconds * 2.0 ** min(failures - 1, 62))
    return ceiling / 2 + random_fraction() * ceiling / 2


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """:data:`SIGNATURE_HEADER`: HMAC-SHA256 keyed by the sink's secret over the
    timestamp header's value, a dot and the body (so a captured request cannot be replayed
    later under a fresh timestamp), hex, prefixed by the algorithm."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return f"sha256={digest.hexdigest()}"


class Answer(NamedTuple):
    """What a send came to: delivered, or why not, and whether trying again could ever
    help (``final``: a scheme the operator does not allow)."""

    delivered: bool
    error: str = ""
    final: bool = False


def send(target: str, body: bytes, headers: Mapping[str, str], timeout: float,
         schemes: Sequence[str]) -> Answer:
    """POST ``body`` to ``target``: delivered on a 2xx answer. A 307 or 308 to the same
    scheme, host and port is followed (a few times); any other redirect is a failure,
    so a receiver cannot send Kiln, or the secret's signature, to another host."""
    url = target
    for _ in range(MAX_REDIRECTS + 1):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in schemes:
            return Answer(False, f'the scheme "{parts.scheme}" is not allowed', final=True)
        try:
            status, location = _post(parts, body, headers, timeout)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            return Answer(False, f"{type(exc).__name__}: {exc}".rstrip(": "))
        if 200 <= status < 300:
            return Answer(True)
        if status not in _REDIRECTS or not location:
            return Answer(False, f"HTTP {status}")
        moved = urllib.parse.urljoin(url, location)
        if _origin(moved) != _origin(url):
            return Answer(False, f"HTTP {status}: a redirect to another host is not followed")
        url = moved
    return Answer(False, f"more than {MAX_REDIRECTS} redirects")


def _post(parts: urllib.parse.SplitResult, body: bytes, headers: Mapping[str, str],
          timeout: float) -> tuple[int, str | None]:
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(parts.hostname or "", parts.port,
                                                 timeout=timeout,
                                                 context=ssl.create_default_context())
    else:
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port,
                                                timeout=timeout)
    try:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request("POST", path, body=body, headers=dict(headers))
        response = connection.getresponse()
        response.read(MAX_ANSWER_BYTES)
        return response.status, response.getheader("Location")
    finally:
        connection.close()


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


Sender = Callable[[str, bytes, Mapping[str, str], float, Sequence[str]], Answer]


class Deliverer:
    """Claims due deliveries, sends them and settles them, round after round; one per
    engine process (``engine.worker.loop.WorkerLoop.run`` starts it)."""

    def __init__(self, db: Database, settings: DeliverySettings, *, clock: Clock = utcnow,
                 monotonic: Callable[[], float] = time.monotonic,
                 random_fraction: Callable[[], float] = random.random,
                 sender: Sender = send) -> None:
        self._db = db
        self._settings = settings
        self._clock = clock
        self._monotonic = monotonic
        self._random = random_fraction
        self._send = sender
        self._pool = ThreadPoolExecutor(settings.threads, "kiln-event-sink")

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self.run, args=(stop,), name="kiln-event-sinks",
                                  daemon=True)
        thread.start()
        return thread

    def run(self, stop: threading.Event) -> None:
        """Rounds until ``stop`` is set; a round that finds nothing due waits
        ``poll_seconds``. Deliveries claimed when it stops are due again after their
        lease."""
        try:
            while not stop.is_set():
                try:
                    busy = self.run_once()
                except DatabaseUnavailable as exc:
                    LOG.warning("event sinks: database unavailable, retrying: %s",
                                exc.message)
                    busy = False
                except Exception:  # noqa: BLE001 -- the thread outlives every bug it meets
                    LOG.exception("event sinks: a delivery round failed; continuing")
                    busy = False
                if not busy:
                    stop.wait(self._settings.poll_seconds)
        finally:
            self._pool.shutdown(wait=False)

    def run_once(self) -> bool:
        """One round; True when it claimed a full batch (more may be due)."""
        settings, now = self._settings, self._clock()
        with self._db.read() as session:
            if not event_outbox.any_due(session, now):
                return False
        claim = str(uuid.uuid4())
        started = self._monotonic()
        with self._db.transaction() as session:
            due = event_outbox.claim_due(
                session, now, settings.batch_size,
                now + _seconds(settings.lease_seconds), claim)
        if not due:
            return False
        groups: dict[str, list[Due]] = {}
        for delivery in due:
            groups.setdefault(delivery.target, []).append(delivery)
        results = [result for group in self._pool.map(
            lambda rows: self._deliver(rows, started), groups.values()) for result in group]
        with self._db.transaction() as session:
            event_outbox.settle(session, claim, results, self._clock())
        self._report(due, results)
        return len(due) >= settings.batch_size

    def _deliver(self, rows: Sequence[Due], started: float) -> list[Result]:
        """One target's deliveries, in order. Once a send fails the rest wait as long as
        it does, untried; a send is not started once the claim could run out during it."""
        settings = self._settings
        results: list[Result] = []
        waiting_until = None
        for row in rows:
            if waiting_until is not None:
                results.append(Result(row.id, next_attempt_at=waiting_until))
                continue
            if self._monotonic() - started > settings.lease_seconds - 2 * settings.timeout_seconds:
                results.append(Result(row.id, next_attempt_at=self._clock()))
                continue
            answer = self._send(row.target, row.body.encode(), self._headers(row),
                                settings.timeout_seconds, settings.allowed_schemes)
            if answer.delivered:
                results.append(Result(row.id, delivered=True))
                continue
            failures = row.attempts + 1
            later = self._clock() + _seconds(backoff_seconds(failures, settings, self._random))
            gives_up = answer.final or failures >= settings.max_attempts
            results.append(Result(row.id, tried=True, error=answer.error,
                                  next_attempt_at=None if gives_up else later))
            if not answer.final:
                waiting_until = later
        return results

    def _headers(self, row: Due) -> dict[str, str]:
        timestamp = str(int(self._clock().timestamp()))
        return {"Content-Type": "application/json", "User-Agent": USER_AGENT,
                EVENT_ID_HEADER: row.event_id, TIMESTAMP_HEADER: timestamp,
                SIGNATURE_HEADER: signature(row.secret, timestamp, row.body.encode()),
                ATTEMPT_HEADER: str(row.attempts + 1)}

    def _report(self, due: Sequence[Due], results: Sequence[Result]) -> None:
        rows = {row.id: row for row in due}
        for result in results:
            row = rows[result.id]
            if result.delivered:
                metrics.event_delivery(metrics.DELIVERED)
            elif not result.tried:
                continue
            elif result.next_attempt_at is None:
                metrics.event_delivery(metrics.GIVEN_UP)
                LOG.warning("event sink %s: gave up event %s of stack %s after %d tries: %s",
                            shown_target(row.target), row.event_id, row.stack_id,
                            row.attempts + 1, result.error)
            else:
                metrics.event_delivery(metrics.RETRIED)
                LOG.info("event sink %s: event %s of stack %s not delivered (try %d of %d), "
                         "again at %s: %s", shown_target(row.target), row.event_id,
                         row.stack_id, row.attempts + 1, self._settings.max_attempts,
                         result.next_attempt_at.isoformat(timespec="seconds"), result.error)


def _seconds(value: float) -> datetime.timedelta:
    return datetime.timedelta(seconds=value)
