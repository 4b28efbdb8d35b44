"""What the workers have before them, for the queue-depth gauges a metrics scrape reads
(``engine.metrics.QueueDepthCollector``): four aggregate queries, each answered from an
index, in one read-only unit of work (no write lock on SQLite)."""

from __future__ import annotations

import datetime

from sqlalchemy import and_, func, literal, select

from engine.clock import Clock
from engine.db import event_outbox
from engine.db.base import UTCDateTime
from engine.db.leases import claimable
from engine.db.models import Operation, Step
from engine.db.session import Database
from engine.errors import DatabaseUnavailable
from engine.metrics import QueueDepth
from engine.vocabulary import OperationState, StepState


def read_queue_depth(db: Database, clock: Clock) -> QueueDepth | None:
    """Ready steps, operations no worker has started, and the age of the oldest
    unfinished operation; None when the database does not answer (counted by
    ``map_database_errors``), so that a scrape leaves the gauges out instead of failing."""
    try:
        with db.read() as session:
            now = clock()
            ready = session.scalar(select(func.count()).select_from(Step)
                                   .where(Step.state == StepState.READY))
            # PENDING and claimable: its pre-ops and plan not yet begun (or begun by a
            # worker that died).
            waiting = session.scalar(select(func.count()).select_from(Operation).where(
                Operation.state == OperationState.PENDING,
                claimable(Operation.lease_owner, Operation.lease_expires_at,
                          literal(now, UTCDateTime()))))
            # Unfinished: the rows of the partial index that allows one per stack; but
            # not one parked for a person (an approval gate, a day's wait by default):
            # its age is not a stuck engine's.
            parked = and_(Operation.state == OperationState.PENDING,
                          Operation.lease_owner.is_(None), Operation.lease_expires_at > now)
            oldest = session.scalar(select(func.min(Operation.created_at))
                                    .where(Operation.finished_at.is_(None), ~parked))
            deliveries = event_outbox.pending_count(session)
    except DatabaseUnavailable:
        return None
    return QueueDepth(ready_steps=ready or 0, waiting_operations=waiting or 0,
                      oldest_running_operation_age_seconds=_age(now, oldest),
                      pending_event_deliveries=deliveries)


def _age(now: datetime.datetime, since: datetime.datetime | None) -> float:
    # MIN keeps the column's type, so ``since`` comes back timezone-aware on SQLite too.
    return 0.0 if since is None else max(0.0, (now - since).total_seconds())
