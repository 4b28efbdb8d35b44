"""The database session factory."""

from __future__ import annotations

import pathlib
import threading
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import DBAPIError

from engine import bootstrap, config
from engine.db.session import Database, after_commit
from engine.errors import DatabaseUnavailable
from tests.unit.metric_deltas import Moved

# Nothing is connected to: the driver's arguments are caught before the network.
POSTGRESQL = "postgresql+psycopg://kiln@db.invalid/kiln"


class _Caught(Exception):
    """Raised in place of the driver's connect, once its arguments are seen."""


def driver_arguments(database: Database) -> dict[str, Any]:
    """The keyword arguments the engine hands ``psycopg.connect`` for a new connection."""
    seen: dict[str, Any] = {}

    @event.listens_for(database.engine, "do_connect")
    def _catch(_dialect: Any, _record: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        seen.update(kwargs)
        raise _Caught

    with pytest.raises(_Caught):
        database.engine.connect()
    return seen


def test_a_failed_statement_s_error_does_not_carry_its_values(tmp_path: pathlib.Path) -> None:
    # Errors are logged (the poison rule logs every unexpected one): a hidden parameter
    # bound into a statement must not reach that text.
    database = Database(f"sqlite:///{tmp_path / 'kiln.sqlite'}")
    try:
        with pytest.raises(DBAPIError) as caught, database.engine.connect() as connection:
            connection.execute(text("INSERT INTO no_such_table VALUES (:secret)"),
                               {"secret": "hunter2"})
    finally:
        database.dispose()

    assert "no_such_table" in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_a_postgresql_connect_is_bounded_by_the_connect_timeout() -> None:
    # Without it psycopg waits 130 s for a host that drops packets.
    assert driver_arguments(Database(POSTGRESQL))["connect_timeout"] == 10
    assert driver_arguments(Database(POSTGRESQL, connect_timeout_seconds=3)
                            )["connect_timeout"] == 3


def test_a_connect_timeout_in_the_url_is_kept() -> None:
    database = Database(f"{POSTGRESQL}?connect_timeout=7", connect_timeout_seconds=3)
    assert driver_arguments(database)["connect_timeout"] == "7"


def test_the_database_option_reaches_the_driver(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kiln/kiln.conf of the machine
    monkeypatch.setenv("OS_DATABASE__CONNECTION", POSTGRESQL)
    monkeypatch.setenv("OS_DATABASE__CONNECT_TIMEOUT_SECONDS", "4")
    kiln = bootstrap.build(config.load([]), check_schema=False)
    try:
        assert driver_arguments(kiln.db)["connect_timeout"] == 4
    finally:
        kiln.db.dispose()


def test_after_commit_runs_once_the_transaction_commits_and_never_after_a_rollback(
        db: Database) -> None:
    ran: list[str] = []
    with db.transaction() as session:
        after_commit(session, lambda: ran.append("committed"))
        with session.begin_nested() as savepoint:
            after_commit(session, lambda: ran.append("undone"))
            savepoint.rollback()  # the transaction's calls stay; the savepoint's go
        with session.begin_nested():
            after_commit(session, lambda: ran.append("released"))
        assert ran == [], "a savepoint's release is no commit"
    assert ran == ["committed", "released"]

    with pytest.raises(RuntimeError), db.transaction() as session:
        after_commit(session, lambda: ran.append("rolled back"))
        raise RuntimeError
    with db.transaction():
        pass  # the next transaction runs nothing left over
    assert ran == ["committed", "released"]


def test_a_database_that_does_not_answer_is_counted(tmp_path: pathlib.Path) -> None:
    moved = Moved()
    database = Database(f"sqlite:///{tmp_path}/missing/kiln.sqlite")
    try:
        with pytest.raises(DatabaseUnavailable), database.read() as session:
            session.execute(text("SELECT 1"))
    finally:
        database.dispose()
    assert moved("kiln_database_errors_total", kind="unavailable") == 1


def test_sqlite_writers_wait_their_turn_and_a_reader_waits_for_none(
        tmp_path: pathlib.Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'kiln.sqlite'}")
    try:
        with database.transaction() as session:
            session.execute(text("CREATE TABLE t (n INTEGER)"))
        done: list[str] = []
        inside = threading.Event()
        leave = threading.Event()

        def first() -> None:
            with database.transaction() as session:
                session.execute(text("INSERT INTO t VALUES (1)"))
                inside.set()
                leave.wait(5)
            done.append("first")

        def second() -> None:
            with database.transaction() as session:
                session.execute(text("INSERT INTO t VALUES (2)"))
            done.append("second")

        threads = [threading.Thread(target=first)]
        threads[0].start()
        inside.wait(5)
        threads.append(threading.Thread(target=second))
        threads[1].start()
        with database.read() as session:  # never queued behind the writers
            assert session.scalar(text("SELECT count(*) FROM t")) == 0
        leave.set()
        for thread in threads:
            thread.join(10)
        assert done == ["first", "second"]
    finally:
        database.dispose()


def test_a_rolled_back_sqlite_write_gives_its_turn_back(tmp_path: pathlib.Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'kiln.sqlite'}", sqlite_busy_timeout_ms=200)
    try:
        with pytest.raises(DatabaseUnavailable), database.transaction() as session:
            session.execute(text("INSERT INTO no_such_table VALUES (1)"))
        wrote: list[bool] = []

        def other() -> None:  # another thread: it would wait for a turn never given back
            with database.transaction() as session:
                session.execute(text("CREATE TABLE t (n INTEGER)"))
            wrote.append(True)

        thread = threading.Thread(target=other)
        thread.start()
        thread.join(5)
        assert wrote == [True]
    finally:
        database.dispose()


def test_sqlite_lookups_read_what_is_committed_with_no_transaction_open(
        tmp_path: pathlib.Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'kiln.sqlite'}")
    try:
        with database.transaction() as session:
            session.execute(text("CREATE TABLE t (n INTEGER)"))
            session.execute(text("INSERT INTO t VALUES (1)"))
        inside, leave = threading.Event(), threading.Event()

        def writer() -> None:  # holds the write lock, a row written and not committed
            with database.transaction() as session:
                session.execute(text("INSERT INTO t VALUES (2)"))
                inside.set()
                leave.wait(5)

        thread = threading.Thread(target=writer)
        thread.start()
        inside.wait(5)
        try:
            with database.lookups() as reads:
                assert reads.scalar(text("SELECT count(*) FROM t")) == 1
                # No BEGIN was issued: the statement was its own snapshot, now ended.
                assert not reads.connection.driver_connection.in_transaction
        finally:
            leave.set()
            thread.join(10)
        with database.lookups() as reads:
            assert reads.scalar(text("SELECT count(*) FROM t")) == 2
    finally:
        database.dispose()


def test_a_lookup_s_database_failure_is_unavailable(tmp_path: pathlib.Path) -> None:
    database = Database(f"sqlite:///{tmp_path}/missing/kiln.sqlite")
    try:
        with pytest.raises(DatabaseUnavailable), database.lookups() as reads:
            reads.execute(text("SELECT 1"))
    finally:
        database.dispose()
