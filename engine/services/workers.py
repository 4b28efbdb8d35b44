"""The engine workers as an operator sees them (``GET /services``, ``kiln-manage``): read
from the rows each worker registers and heartbeats in the database."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable

from engine.context import RequestContext
from engine.db import leases
from engine.db.session import Database
from engine.errors import ServicesForbidden

Clock = Callable[[], datetime.datetime]


@dataclasses.dataclass(frozen=True)
class WorkerRecord:
    id: str
    host: str
    pid: int
    started_at: datetime.datetime
    heartbeat_at: datetime.datetime
    stopped_at: datetime.datetime | None
    steps_held: int
    # Heartbeating within a lease and not stopped: its leases are being kept. A dead
    # worker's leases lapse, and other workers resume its work.
    alive: bool


class WorkerService:
    def __init__(self, db: Database, clock: Clock, lease_seconds: float) -> None:
        self._db = db
        self._clock = clock
        self._lease = datetime.timedelta(seconds=lease_seconds)

    def list_workers(self, ctx: RequestContext | None = None) -> list[WorkerRecord]:
        """Every worker that registered; ``ctx`` (a tenant's request) must be an admin's.
        The operator's CLI, which reads the database directly, passes none."""
        if ctx is not None and not ctx.is_admin:
            raise ServicesForbidden()
        now = self._clock()
        with self._db.read() as session:
            rows = leases.list_workers(session, now)
        return [WorkerRecord(id=w.id, host=w.host, pid=w.pid, started_at=w.started_at,
                             heartbeat_at=w.heartbeat_at, stopped_at=w.stopped_at,
                             steps_held=held,
                             alive=w.stopped_at is None and now - w.heartbeat_at < self._lease)
                for w, held in rows]
