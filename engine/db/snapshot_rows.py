"""Rows of ``snapshots``: a stack's snapshots, made by its SNAPSHOT operations.

A snapshot row is made IN_PROGRESS with its operation, in the request's transaction, and
settled once, by whatever ends that operation (its finish, a worker giving it up, an
operator's reset): ``settle`` writes only a row still IN_PROGRESS, so the first ending
wins and later ones change nothing.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, cast

from sqlalchemy import CursorResult, delete, func, select
from sqlalchemy.orm import Session

from engine.db.models import Operation, Snapshot, Stack
from engine.errors import SnapshotNotFound
from engine.vocabulary import Action, Status


def add_snapshot(session: Session, stack: Stack, name: str | None, now: datetime.datetime,
                 snapshot_id: str | None = None) -> Snapshot:
    snapshot = Snapshot(id=snapshot_id or str(uuid.uuid4()), stack_id=stack.id,
                        tenant_id=stack.tenant_id, name=name, status=Status.IN_PROGRESS,
                        status_reason=None, data=None, created_at=now)
    session.add(snapshot)
    return snapshot


def get_snapshot(session: Session, tenant_id: str, stack: Stack, snapshot_id: str) -> Snapshot:
    """The tenant's snapshot ``snapshot_id`` of ``stack``; SnapshotNotFound as Heat says
    it: no such snapshot of the tenant's, or one of another stack."""
    snapshot = session.get(Snapshot, snapshot_id)
    if snapshot is None or snapshot.tenant_id != tenant_id:
        raise SnapshotNotFound(snapshot=snapshot_id)
    if snapshot.stack_id != stack.id:
        raise SnapshotNotFound(snapshot=snapshot_id, stack=stack.name)
    return snapshot


def list_snapshots(session: Session, stack_id: str) -> Sequence[Snapshot]:
    """The stack's snapshots, oldest first."""
    return session.scalars(select(Snapshot).where(Snapshot.stack_id == stack_id)
                           .order_by(Snapshot.created_at, Snapshot.id)).all()


def count_snapshots(session: Session, stack_id: str) -> int:
    return int(session.scalar(select(func.count()).select_from(Snapshot)
                              .where(Snapshot.stack_id == stack_id)) or 0)


def delete_snapshot(session: Session, snapshot: Snapshot) -> None:
    """A statement, not the ORM's delete: another delete of it (or its stack's) may have
    taken the row since it was read, and that is a 404 here, not the ORM's StaleDataError."""
    # Without RETURNING, a DELETE's result is a CursorResult, which carries its rowcount.
    deleted = cast("CursorResult[Any]", session.execute(
        delete(Snapshot).where(Snapshot.id == snapshot.id),
        execution_options={"synchronize_session": False}))
    if deleted.rowcount != 1:
        raise SnapshotNotFound(snapshot=snapshot.id)


def delete_stack_snapshots(session: Session, stack_id: str) -> None:
    """Every snapshot of the stack: Heat deletes them with the stack (and abandon, a
    delete that keeps the resources, deletes them too)."""
    session.execute(delete(Snapshot).where(Snapshot.stack_id == stack_id))


def settle(session: Session, operation: Operation, status: str, reason: str,
           now: datetime.datetime, data: Mapping[str, Any] | None = None) -> None:
    """The end of a SNAPSHOT operation (none for any other): its snapshot takes
    ``status`` and ``reason`` (the stack's, as Heat copies them) and ``data`` when given,
    unless something ended it already."""
    if operation.action != Action.SNAPSHOT:
        return
    target = (operation.payload or {}).get("snapshot")
    snapshot = session.get(Snapshot, target["id"]) if target else None
    if snapshot is None or snapshot.status != Status.IN_PROGRESS:
        return  # deleted meanwhile (only a settled one can be), or settled already
    snapshot.status, snapshot.status_reason, snapshot.updated_at = status, reason, now
    if data is not None:
        snapshot.data = dict(data)
