"""Event sink deliveries: a thread of every engine process that sends what the outbox owes
(``engine.db.event_outbox``) to webhook sinks, signed, and retries with back-off
(specs/event-sinks.rst).

Each round claims a batch of due deliveries in one short transaction, sends them with no
transaction open, and settles each target's in another as soon as they are done. The
sends of one target go one after the other, in the order the events were written, and
different targets' on a few threads of its own; each send ends by its deadline, so a
slow receiver holds up neither the worker's steps (another thread) nor other tenants'
sinks for longer than a claim's lease. Delivery is at least once: a process
killed after a receiver took an event but before the result was written leaves the row
due again when its lease runs out, and the event is sent again with the same id
(:data:`EVENT_ID_HEADER`), which is how a receiver drops the repeat.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import hmac
import http.client
import ipaddress
import logging
import random
import socket
import ssl
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, NamedTuple

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
    allow_private_targets: bool = config.declared_default("event_sinks",
                                                          "allow_private_targets")

    @property
    def lease_seconds(self) -> float:
        """How long a claim holds its deliveries: a send (at most ``timeout_seconds``)
        starts only while it and as long again fit in what is left."""
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
    help (``final``: a scheme the operator does not allow, an address not allowed)."""

    delivered: bool
    error: str = ""
    final: bool = False


class _Refused(Exception):
    """A target the operator's settings do not let Kiln connect to."""


def send(target: str, body: bytes, headers: Mapping[str, str],
         settings: DeliverySettings) -> Answer:
    """POST ``body`` to ``target``: delivered on a 2xx answer, all of it (connection,
    request, answer, redirects) within ``timeout_seconds``. A 307 or 308 to the same
    scheme, host and port is followed (a few times); any other redirect is a failure,
    so a receiver cannot send Kiln, or the secret's signature, to another host. Never
    raises: whatever a receiver's answer breaks is that delivery's failure."""
    deadline = time.monotonic() + settings.timeout_seconds
    try:
        return _send(target, body, headers, settings, deadline)
    except Exception as exc:  # noqa: BLE001 -- a receiver must not end the round
        return Answer(False, _error(exc))


def _send(target: str, body: bytes, headers: Mapping[str, str], settings: DeliverySettings,
          deadline: float) -> Answer:
    url = target
    for _ in range(MAX_REDIRECTS + 1):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in settings.allowed_schemes:
            return Answer(False, f'the scheme "{parts.scheme}" is not allowed', final=True)
        try:
            status, location = _post(parts, body, headers, deadline,
                                     settings.allow_private_targets)
        except _Refused as exc:
            return Answer(False, str(exc), final=True)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            if time.monotonic() >= deadline:
                return Answer(False, f"no answer within {settings.timeout_seconds:g} s")
            return Answer(False, _error(exc))
        if 200 <= status < 300:
            return Answer(True)
        if status not in _REDIRECTS or not location:
            return Answer(False, f"HTTP {status}")
        moved = urllib.parse.urljoin(url, location)
        if _origin(moved) != _origin(url):
            return Answer(False, f"HTTP {status}: a redirect to another host is not followed")
        url = moved
    return Answer(False, f"more than {MAX_REDIRECTS} redirects")


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".rstrip(": ")


def _post(parts: urllib.parse.SplitResult, body: bytes, headers: Mapping[str, str],
          deadline: float, allow_private: bool) -> tuple[int, str | None]:
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    addresses = _addresses(host, port, allow_private)
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = _CheckedHTTPSConnection(host, port, context=ssl.create_default_context())
    else:
        connection = _CheckedHTTPConnection(host, port)
    connection.addresses, connection.deadline = addresses, deadline
    # http.client's timeout is per socket operation: a receiver trickling its answer a
    # byte at a time would never reach it. A watchdog cuts the connection at the
    # deadline, whatever it is doing.
    cut = threading.Event()
    watchdog = threading.Timer(max(0.0, deadline - time.monotonic()), _cut,
                               (connection, cut))
    watchdog.daemon = True
    try:
        connection.connect()
        watchdog.start()
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request("POST", path, body=body, headers=dict(headers))
        response = connection.getresponse()
        if cut.is_set():
            # http.client takes the end of the stream for the end of the headers: an
            # answer cut off mid-way would read as complete.
            raise TimeoutError("the answer was cut off at the deadline")
        status, location = response.status, response.getheader("Location")
        with contextlib.suppress(OSError, http.client.HTTPException):
            response.read(MAX_ANSWER_BYTES)  # read and ignored: the status is the answer
        return status, location
    finally:
        watchdog.cancel()
        connection.close()


def _cut(connection: http.client.HTTPConnection, cut: threading.Event) -> None:
    cut.set()
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            # socket.socket's own: a TLS socket's would also drop its TLS state under the
            # reading thread.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _addresses(host: str, port: int, allow_private: bool
               ) -> list[tuple[socket.AddressFamily, Any]]:
    """The addresses ``host`` resolves to that Kiln may connect to: the connection is
    made to these, not to the name again, so a name that resolves elsewhere a moment
    later (DNS rebinding) cannot get around the check."""
    found = [(family, sockaddr) for family, _, _, _, sockaddr
             in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]
    allowed: list[tuple[socket.AddressFamily, Any]] = [
        (family, sockaddr) for family, sockaddr in found
        if allow_private or is_public(str(sockaddr[0]))]
    if not allowed:
        raise _Refused(f"the target's address {found[0][1][0]} is not public (loopback, "
                       "link-local, private or reserved) and [event_sinks] "
                       "allow_private_targets is off")
    return allowed


def is_public(address: str) -> bool:
    """Whether ``address`` is on the public internet: not loopback, link-local (cloud
    metadata services), private, shared, reserved or multicast; an IPv4 address mapped
    into IPv6 is judged as itself."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


class _CheckedHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection to the addresses :func:`_addresses` allowed, within a
    deadline; the request still names the target's host."""

    addresses: list[tuple[socket.AddressFamily, Any]]
    deadline: float

    def connect(self) -> None:
        error: OSError = OSError("no address to connect to")
        for family, sockaddr in self.addresses:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("timed out")
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.settimeout(left)
                sock.connect(sockaddr)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sock = sock
            return
        raise error


class _CheckedHTTPSConnection(http.client.HTTPSConnection, _CheckedHTTPConnection):
    """:class:`_CheckedHTTPConnection` under TLS: ``HTTPSConnection.connect`` wraps
    the socket it connects (verified against the target's host name)."""


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


Sender = Callable[[str, bytes, Mapping[str, str], DeliverySettings], Answer]


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
        """One round; True when it claimed a full batch (more may be due). Each target's
        deliveries are settled as soon as its thread is done with them."""
        settings = self._settings
        with self._db.read() as session:
            if not event_outbox.any_due(session, self._clock()):
                return False
        claim = str(uuid.uuid4())
        with self._db.transaction() as session:
            taken = event_outbox.claim_due(session, self._clock, settings.batch_size,
                                           _seconds(settings.lease_seconds), claim,
                                           settings.max_attempts)
        # The lease on this process's own clock, from when the claim was taken.
        lease_ends = self._monotonic() + settings.lease_seconds - (
            self._clock() - taken.taken_at).total_seconds()
        for row in taken.given_up:
            self._gave_up(row, event_outbox.UNSETTLED)
        groups: dict[str, list[Due]] = {}
        for delivery in taken.due:
            groups.setdefault(delivery.target, []).append(delivery)
        sending = [self._pool.submit(self._deliver, rows, lease_ends)
                   for rows in groups.values()]
        for done in as_completed(sending):
            results = done.result()  # _deliver answers for every row, whatever happens
            try:
                with self._db.transaction() as session:
                    event_outbox.settle(session, claim, results, self._clock())
            except DatabaseUnavailable as exc:
                # Due again after the lease; the other targets' results may still land.
                LOG.warning("event sinks: results not written, sent again after the "
                            "lease: %s", exc.message)
                continue
            self._report(taken.due, results)
        return len(taken.due) + len(taken.given_up) >= settings.batch_size

    def _deliver(self, rows: Sequence[Due], lease_ends: float) -> list[Result]:
        """One target's deliveries, in order. Once a send fails the rest wait as long as
        it does, untried; a send is started only while it, and as long again to settle
        it, fit in the claim's lease."""
        settings = self._settings
        results: list[Result] = []
        waiting_until = None
        for row in rows:
            if waiting_until is not None:
                results.append(Result(row.id, next_attempt_at=waiting_until))
                continue
            if self._monotonic() + 2 * settings.timeout_seconds > lease_ends:
                results.append(Result(row.id, next_attempt_at=self._clock()))
                continue
            try:
                answer = self._send(row.target, row.body.encode(), self._headers(row),
                                    settings)
            except Exception as exc:  # noqa: BLE001 -- one row's failure, not the round's
                LOG.exception("event sink %s: sending event %s failed",
                              shown_target(row.target), row.event_id)
                answer = Answer(False, _error(exc))
            if answer.delivered:
                results.append(Result(row.id, delivered=True))
                continue
            later = self._clock() + _seconds(backoff_seconds(row.attempts, settings,
                                                             self._random))
            gives_up = answer.final or row.attempts >= settings.max_attempts
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
                ATTEMPT_HEADER: str(row.attempts)}

    def _report(self, due: Sequence[Due], results: Sequence[Result]) -> None:
        rows = {row.id: row for row in due}
        for result in results:
            row = rows[result.id]
            if result.delivered:
                metrics.event_delivery(metrics.DELIVERED)
            elif not result.tried:
                continue
            elif result.next_attempt_at is None:
                self._gave_up(row, result.error)
            else:
                metrics.event_delivery(metrics.RETRIED)
                LOG.info("event sink %s: event %s of stack %s not delivered (try %d of %d), "
                         "again at %s: %s", shown_target(row.target), row.event_id,
                         row.stack_id, row.attempts, self._settings.max_attempts,
                         result.next_attempt_at.isoformat(timespec="seconds"), result.error)

    @staticmethod
    def _gave_up(row: Due, error: str) -> None:
        metrics.event_delivery(metrics.GIVEN_UP)
        LOG.warning("event sink %s: gave up event %s of stack %s after %d tries: %s",
                    shown_target(row.target), row.event_id, row.stack_id, row.attempts,
                    error)


def _seconds(value: float) -> datetime.timedelta:
    return datetime.timedelta(seconds=value)
