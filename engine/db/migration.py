"""Alembic, configured in code: upgrade, current, check, and the refusal to start on a
schema that is behind.

The scripts live in the top-level ``migrations/`` folder. An installed wheel ships them as
``engine.migrations``; a source checkout (editable install) has them beside ``engine/``.
"""

from __future__ import annotations

import importlib.util
import pathlib

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from engine.db.session import Database, map_database_errors
from engine.errors import SchemaBehind, StartupFailed


def script_location() -> str:
    spec = importlib.util.find_spec("engine.migrations")
    if spec is not None and spec.submodule_search_locations:
        return str(list(spec.submodule_search_locations)[0])
    checkout = pathlib.Path(__file__).resolve().parents[2] / "migrations"
    if (checkout / "env.py").exists():
        return str(checkout)
    raise StartupFailed(reason="Kiln's migration scripts are missing from this installation")


def alembic_config(database: Database) -> Config:
    config = Config()
    config.set_main_option("script_location", script_location())
    config.set_main_option("sqlalchemy.url", database.url.replace("%", "%%"))
    return config


def upgrade(database: Database, revision: str = "head") -> None:
    config = alembic_config(database)
    with map_database_errors(), database.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def downgrade(database: Database, revision: str) -> None:
    config = alembic_config(database)
    with map_database_errors(), database.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def current_revision(database: Database) -> str | None:
    with map_database_errors(), database.engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision(database: Database) -> str:
    head = ScriptDirectory.from_config(alembic_config(database)).get_current_head()
    assert head is not None, "the migrations folder has no revisions"
    return head


def ensure_current(database: Database) -> None:
    """Raise ``SchemaBehind`` unless the database is at the newest revision."""
    current, head = current_revision(database), head_revision(database)
    if current != head:
        raise SchemaBehind(current=current or "an empty schema", head=head)
