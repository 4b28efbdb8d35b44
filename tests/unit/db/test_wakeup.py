"""Work written wakes idle workers in the writing process on commit (never on rollback).
Other processes hear of it through PostgreSQL's NOTIFY:
tests/functional/db/test_wakeup_postgresql.py."""

from __future__ import annotations

import pytest

from engine.context import RequestContext
from engine.db.session import Database
from engine.db.wakeup import work_written
from tests.unit.stack_api import StackApi

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

