"""engine.db.snapshot_rows on PostgreSQL (a real server), in real concurrent transactions:
of two deletes of one snapshot, each having read it, one deletes it and the other is
Heat's 404, never the ORM's StaleDataError (a 500)."""

from __future__ import annotations

import threading

import pytest

from engine.db import snapshot_rows
from engine.db.models import Snapshot
from engine.db.session import Database
from engine.errors import SnapshotNotFound
from tests.unit.db.conftest import NOW, add_stack, add_tenant

pytestmark = pytest.mark.postgresql


def test_of_two_deletes_of_a_snapshot_the_second_finds_none(
        postgresql_database: Database) -> None:
    db = postgresql_database
    with db.transaction() as session:
        stack = add_stack(session, add_tenant(session).id)
        snapshot_id = snapshot_rows.add_snapshot(session, stack, "s", NOW).id

    read, go = threading.Event(), threading.Event()
    raised: list[BaseException | None] = []

    def second() -> None:
        try:
            with db.transaction() as session:
                snapshot = snapshot_rows.get_snapshot(session, stack.tenant_id, stack,
                                                      snapshot_id)
                read.set()
                go.wait(5)
                snapshot_rows.delete_snapshot(session, snapshot)
        except BaseException as exc:  # noqa: BLE001 -- judged below
            raised.append(exc)
        else:
            raised.append(None)

    deleting = threading.Thread(target=second)
    deleting.start()
    assert read.wait(5)
    with db.transaction() as session:
        snapshot_rows.delete_snapshot(
            session, snapshot_rows.get_snapshot(session, stack.tenant_id, stack, snapshot_id))
        go.set()
        deleting.join(0.3)
        assert deleting.is_alive(), "it waits on the row the first delete holds"
    deleting.join(10)
    assert len(raised) == 1 and isinstance(raised[0], SnapshotNotFound), repr(raised)
    assert raised[0].message == f"Snapshot with id {snapshot_id} not found"
    with db.read() as session:
        assert session.get(Snapshot, snapshot_id) is None
