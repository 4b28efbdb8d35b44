"""The engine workers as an operator sees them (``GET /services``, ``kiln-manage``): read
from the rows each worker registers and heartbeats in the database."""

from __future__ import annotations

import dataclasses
import datetime

from engine.clock import Clock
from engine.context import RequestContext
from engine.db import admin, leases
from engine.db.models import Worker
from engine.db.session import Database
from engine.errors import AmbiguousName, EntityNotFound, ServicesForbidden, WorkerAlive


@dataclasses.dataclass(frozen=True)
class WorkerRecord:
    id: str
    host: str
    pid: int
    started_at: datetime.datetime
    heartbeat_at: datetime.datetime
    stopped_at: datetime.datetime | None
    steps_held: int
    # Its liveness renewed within a lease, not stopped, not fenced: what it claimed is
    # its own. A dead worker is fenced by another once its liveness lapses, and the
    # other workers resume its work.
    alive: bool


class WorkerService:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def list_workers(self, ctx: RequestContext | None = None) -> list[WorkerRecord]:
        """Every worker that registered; ``ctx`` (a tenant's request) must be an admin's.
        The operator's CLI, which reads the database directly, passes none."""
        if ctx is not None and not ctx.is_admin:
            raise ServicesForbidden()
        now = self._clock()
        with self._db.read() as session:
            rows = leases.list_workers(session, now)
        return [self._record(worker, held, now) for worker, held in rows]

    def forget(self, id_or_prefix: str) -> WorkerRecord:
        """Remove a dead worker's row (``kiln-manage worker forget``). Its liveness has
        lapsed already, so nothing of its work depends on the row (what a worker with no
        row held may be claimed); a live worker is refused, since it would only register
        again."""
        now = self._clock()
        with self._db.transaction() as session:
            found = admin.find_workers(session, id_or_prefix)
            if len(found) > 1:
                raise AmbiguousName(kind="Worker", name=id_or_prefix,
                                    choices=", ".join(w.id for w in found),
                                    hint="give more of the id")
            if not found:
                raise EntityNotFound(entity="Worker", name=id_or_prefix)
            record = self._record(found[0], 0, now)
            if record.alive:
                raise WorkerAlive(id=record.id, host=record.host, pid=record.pid)
            admin.delete_worker(session, record.id)
        return record

    def _record(self, worker: Worker, held: int, now: datetime.datetime) -> WorkerRecord:
        return WorkerRecord(
            id=worker.id, host=worker.host, pid=worker.pid, started_at=worker.started_at,
            heartbeat_at=worker.heartbeat_at, stopped_at=worker.stopped_at, steps_held=held,
            alive=leases.is_alive(worker, now))
