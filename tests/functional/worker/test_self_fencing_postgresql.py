"""Self-fencing, with real time, real threads and PostgreSQL: a worker whose heartbeat
stalls (its renewal waits on a row lock; the database and its loop are fine) stops
looking at the step it holds before its liveness can lapse; only then can another worker
fence it and take the step, and the stalled worker never acts on the step again (it
rejoins under a new id). The resource is made once. The rules without threads:
tests/unit/worker/test_liveness.py and tests/unit/db/test_leases.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from sqlalchemy import select

from engine.clock import utcnow
from engine.context import ADMIN_ROLE, RequestContext
from engine.db import leases
from engine.db.models import Worker
from engine.db.session import Database
from engine.ir.stored import StoredIrs
from engine.resources.base import Resource, Token
from engine.resources.registry import ResourceTypeRegistry
from engine.services.proposals import StackLimits
from engine.services.tenants import TenantService
from engine.worker.loop import WorkerLoop, WorkerSettings
from tests.functional.conftest import migrated_database
from tests.stack_api import StackApi

pytestmark = pytest.mark.postgresql

LEASE, HEARTBEAT = 1.0, 0.2
TEMPLATE = """\
heat_template_version: 2018-08-31
resources:
  watched: {type: 'Test::Watched'}
"""


class Watched(Resource):
    """Waits until the test says it is done, and records who looked at it, when."""

    looks: ClassVar[list[tuple[float, str]]] = []
    creates: ClassVar[int] = 0
    done: ClassVar[threading.Event] = threading.Event()

    def handle_create(self) -> Token:
        Watched.creates += 1
        self.set_physical_id("watched")
        return None

    def check_create_complete(self, token: Token) -> bool:
        Watched.looks.append((time.time(), threading.current_thread().name))
        return Watched.done.is_set()

    def next_check_in(self, token: Token) -> float | None:
        return 0.02


@pytest.fixture
def db() -> Iterator[Database]:
    with migrated_database() as database:
        yield database


def looks_by(name: str) -> list[float]:
    return [at for at, looker in Watched.looks if looker == name]


def wait_for(condition: Any, what: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"no {what} after {timeout} s"
        time.sleep(0.02)


def test_a_worker_whose_heartbeat_stalls_stops_acting_before_another_may_take_over(
        db: Database) -> None:
    builtins = ResourceTypeRegistry.load()
    types = ResourceTypeRegistry({**{name: builtins.get(name) for name in builtins.names()},
                                  "Test::Watched": Watched})
    tenant = TenantService(db, utcnow).create_tenant("t")
    ctx = RequestContext(tenant_id=tenant.id, token_tenant_id=tenant.id, role=ADMIN_ROLE,
                         request_id="req-fencing")
    stacks = StackApi(db, types, StackLimits(), utcnow)
    settings = WorkerSettings(lease_seconds=LEASE, heartbeat_interval_seconds=HEARTBEAT,
                              idle_poll_seconds=0.05, max_step_poll_seconds=0.05,
                              operation_threads=1)
    # Each its own connections, as processes of their own would have.
    databases = [Database(db.url), Database(db.url)]
    stalled, other = (WorkerLoop(database, types, settings, host=name,
                                 irs=StoredIrs(types.get, types.constraint))
                      for database, name in zip(databases, ("stalled", "other"), strict=True))
    stops = [threading.Event(), threading.Event()]
    threads = [threading.Thread(target=loop.run, args=(stop,), name=name, daemon=True)
               for loop, stop, name in zip((stalled, other), stops, ("W", "B"), strict=True)]
    Watched.looks, Watched.creates = [], 0
    Watched.done.clear()
    stalled_id = stalled.id
    try:
        threads[0].start()
        record = stacks.create(ctx, {"stack_name": "s", "template": TEMPLATE})
        wait_for(lambda: len(looks_by("W")) >= 3, "look by the first worker")
        threads[1].start()
        wait_for(lambda: _registered(db, other.id), "second worker")

        # The first worker's heartbeat stalls: its renewal waits on its row, locked here.
        with db.transaction() as session:
            session.execute(select(Worker).where(Worker.id == stalled_id).with_for_update())
            locked_at = time.time()
            time.sleep(LEASE + 0.5)
            alive_until = session.get_one(Worker, stalled_id).alive_until
            assert alive_until is not None
            last_look = max(looks_by("W"))
            # It stopped before its liveness ran out: before anyone could fence it (its
            # last check came a heartbeat before that; the look right after it).
            assert last_look < alive_until.timestamp(), (
                last_look - locked_at, alive_until.timestamp() - locked_at)
            assert looks_by("B") == [], "nobody else looked meanwhile"
            # The other worker's heartbeat fences it (here, in the transaction that holds
            # its row, so that its stalled renewal cannot come first once it is free).
            fenced = leases.renew_liveness(session, other.id, utcnow(), LEASE).fenced
            assert [worker.id for worker in fenced] == [stalled_id]
            fenced_at = fenced[0].fenced_at
            assert fenced_at is not None

        wait_for(lambda: looks_by("B"), "look by the second worker")
        assert min(looks_by("B")) > fenced_at.timestamp() > max(looks_by("W"))
        Watched.done.set()
        wait_for(lambda: stacks.get(ctx, record.name, record.id).status == "COMPLETE",
                 "complete stack")
        wait_for(lambda: stalled.id != stalled_id, "rejoin under a new id")
        assert max(looks_by("W")) == last_look, "it never looked again"
        assert Watched.creates == 1
    finally:
        Watched.done.set()
        for stop in stops:
            stop.set()
        for thread in threads:
            if thread.is_alive():
                thread.join(15)
        for database in databases:
            database.dispose()


def _registered(db: Database, worker_id: str) -> bool:
    with db.read() as session:
        return session.get(Worker, worker_id) is not None
