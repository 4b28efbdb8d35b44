"""``Database.lookups`` on a real PostgreSQL server: autocommit while it is held, and the
pooled connection transactional again for the next ``transaction()``."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from engine.db.session import Database
from tests.functional.conftest import fresh_database

pytestmark = pytest.mark.postgresql


def test_lookups_run_in_autocommit_and_hand_back_a_transactional_connection() -> None:
    with fresh_database() as url:
        database = Database(url, pool_size=1)  # one pooled connection: the same each time
        try:
            with database.transaction() as session:
                session.execute(text("CREATE TABLE t (n integer)"))
            with database.lookups() as reads:
                assert reads.connection.driver_connection.autocommit
                assert reads.scalar(text("SELECT count(*) FROM t")) == 0
            with pytest.raises(RuntimeError), database.transaction() as session:
                session.execute(text("INSERT INTO t VALUES (1)"))
                raise RuntimeError("rolled back, so not autocommitted")
            with database.lookups() as reads:
                assert reads.scalar(text("SELECT count(*) FROM t")) == 0
        finally:
            database.dispose()
