"""Migrations on SQLite and PostgreSQL: empty -> head, models match, one head, walk back."""

from __future__ import annotations

import pathlib
import subprocess
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from engine.db import migration, models  # noqa: F401  (tables on the metadata)
from engine.db.base import Base
from engine.db.session import Database
from engine.errors import SchemaBehind
from plugins.lifecycle.placement import store as placement_store
from plugins.lifecycle.quota import store as quota_store
from tests.functional import servers
from tests.functional.conftest import PG_ADMIN_URL


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database(request: pytest.FixtureRequest, tmp_path: pathlib.Path
                   ) -> Iterator[Database]:
    if request.param == "sqlite":
        db = Database(f"sqlite:///{tmp_path}/migrations.sqlite")
        yield db
        db.dispose()
        return
    name = f"kiln_migrations_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    db = Database(f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}")
    try:
        yield db
    finally:
        db.dispose()
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_upgrade_from_empty_matches_the_models(empty_database: Database) -> None:
    with pytest.raises(SchemaBehind):
        migration.ensure_current(empty_database)
    migration.upgrade(empty_database)
    migration.ensure_current(empty_database)
    with empty_database.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        # The built-in lifecycle plugins own their tables; the one migration chain
        # creates them too.
        metadata = [Base.metadata, quota_store.METADATA, placement_store.METADATA]
        assert compare_metadata(context, metadata) == []  # type: ignore[arg-type]


def test_every_revision_walks_down_and_up(empty_database: Database) -> None:
    script = ScriptDirectory.from_config(migration.alembic_config(empty_database))
    revisions = list(reversed(list(script.walk_revisions())))
    migration.upgrade(empty_database)
    for revision in reversed(revisions):
        migration.downgrade(empty_database, revision.down_revision or "base")
    assert migration.current_revision(empty_database) is None
    for revision in revisions:
        migration.upgrade(empty_database, revision.revision)
        assert migration.current_revision(empty_database) == revision.revision


def test_one_base_and_one_head(tmp_path: pathlib.Path) -> None:
    script = ScriptDirectory.from_config(
        migration.alembic_config(Database(f"sqlite:///{tmp_path}/x.sqlite")))
    assert len(script.get_heads()) == 1
    assert len(script.get_bases()) == 1


def test_processes_refuse_to_start_on_a_schema_that_is_behind(tmp_path: pathlib.Path) -> None:
    env = servers.kiln_environment(tmp_path, None, servers.free_port())
    (tmp_path / "kiln.sqlite").touch()  # an empty database: no database at all is refused
    for command in ("kiln-all", "kiln-engine", "kiln-api"):
        result = subprocess.run([str(servers.BIN / command)], env=env, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 1, (command, result.stdout, result.stderr)
        assert "Run `kiln-manage db upgrade` first." in result.stderr
