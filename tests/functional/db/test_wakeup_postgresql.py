"""Work written in one process wakes the workers of others through PostgreSQL's NOTIFY
(a real server), on commit and never on rollback."""

from __future__ import annotations

import threading

import pytest

from engine.db import migration
from engine.db.session import Database
from engine.db.wakeup import WorkListener, WorkSignal, work_written
from tests.functional.conftest import fresh_database

pytestmark = pytest.mark.postgresql


def test_other_processes_hear_of_work_through_notify() -> None:
    with fresh_database() as url:
        writer, listening = Database(url), Database(url)
        stop = threading.Event()
        try:
            migration.upgrade(writer)
            signal = WorkSignal()
            WorkListener(listening.url, signal, stop).start()
            assert signal.wait(10), "the listener says so once it listens"
            with writer.transaction() as session:
                work_written(session)
            assert signal.wait(10)
            with pytest.raises(RuntimeError), writer.transaction() as session:
                work_written(session)
                raise RuntimeError("rolled back")
            assert not signal.wait(1.5)
        finally:
            stop.set()
            writer.dispose()
            listening.dispose()
