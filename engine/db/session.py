"""Engine and session factory, the transaction helper, and SQLite's single-writer setup.

SQLite: WAL so readers do not block the writer; ``BEGIN IMMEDIATE`` so every writing
transaction takes the write lock up front (a deferred transaction that later tries to write
is the classic source of "database is locked"), while :meth:`Database.read` uses a plain
``BEGIN`` and never takes it, and :meth:`Database.lookups` issues none; the process's
writers queue for the lock in turn (``engine.db.write_turns``); a busy timeout; foreign
keys on.
PostgreSQL: a connection pool with pre-ping so a restarted server is reconnected to, and
a connect timeout so that an unreachable host fails a connection in seconds, not after the
operating system's TCP timeout.
"""

from __future__ import annotations

import contextlib
import logging
import os
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeAlias

from sqlalchemy import create_engine, event, make_url
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, SessionTransaction, sessionmaker

from engine import metrics
from engine.db.wakeup import WorkSignal, watch_commits
from engine.db.write_turns import WriteTurns
from engine.errors import DatabaseUnavailable

_READ_ONLY = "kiln_read_only"
_AFTER_COMMIT = "kiln_after_commit"
_SAVEPOINT_MARKS = "kiln_after_commit_marks"  # savepoint -> calls owed when it began
_HOLDS_TURN = "kiln_holds_write_turn"  # in a pooled connection's info
LOG = logging.getLogger(__name__)

#: The session type, for annotations in the layers that may not import sqlalchemy
#: (services, worker): they hand sessions to ``engine.db`` and never build queries.
DbSession: TypeAlias = Session
#: The connection :meth:`Database.lookups` hands out, for the same layers.
DbLookups: TypeAlias = Connection


class Database:
    def __init__(self, url: str, *, pool_size: int = 10, sqlite_busy_timeout_ms: int = 30000,
                 connect_timeout_seconds: int = 10) -> None:
        self.url = url
        self.engine = _make_engine(url, pool_size, sqlite_busy_timeout_ms,
                                   connect_timeout_seconds)
        self._lookups = _lookups_engine(url, self.engine, sqlite_busy_timeout_ms)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        # Fired when a transaction of this process writes work (see engine.db.wakeup).
        self.work = WorkSignal()
        watch_commits(self._sessions, self.work)
        event.listen(self._sessions, "after_transaction_create", _mark_savepoint)
        event.listen(self._sessions, "after_commit", _run_after_commit)
        event.listen(self._sessions, "after_soft_rollback", _drop_after_commit)
        self._read_sessions = sessionmaker(self.engine.execution_options(**{_READ_ONLY: True}),
                                           expire_on_commit=False)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Session]:
        """One unit of work: commit on success, roll back on any error."""
        with map_database_errors(), self._sessions() as session, session.begin():
            yield session

    @contextlib.contextmanager
    def read(self) -> Iterator[Session]:
        """A read-only unit of work. On SQLite it does not take the write lock, so API
        reads never wait for (or stall) a worker's writes."""
        with map_database_errors(), self._read_sessions() as session, session.begin():
            yield session

    @contextlib.contextmanager
    def lookups(self) -> Iterator[Connection]:
        """Reads of a row or two that need no snapshot common to them (a request's token,
        then the stack it shows): Core statements on a pooled connection, each its own
        snapshot, with no ORM session and no transaction around them (autocommit, see
        ``_lookups_engine``). An API read paid more for :meth:`read`'s session, ``BEGIN``
        and ``COMMIT`` than for its query, and on SQLite each of those calls hands the
        GIL to another request thread and waits to get it back."""
        with map_database_errors(), self._lookups.connect() as connection:
            yield connection

    def retrying(self, attempts: int = 3) -> Iterator[_Attempt]:
        """Transactions that are run again when the database aborted them as a deadlock
        or a serialisation failure (both transient on PostgreSQL)::

            for attempt in db.retrying():
                with attempt as session:
                    ...  # the whole unit of work, safe to run again
        """
        for left in range(attempts - 1, -1, -1):
            attempt = _Attempt(self, may_retry=left > 0)
            yield attempt
            if not attempt.aborted:
                return

    def dispose(self) -> None:
        self.engine.dispose()
        self._lookups.dispose()


def sqlite_file(url: str) -> str | None:
    """The absolute path of the file a SQLite URL names; None for another database or
    an in-memory one."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return os.path.abspath(str(parsed.database))


class _Attempt:
    def __init__(self, db: Database, *, may_retry: bool) -> None:
        self._transaction = db.transaction()
        self._may_retry = may_retry
        self.aborted = False

    def __enter__(self) -> Session:
        return self._transaction.__enter__()

    def __exit__(self, *exc_info: Any) -> bool:
        try:
            return bool(self._transaction.__exit__(*exc_info))
        except DatabaseUnavailable as exc:
            # Only a statement of the block can be retried: a failure at commit may
            # follow a ``return`` inside the block, which a retry could not undo.
            if not (self._may_retry and exc_info[0] is not None
                    and _transient(exc.__cause__)):
                raise
            LOG.info("transaction aborted (%s); running it again", exc.message)
            metrics.database_retry()
            self.aborted = True
            return True


def _transient(error: BaseException | None) -> bool:
    """PostgreSQL's deadlock_detected and serialization_failure."""
    return getattr(getattr(error, "orig", None), "sqlstate", None) in ("40P01", "40001")


def after_commit(session: Session, call: Callable[[], object]) -> None:
    """Run ``call`` once ``session``'s transaction has committed, never when it rolls
    back: what counts a row's change in a metric counts it once, even when the change is
    undone and made again (a round of steps redone one by one after a bug)."""
    session.info.setdefault(_AFTER_COMMIT, []).append(call)


def _mark_savepoint(session: Session, transaction: SessionTransaction) -> None:
    """Where a savepoint begins in the calls owed at commit: its rollback drops those
    added after (the work they count is undone)."""
    if transaction.nested:
        marks = session.info.setdefault(_SAVEPOINT_MARKS, weakref.WeakKeyDictionary())
        marks[transaction] = len(session.info.get(_AFTER_COMMIT, ()))


def _run_after_commit(session: Session) -> None:
    if session.in_nested_transaction():
        return  # a savepoint released: its calls wait for the transaction's commit
    for call in session.info.pop(_AFTER_COMMIT, ()):
        try:
            call()
        except Exception:  # noqa: BLE001 -- the work is committed: report, never undo
            LOG.warning("a call after a commit failed", exc_info=True)


def _drop_after_commit(session: Session, previous: SessionTransaction) -> None:
    if not previous.nested:
        session.info.pop(_AFTER_COMMIT, None)
    else:  # only what the savepoint added is undone
        mark = session.info.get(_SAVEPOINT_MARKS, {}).get(previous)
        if mark is not None:
            del session.info.get(_AFTER_COMMIT, [])[mark:]


@contextlib.contextmanager
def map_database_errors() -> Iterator[None]:
    """Connection-level failures become ``DatabaseUnavailable`` (503), cause kept, and
    are counted (``kiln_database_errors_total``)."""
    try:
        yield
    except OperationalError as exc:
        metrics.database_error(metrics.ABORTED if _transient(exc) else metrics.UNAVAILABLE)
        raise DatabaseUnavailable(reason=_first_line(exc.orig)) from exc
    except DBAPIError as exc:
        if exc.connection_invalidated:
            metrics.database_error(metrics.UNAVAILABLE)
            raise DatabaseUnavailable(reason=_first_line(exc.orig)) from exc
        raise


def _first_line(error: Any) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _make_engine(url: str, pool_size: int, busy_timeout_ms: int,
                 connect_timeout_seconds: int) -> Engine:
    # hide_parameters: a statement's error text would otherwise carry its bound values
    # (resource data, properties, hidden parameters) into the log lines that report it.
    if url.startswith("sqlite"):
        engine = _sqlite_engine(url, busy_timeout_ms)
        turns = WriteTurns()

        @event.listens_for(engine, "begin")
        def _on_begin(connection: Any) -> None:
            if connection.get_execution_options().get(_READ_ONLY):
                connection.exec_driver_sql("BEGIN")
                return
            # One turn per checkout, kept in the pooled connection's info until checkin.
            if not connection.info.get(_HOLDS_TURN):
                connection.info[_HOLDS_TURN] = turns.take(busy_timeout_ms / 1000.0)
            connection.exec_driver_sql("BEGIN IMMEDIATE")

        @event.listens_for(engine, "checkin")
        def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
            # Back in the pool: its transaction has committed or rolled back (or the
            # connection was invalidated), so SQLite's lock is free.
            if record.info.pop(_HOLDS_TURN, False):
                turns.give_back()

        return engine
    # Without connect_timeout psycopg waits 130 s, and libpq for as long as the kernel
    # retries the TCP handshake; a timeout the operator wrote into the URL stays.
    connect_args = ({} if "connect_timeout" in make_url(url).query
                    else {"connect_timeout": connect_timeout_seconds})
    return create_engine(url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True,
                         hide_parameters=True, connect_args=connect_args)


def _sqlite_engine(url: str, busy_timeout_ms: int) -> Engine:
    engine = create_engine(url, connect_args={"timeout": busy_timeout_ms / 1000.0,
                                              "check_same_thread": False},
                           hide_parameters=True)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # NOTE: take transaction control away from the sqlite3 module so that the
        # writers' engine issues the only BEGIN (its begin hook), and the lookups' engine
        # none: each statement then runs in autocommit.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    return engine


def _lookups_engine(url: str, engine: Engine, busy_timeout_ms: int) -> Engine:
    """What :meth:`Database.lookups` connects with: statements in autocommit. On
    PostgreSQL the same pool, in SQLAlchemy's ``AUTOCOMMIT`` isolation level while a
    connection is held (reset when it is handed back). On a SQLite file an engine of its
    own, with no begin hook: no ``BEGIN``, and no connection event at all, which would
    make SQLAlchemy dispatch four empty events around every statement (a lookup then
    costs about a third less). An in-memory SQLite database is one per engine, so there
    the lookups share the readers' engine, ``BEGIN`` and all."""
    if engine.dialect.name != "sqlite":
        return engine.execution_options(isolation_level="AUTOCOMMIT")
    if sqlite_file(url) is None:
        return engine.execution_options(**{_READ_ONLY: True})
    return _sqlite_engine(url, busy_timeout_ms)
