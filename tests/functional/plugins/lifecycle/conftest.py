"""The lifecycle plugins' stores on PostgreSQL: a module runs its SQLite unit tests again
(``unit_tests_taking``), and this ``database`` answers them."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from engine.db.session import Database


@pytest.fixture
def database(postgresql_database: Database, request: pytest.FixtureRequest) -> Database:
    """The module's database, emptied of the rows an earlier test left in the module's
    ``PLUGIN_TABLE`` (the plugin's store)."""
    with postgresql_database.transaction() as session:
        session.execute(sa.delete(request.module.PLUGIN_TABLE))
    return postgresql_database
