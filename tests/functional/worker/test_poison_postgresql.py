"""The poison rule's writes against concurrent writers, on PostgreSQL (SQLite has one
writer at a time): counting a failure and giving a phase back leave another worker's
write standing. The rest of the rule: tests/unit/worker/test_poison.py."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import select, text

from engine.context import ADMIN_ROLE, RequestContext
from engine.db import leases, migration
from engine.db.models import Operation, Step
from engine.db.session import Database
from engine.ir.stored import StoredIrs
from engine.lifecycle.registry import LifecycleRegistry
from engine.resources.registry import ResourceTypeRegistry
from engine.services.proposals import StackLimits
from engine.services.tenants import TenantService
from engine.worker.step import StepRunner
from tests.functional.conftest import fresh_database
from tests.stack_api import StackApi
from tests.unit.conftest import Clock
from tests.unit.worker.running import create, run, worker_for
from tests.unit.worker.test_lifecycle_calls import Gate, Recording, loaded
from tests.unit.worker.test_poison import PLAIN, REQUEST, operation_of, plan, step_of

pytestmark = pytest.mark.postgresql


def waiting_on_a_lock(db: Database, statement: str) -> None:
    """Return once a statement like ``statement`` (SQL LIKE) waits on a row lock."""
    for _ in range(1000):
        with db.read() as session:
            if session.execute(text("SELECT count(*) FROM pg_stat_activity "
                                    "WHERE wait_event_type = 'Lock' AND query LIKE :like"),
                               {"like": statement}).scalar():
                return
        time.sleep(0.01)
    raise AssertionError("no transaction waited on the lock")


def test_counting_and_giving_back_do_not_overwrite_a_concurrent_write() -> None:
    clock, release = Clock(), threading.Event()
    with fresh_database() as url:
        db = Database(url)
        try:
            migration.upgrade(db)
            types = ResourceTypeRegistry.load()
            tenant = TenantService(db, clock).create_tenant("t")
            ctx = RequestContext(tenant_id=tenant.id, token_tenant_id=tenant.id,
                                 role=ADMIN_ROLE, request_id=REQUEST)
            stacks = StackApi(db, types, StackLimits(), clock)

            # A step that failed on a bug while another worker claimed it (the first
            # one's lease had lapsed): the new holder keeps it.
            _, stack_id = create(stacks, ctx, PLAIN)
            plan(db, types, clock)
            with db.transaction() as session:
                [(step, _)] = leases.claim_steps(session, "w1", clock(), 10)
            runner = StepRunner(db, types, "w1", clock, 1.0, api_url="http://kiln",
                                irs=StoredIrs(types.get, types.constraint))
            with db.transaction() as session:
                claimed = session.get(Step, step.id, with_for_update=True)
                assert claimed is not None
                claimed.lease_owner = "w2"
                session.flush()
                counting = threading.Thread(target=runner._unexpected,
                                            args=(step.id, TypeError("a bug")))
                counting.start()
                waiting_on_a_lock(db, "%steps%")
            counting.join(30)
            assert step_of(db, stack_id, "fine").lease_owner == "w2"

            # A graceful stop while the operation's phase, in flight, completes: the
            # phase's release stands (the stop's take-back is for a phase cut short).
            stack_id = stacks.create(ctx, {"stack_name": "other", "template": PLAIN}).id
            with db.transaction() as session:
                session.scalars(select(Operation).where(
                    Operation.stack_id == stack_id)).one().failures = 1  # failed once
            gate = Gate(release)
            loop = worker_for(stacks, LifecycleRegistry(
                [loaded(Recording("slow", [], pre=gate.pre))]), operation_threads=1,
                heartbeat_interval_seconds=0.05)
            run(loop, ticks=1)
            gate.wait_reached()
            operation = operation_of(db, stack_id)
            assert operation.failures == 2
            with db.transaction() as session:
                phase = session.get(Operation, operation.id, with_for_update=True)
                assert phase is not None
                phase.lease_owner, phase.lease_expires_at, phase.failures = None, None, 0
                session.flush()
                stopping = threading.Thread(target=loop.hand_back)
                stopping.start()
                # (not the lease renewals of the plugin call in flight)
                waiting_on_a_lock(db, "UPDATE operations SET %failures%")
            stopping.join(30)
            operation = operation_of(db, stack_id)
            assert (operation.failures, operation.lease_owner) == (0, None)
        finally:
            release.set()
            for thread in threading.enumerate():
                if thread.name.startswith(("lifecycle-", "kiln-operation")):
                    thread.join(10)
            db.dispose()
