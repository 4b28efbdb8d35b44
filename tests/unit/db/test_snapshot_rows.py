"""engine.db.snapshot_rows: a snapshot is settled once, by the first ending of its
SNAPSHOT operation, however the operation ends (``transitions``); a delete that lost a
race to another is a SnapshotNotFound."""

from __future__ import annotations

import pytest
from sqlalchemy import delete

from engine.db import snapshot_rows, transitions
from engine.db.models import Snapshot
from engine.db.session import Database
from engine.errors import SnapshotNotFound
from engine.vocabulary import Action, Status
from tests.unit.db.conftest import NOW, add_operation, add_stack, add_tenant, later


def test_the_first_ending_settles_the_snapshot_and_later_ones_change_nothing(
        db: Database) -> None:
    with db.transaction() as session:
        stack = add_stack(session, add_tenant(session).id, action=Action.SNAPSHOT,
                          status=Status.IN_PROGRESS)
        snapshot = snapshot_rows.add_snapshot(session, stack, "s", NOW)
        operation = add_operation(session, stack, Action.SNAPSHOT,
                                  payload={"snapshot": {"id": snapshot.id}})
        other = add_operation(session, stack, Action.CHECK, finished_at=NOW)

        snapshot_rows.settle(session, other, Status.COMPLETE, "not mine", later(1))
        assert (snapshot.status, snapshot.status_reason) == (Status.IN_PROGRESS, None)
        # An operator's reset: FAILED, even when it tells the stack COMPLETE.
        transitions.end_operation(session, stack, operation, "Reset by operator x",
                                  later(2), outcome=Status.COMPLETE)
        snapshot_rows.settle(session, operation, Status.COMPLETE, "late", later(3),
                             data={"resources": {}})

        assert (snapshot.status, snapshot.status_reason, snapshot.data) == (
            Status.FAILED, "Reset by operator x", None)
        assert snapshot_rows.count_snapshots(session, stack.id) == 1
        snapshot_rows.delete_stack_snapshots(session, stack.id)
        assert snapshot_rows.list_snapshots(session, stack.id) == []


def test_a_delete_of_a_snapshot_deleted_since_it_was_read_is_not_found(db: Database) -> None:
    with db.transaction() as session:
        stack = add_stack(session, add_tenant(session).id)
        kept = snapshot_rows.add_snapshot(session, stack, "kept", NOW)
        gone = snapshot_rows.add_snapshot(session, stack, "gone", NOW)
    with db.transaction() as session:
        snapshot = snapshot_rows.get_snapshot(session, stack.tenant_id, stack, gone.id)
        # What a concurrent delete (of it, or of its stack's snapshots) committed after
        # this read, on PostgreSQL: the row is gone, the session does not know.
        session.execute(delete(Snapshot).where(Snapshot.id == gone.id),
                        execution_options={"synchronize_session": False})
        with pytest.raises(SnapshotNotFound, match=f"^Snapshot with id {gone.id} not found$"):
            snapshot_rows.delete_snapshot(session, snapshot)
            session.flush()  # where the ORM's delete failed, with a StaleDataError (a 500)
    with db.transaction() as session:
        snapshot_rows.delete_snapshot(
            session, snapshot_rows.get_snapshot(session, stack.tenant_id, stack, kept.id))
        assert snapshot_rows.list_snapshots(session, stack.id) == []
