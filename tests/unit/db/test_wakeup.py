"""Work written wakes idle workers in the writing process on commit (never on rollback);
a listener that cannot reach PostgreSQL says so and leaves the work to the idle poll.
Other processes hear of work through PostgreSQL's NOTIFY:
tests/functional/db/test_wakeup_postgresql.py."""

from __future__ import annotations

import logging
import socket
import threading
import time

import pytest

from engine.context import RequestContext
from engine.db.session import Database
from engine.db.wakeup import WorkListener, WorkSignal, work_written
from tests.stack_api import StackApi

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
        db: Database, stacks: StackApi, ctx: RequestContext) -> None:
    db.work.wait(0)
    stacks.create(ctx, {"stack_name": "s", "template": NONE})
    assert db.work.wait(0)


def test_a_listener_that_cannot_connect_says_so_and_stops_when_told(
        caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as unused:  # a loopback port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    signal, stop = WorkSignal(), threading.Event()

    with caplog.at_level(logging.WARNING, logger="engine.db.wakeup"):
        WorkListener(f"postgresql+psycopg://kiln@127.0.0.1:{port}/kiln", signal, stop).start()
        deadline = time.monotonic() + 10
        while not caplog.records and time.monotonic() < deadline:
            time.sleep(0.01)
        stop.set()
    for thread in threading.enumerate():
        if thread.name == "kiln-work-listener":
            thread.join(5)
            assert not thread.is_alive(), "a stop ends its wait to reconnect"

    assert caplog.messages[:1] == [
        "work notifications lost (OperationalError); the idle poll covers it"]
    assert not signal.wait(0), "it never listened, so it never said so"
