"""engine.db.queue_depth: the counts and the age a metrics scrape reads, and None (the
error counted) when the database does not answer."""

from __future__ import annotations

import pathlib

from engine.db import leases
from engine.db.models import Step
from engine.db.queue_depth import read_queue_depth
from engine.db.session import Database
from engine.metrics import QueueDepth
from engine.vocabulary import Action, OperationState, StepState
from tests.unit.db.conftest import NOW, add_operation, add_stack, later
from tests.unit.metric_deltas import Moved


def test_an_empty_database_has_nothing_queued(db: Database) -> None:
    assert read_queue_depth(db, lambda: NOW) == QueueDepth(0, 0, 0.0)


def test_ready_steps_operations_not_started_and_the_oldest_unfinished_are_read(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        # Created first, finished: not running.
        add_operation(session, add_stack(session, tenant_id, "done"),
                      state=OperationState.COMPLETE, created_at=later(-600),
                      finished_at=later(-500))
        running = add_operation(session, add_stack(session, tenant_id, "running"),
                                state=OperationState.RUNNING, created_at=later(-90))
        session.add_all(Step(operation_id=running.id, stack_id=running.stack_id,
                             resource_name=f"r{i}", action=Action.CREATE, state=state,
                             prerequisites_left=0)
                        for i, state in enumerate((StepState.READY, StepState.READY,
                                                   StepState.RUNNING, StepState.WAITING)))
        add_operation(session, add_stack(session, tenant_id, "waiting"))
        # Its pre-ops under way: a live worker holds it.
        leases.register_worker(session, "w1", "h", 1, NOW, 2.0)
        add_operation(session, add_stack(session, tenant_id, "claimed"), lease_owner="w1")
        # Its worker died (and was fenced, or is gone): waiting again.
        add_operation(session, add_stack(session, tenant_id, "lapsed"), lease_owner="w0")
        # Parked at an approval gate since long ago: neither waiting for a worker nor
        # the oldest running.
        add_operation(session, add_stack(session, tenant_id, "parked"),
                      created_at=later(-7200), lease_expires_at=later(3600))

    assert read_queue_depth(db, lambda: NOW) == QueueDepth(
        ready_steps=2, waiting_operations=2, oldest_running_operation_age_seconds=90.0)


def test_a_database_that_does_not_answer_reads_none_and_is_counted(
        tmp_path: pathlib.Path) -> None:
    moved = Moved()
    database = Database(f"sqlite:///{tmp_path}/missing/kiln.sqlite")
    try:
        assert read_queue_depth(database, lambda: NOW) is None
    finally:
        database.dispose()
    assert moved("kiln_database_errors_total", kind="unavailable") == 1
