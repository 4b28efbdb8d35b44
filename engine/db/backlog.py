"""The operations no worker has started: the backlog the API's back-pressure bounds
(``engine.services.backlog``), read on every request that would add to it, so counted
only up to the bound.

Not started means never claimed (``attempt`` 0): a new operation, or one queued behind its
stack's previous operation. One a worker has begun (its pre-ops, its plan; or parked at an
approval gate) is the workers' work in hand, not backlog.
"""

from __future__ import annotations

import datetime

from sqlalchemy import ColumnElement, func, literal, select
from sqlalchemy.orm import Session

from engine.db.models import Operation
from engine.vocabulary import OperationState


def _unstarted() -> ColumnElement[bool]:
    # The state leads ix_operations_state_lease_expires_at: only PENDING rows are read.
    return (Operation.state == OperationState.PENDING) & (Operation.attempt == 0)


def count_unstarted(session: Session, up_to: int) -> int:
    """How many operations wait for their first worker, counted up to ``up_to`` (the
    bound): the cost stays that of ``up_to`` index entries however long the queue."""
    some = select(literal(1)).where(_unstarted()).limit(up_to).subquery()
    return session.scalar(select(func.count()).select_from(some)) or 0


def oldest_unstarted(session: Session) -> datetime.datetime | None:
    """When the operation waiting longest for its first worker was queued."""
    return session.scalar(select(func.min(Operation.created_at)).where(_unstarted()))
