"""Database.retrying: a transaction PostgreSQL aborts as a deadlock runs again, on a real
PostgreSQL deadlock between two connections."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import psycopg
import pytest
import sqlalchemy as sa

from engine.db.session import Database
from engine.errors import DatabaseUnavailable

ADMIN = "postgresql://postgres@127.0.0.1:5432/test"


@pytest.fixture
def database() -> Iterator[Database]:
    name = f"kiln_retry_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    db = Database(f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}")
    with db.transaction() as session:
        session.execute(sa.text("CREATE TABLE t (id int primary key, v int)"))
        session.execute(sa.text("INSERT INTO t VALUES (1, 0), (2, 0)"))
    try:
        yield db
    finally:
        db.dispose()
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def crossed_updates(db: Database, first: int, second: int, both_locked: threading.Barrier,
                    attempts: int, runs: list[int], errors: list[BaseException]) -> None:
    """Lock row ``first``, wait for the other thread to lock the other row, then ask for
    ``second``: one of the two transactions is chosen as the deadlock victim."""
    try:
        for attempt in db.retrying(attempts):
            with attempt as session:
                runs.append(first)
                session.execute(sa.text("UPDATE t SET v = v + 1 WHERE id = :id"),
                                {"id": first})
                if len(runs) <= 2:  # only the first round collides
                    both_locked.wait(timeout=10)
                session.execute(sa.text("UPDATE t SET v = v + 1 WHERE id = :id"),
                                {"id": second})
    except BaseException as exc:  # noqa: BLE001 -- reported to the test
        errors.append(exc)


def run_pair(db: Database, attempts: int) -> tuple[list[int], list[BaseException]]:
    barrier = threading.Barrier(2)
    runs: list[int] = []
    errors: list[BaseException] = []
    threads = [threading.Thread(target=crossed_updates,
                                args=(db, a, b, barrier, attempts, runs, errors))
               for a, b in ((1, 2), (2, 1))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return runs, errors


def test_a_deadlocked_transaction_runs_again_and_both_commit(database: Database) -> None:
    # Room for more than one retry: a retry can lock its first row again before the other
    # transaction, still waiting, takes it, and a second deadlock follows (seen under load).
    runs, errors = run_pair(database, attempts=5)

    assert errors == []
    assert set(runs) == {1, 2} and len(runs) >= 3  # both ran, and a victim ran again
    with database.read() as session:
        assert session.execute(sa.text("SELECT sum(v) FROM t")).scalar() == 4


def test_without_retries_the_victim_gets_database_unavailable(database: Database) -> None:
    _, errors = run_pair(database, attempts=1)

    assert len(errors) == 1 and isinstance(errors[0], DatabaseUnavailable)
    assert "deadlock detected" in str(errors[0])
