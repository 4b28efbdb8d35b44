"""The schema check every process and command runs at start, which reads the version table
without Alembic: it must answer what Alembic answers (the walk through every revision in
tests/functional/test_migrations.py compares them at each step); and what a migration
makes of the rows before it, where it does more than add a column."""

from __future__ import annotations

import datetime
import pathlib

import pytest
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import select, text

from engine.db import leases, migration
from engine.db.models import Worker
from engine.db.session import Database
from engine.errors import SchemaBehind, StartupFailed
from tests.unit.db.conftest import NOW


def test_the_head_this_kiln_needs_is_the_newest_migration() -> None:
    # A new migration script must move HEAD_REVISION with it.
    script = ScriptDirectory(migration.script_location())
    assert script.get_current_head() == migration.HEAD_REVISION


def test_a_migrated_database_is_current(db: Database) -> None:
    assert migration.current_revision(db) == migration.HEAD_REVISION
    with db.engine.connect() as connection:
        assert MigrationContext.configure(connection).get_current_revision() == \
            migration.HEAD_REVISION
    migration.ensure_current(db)


def test_an_empty_database_has_no_revision(tmp_path: pathlib.Path) -> None:
    empty = Database(f"sqlite:///{tmp_path}/empty.sqlite")
    try:
        assert migration.current_revision(empty) is None
        with pytest.raises(SchemaBehind, match="an empty schema"):
            migration.ensure_current(empty)
    finally:
        empty.dispose()


def test_a_database_behind_is_refused_with_both_revisions(db: Database) -> None:
    with db.engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0001'"))
    with pytest.raises(SchemaBehind) as refused:
        migration.ensure_current(db)
    assert "0001" in str(refused.value) and migration.HEAD_REVISION in str(refused.value)


def test_a_version_table_with_two_revisions_is_refused(db: Database) -> None:
    with db.engine.begin() as connection:
        connection.execute(text("INSERT INTO alembic_version VALUES ('0001')"))
    with pytest.raises(StartupFailed, match="names 2 revisions"):
        migration.current_revision(db)


def test_the_liveness_migration_lets_the_workers_before_it_be_fenced(
        tmp_path: pathlib.Path) -> None:
    # Workers registered before revision 0015 knew of liveness: one that was running (an
    # engine of the old revision, which the upgrade asks to stop first) and one stopped.
    old = Database(f"sqlite:///{tmp_path}/before.sqlite")
    migration.upgrade(old, "0014")
    with old.engine.begin() as connection:
        for worker_id, stopped in (("ran", None), ("stopped", "2026-11-22 11:30:00")):
            connection.execute(text(
                "INSERT INTO workers (id, host, pid, started_at, heartbeat_at, stopped_at) "
                "VALUES (:id, 'h', 1, '2026-11-22 11:00:00', '2026-11-22 11:30:00', "
                ":stopped)"), {"id": worker_id, "stopped": stopped})
    migration.upgrade(old)
    try:
        last_heartbeat = datetime.datetime(2026, 11, 22, 11, 30, tzinfo=datetime.UTC)
        with old.read() as session:
            rows = {w.id: (w.alive_until, w.fenced_at) for w in session.scalars(select(Worker))}
        assert rows == {"ran": (last_heartbeat, None), "stopped": (last_heartbeat, None)}
        # The first worker of the new revision fences the one that no longer runs.
        with old.transaction() as session:
            renewal = leases.register_worker(session, "new", "h", 2, NOW, 2.0)
        assert [worker.id for worker in renewal.fenced] == ["ran"]
    finally:
        old.dispose()
