"""Work written wakes idle workers: in the writing process on commit (never on rollback),
and in other processes through PostgreSQL's NOTIFY (a real server)."""

from __future__ import annotations

import threading

import pytest

from engine.context import RequestContext
from engine.db import migration
from engine.db.session import Database
from engine.db.wakeup import WorkListener, WorkSignal, work_written
from engine.services.stacks import StackService
from tests.functional.conftest import fresh_database

NONE = "heat_template_version: 2018-08-31\nresources:\n  r: {type: OS::Heat::None}\n"


def test_a_commit_that_wrote_work_fires_the_signal_and_a_rollback_does_not(
        db: Database) -> None:
    assert not db.work.wait(0)
    with pytest.raises(RuntimeError), db.transaction() as session:
        work_written(session)
        raise RuntimeError("rolled back")
    assert not db.work.wait(0)
    with db.transaction() as session:
        pass  # wrote no work
    assert not db.work.wait(0)
    with db.transaction() as session:
        work_written(session)
    assert db.work.wait(0)
    assert not db.work.wait(0)  # waiting clears it
    with db.transaction() as session:
        work_written(session)
        with pytest.raises(RuntimeError), session.begin_nested():
            raise RuntimeError("a savepoint rolled back")
    assert db.work.wait(0)  # the transaction's work still stands


def test_a_stack_request_wakes_the_worker_beside_the_api(
        db: Database, stacks: StackService, ctx: RequestContext) -> None:
    db.work.wait(0)
    stacks.create(ctx, {"stack_name": "s", "template": NONE})
    assert db.work.wait(0)


@pytest.mark.postgresql
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
