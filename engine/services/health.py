"""Whether this process can serve: the checks behind ``GET /healthcheck``
(specs/health-and-metrics.rst).

A load balancer asks every few seconds, so a check is one ``SELECT 1`` with a deadline:
an answer that does not come within it is a failure, however long the driver would wait
(a PostgreSQL host that drops packets holds a connect for minutes). The probe runs in a
daemon thread of its own that the request only waits for, and requests that arrive while
one is out share it, so a hung database costs one thread, not one per request.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time

from engine.db import health
from engine.db.session import Database

LOG = logging.getLogger(__name__)

#: How long a request waits for ``SELECT 1``: under the 5 s a load balancer's check
#: usually allows, so the answer is our 503 and not the balancer's own timeout.
TIMEOUT_SECONDS = 2.0
OK = "OK"
DATABASE_UNAVAILABLE = "DATABASE UNAVAILABLE"


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """One check, in oslo.middleware's terms: ``reason`` is what every caller sees,
    ``details`` only the detailed view."""

    name: str
    available: bool
    reason: str
    details: str


class _Probe:
    """One ``SELECT 1`` in a daemon thread: a probe that never returns keeps no process
    from exiting."""

    def __init__(self, db: Database) -> None:
        self.finished = threading.Event()
        self.error: str | None = None
        self.seconds = 0.0
        threading.Thread(target=self._run, args=(db,), name="kiln-healthcheck",
                         daemon=True).start()

    def _run(self, db: Database) -> None:
        started = time.monotonic()
        try:
            self.error = health.ping(db)
        except Exception as exc:  # a health check answers, whatever failed
            self.error = type(exc).__name__
        finally:
            self.seconds = time.monotonic() - started
            self.finished.set()


class HealthService:
    def __init__(self, db: Database, timeout_seconds: float = TIMEOUT_SECONDS) -> None:
        self._db = db
        self._timeout = timeout_seconds
        self._lock = threading.Lock()
        self._probe: _Probe | None = None
        self._available = True  # what the last check found, to log only the changes

    def check(self) -> list[CheckResult]:
        return [self._database()]

    def _database(self) -> CheckResult:
        with self._lock:
            if self._probe is None or self._probe.finished.is_set():
                self._probe = _Probe(self._db)
            probe = self._probe
        if not probe.finished.wait(self._timeout):
            error: str | None = f"SELECT 1 did not answer within {self._timeout:g} s"
        else:
            error = probe.error
        self._log_change(error)
        if error is None:
            return CheckResult("database", True, OK,
                               f"SELECT 1 answered in {probe.seconds * 1000:.1f} ms")
        return CheckResult("database", False, DATABASE_UNAVAILABLE, error)

    def _log_change(self, error: str | None) -> None:
        """One line when the database goes away and one when it is back, not one per
        probe: a balancer asks every few seconds."""
        with self._lock:
            changed = self._available != (error is None)
            self._available = error is None
        if changed and error is not None:
            LOG.warning("Health check: the database is unavailable: %s", error)
        elif changed:
            LOG.info("Health check: the database answers again")
