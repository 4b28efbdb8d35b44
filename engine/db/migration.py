"""Alembic, configured in code: upgrade, current, check, and the refusal to start on a
schema that is behind.

The scripts live in the top-level ``migrations/`` folder. An installed wheel ships them as
``engine.migrations``; a source checkout (editable install) has them beside ``engine/``.

The refusal (:func:`ensure_current`) runs at the start of every Kiln process and of every
``kiln-manage`` command but ``db``'s, so it does without Alembic, whose import costs each
of them some 90 ms of CPU: it reads the version table with one query and compares it with
:data:`HEAD_REVISION`. Alembic is imported by the functions that migrate or compare.
"""

from __future__ import annotations

import importlib.util
import pathlib
from typing import TYPE_CHECKING, Any

from sqlalchemy import inspect, text

from engine.db import models  # noqa: F401 -- puts the tables on Base.metadata
from engine.db.base import Base
from engine.db.session import Database, map_database_errors
from engine.errors import SchemaBehind, StartupFailed

if TYPE_CHECKING:
    from alembic.config import Config

#: The newest revision of ``migrations/``: the schema this Kiln's models describe. Written
#: here, not read from the scripts, because reading them takes Alembic (see above);
#: tests/unit/db/test_migration.py fails until a new migration moves it.
HEAD_REVISION = "0019"
#: Alembic's version table (its default name): one row, the revision the database is at.
VERSION_TABLE = "alembic_version"


def script_location() -> str:
    spec = importlib.util.find_spec("engine.migrations")
    if spec is not None and spec.submodule_search_locations:
        return str(list(spec.submodule_search_locations)[0])
    checkout = pathlib.Path(__file__).resolve().parents[2] / "migrations"
    if (checkout / "env.py").exists():
        return str(checkout)
    raise StartupFailed(reason="Kiln's migration scripts are missing from this installation")


def alembic_config(database: Database) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", script_location())
    config.set_main_option("sqlalchemy.url", database.url.replace("%", "%%"))
    return config


def upgrade(database: Database, revision: str = HEAD_REVISION) -> None:
    """To ``revision``; by default to the schema this Kiln checks for at start, which is
    the scripts' head while the unit test holds."""
    from alembic import command

    config = alembic_config(database)
    with map_database_errors(), database.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def downgrade(database: Database, revision: str) -> None:
    from alembic import command

    config = alembic_config(database)
    with map_database_errors(), database.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def current_revision(database: Database) -> str | None:
    """The revision the database is at, None when it has no schema: what Alembic's
    ``MigrationContext.get_current_revision`` answers, without importing Alembic."""
    with map_database_errors(), database.engine.connect() as connection:
        if not inspect(connection).has_table(VERSION_TABLE):
            return None
        revisions: list[str] = list(
            connection.scalars(text(f"SELECT version_num FROM {VERSION_TABLE}")))
    if len(revisions) > 1:  # only a branched history leaves more; Kiln's is one chain
        raise StartupFailed(reason=f"the database's {VERSION_TABLE} table names "
                                   f"{len(revisions)} revisions: {', '.join(revisions)}")
    return revisions[0] if revisions else None


def ensure_current(database: Database) -> None:
    """Raise ``SchemaBehind`` unless the database is at the newest revision."""
    current = current_revision(database)
    if current != HEAD_REVISION:
        raise SchemaBehind(current=current or "an empty schema", head=HEAD_REVISION)


PLUGIN_TABLE_PREFIX = "lifecycle_"


def schema_differences(database: Database) -> list[str]:
    """How the database's tables differ from the models (empty when they match): what
    ``kiln-manage db check`` reports, so a migration that forgot a column is caught."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    with map_database_errors(), database.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={
            "compare_type": True, "include_object": _kilns_own})
        return [_describe(diff) for diff in compare_metadata(context, Base.metadata)]


def _kilns_own(item: Any, name: str | None, kind: str, reflected: bool,
               _compare_to: Any) -> bool:
    """Leave out the tables of the built-in lifecycle plugins (``lifecycle_*``): the
    migrations create them, but their models are the plugins' own, which the engine
    does not import."""
    table = name if kind == "table" else getattr(getattr(item, "table", None), "name", "")
    return not (reflected and str(table).startswith(PLUGIN_TABLE_PREFIX)
                and table not in _model_tables())


def _model_tables() -> set[str]:
    return set(Base.metadata.tables)


def _describe(diff: Any) -> str:
    if isinstance(diff, list):  # column modifications come grouped
        return "; ".join(_describe(item) for item in diff)
    kind, *details = diff
    named = [getattr(d, "name", None) or str(d) for d in details if d is not None][:3]
    return f"{kind} {' '.join(str(n) for n in named)}".strip()
