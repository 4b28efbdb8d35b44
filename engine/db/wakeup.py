"""Wake idle workers when work is written, so they can poll the database rarely.

A transaction that writes work (a new operation, ready steps) calls
:func:`work_written`. When it commits, the :class:`WorkSignal` of its own process fires
(kiln-all: the API's request wakes the worker thread beside it), and on PostgreSQL a
``NOTIFY`` goes to every process that listens (:class:`WorkListener`: other engines).
The notification is only a hint: a worker that misses it (not yet listening, the
connection lost) finds the work at its next idle poll, so nothing depends on delivery.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, SessionTransaction

LOG = logging.getLogger(__name__)
CHANNEL = "kiln_work"
_WRITTEN = "kiln_work_written"
RECONNECT_SECONDS = 1.0


class WorkSignal:
    """A process-local "there may be work" flag an idle worker waits on."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def wait(self, timeout: float) -> bool:
        """Sleep until set or ``timeout``; True if it was set. It is cleared either way."""
        fired = self._event.wait(timeout)
        self._event.clear()
        return fired


def work_written(session: Session) -> None:
    """Say, in the writing transaction, that it makes work for workers."""
    session.info[_WRITTEN] = True
    if session.get_bind().dialect.name == "postgresql":
        # Delivered at commit, dropped on rollback (a savepoint's too, so it is sent
        # each time); repeats in one transaction fold into one.
        session.execute(text(f"NOTIFY {CHANNEL}"))


def watch_commits(sessions: Any, signal: WorkSignal) -> None:
    """Fire ``signal`` after each commit of a ``sessions`` session that wrote work."""
    def after_commit(session: Session) -> None:
        if session.info.pop(_WRITTEN, False):
            signal.set()

    def after_soft_rollback(session: Session, previous: SessionTransaction) -> None:
        if not previous.nested:  # a savepoint's rollback leaves the transaction's work
            session.info.pop(_WRITTEN, None)

    event.listen(sessions, "after_commit", after_commit)
    event.listen(sessions, "after_soft_rollback", after_soft_rollback)


class WorkListener:
    """A thread that ``LISTEN``s on PostgreSQL and fires the worker's signal on each
    notification; it reconnects after a database outage."""

    def __init__(self, url: str, signal: WorkSignal, stop: threading.Event) -> None:
        # psycopg speaks libpq URLs; SQLAlchemy's carry the driver's name.
        self._url = make_url(url).set(drivername="postgresql").render_as_string(
            hide_password=False)
        self._signal = signal
        self._stop = stop
        self._thread = threading.Thread(target=self._run, name="kiln-work-listener",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        import psycopg  # noqa: PLC0415 -- only engines on PostgreSQL need it

        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    # Work written while not listening is found by the idle poll.
                    self._signal.set()
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=1.0, stop_after=1):
                            self._signal.set()
            except psycopg.Error as exc:
                LOG.warning("work notifications lost (%s); the idle poll covers it",
                            type(exc).__name__)
                self._stop.wait(RECONNECT_SECONDS)
