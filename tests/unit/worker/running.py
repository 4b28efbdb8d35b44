"""Worker loops for the tests that drive stacks through their lives: built as
``engine.bootstrap.Kiln.worker()`` builds one beside the stack services, and run a few
ticks at a time (nothing sleeps; the tests move the clock)."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any

from engine.context import RequestContext
from engine.db.session import Database
from engine.ir.stored import StoredIrs
from engine.lifecycle.registry import LifecycleRegistry, LoadedPlugin
from engine.resources.registry import ResourceTypeRegistry
from engine.worker.loop import WorkerLoop, WorkerSettings
from tests.stack_api import StackApi

Plugins = Sequence[LoadedPlugin] | LifecycleRegistry


def worker(db: Database, registry: ResourceTypeRegistry, clock: Callable[[], datetime.datetime],
           plugins: Plugins = (), *, irs: StoredIrs | None = None, **settings: Any) -> WorkerLoop:
    """A registered worker; without ``irs`` it has a cache of IRs of its own (for tests
    whose services are not a StackApi's, or whose worker has other types)."""
    lifecycle = plugins if isinstance(plugins, LifecycleRegistry) else LifecycleRegistry(plugins)
    # These tests move the clock by hand, often by more than a short lease, and model a
    # worker's death as a worker they stop running: a 30 s liveness renewed every 5 s
    # keeps a moment's jump from looking like one. Self-fencing follows the same clock.
    settings = {"lease_seconds": 30.0, "heartbeat_interval_seconds": 5.0, **settings}
    loop = WorkerLoop(db, registry, WorkerSettings(**settings), host="test",
                      lifecycle=lifecycle, clock=clock,
                      irs=StoredIrs(registry.get, registry.constraint) if irs is None else irs,
                      monotonic=lambda: clock().timestamp())
    loop.register()
    return loop


def worker_for(stacks: StackApi, plugins: Plugins = (), **settings: Any) -> WorkerLoop:
    """The worker beside ``stacks``' services: their database, types and clock, and their
    one cache of IRs, which the worker shares as in kiln-all."""
    kiln = stacks.kiln
    return worker(kiln.db, kiln.registry, kiln.clock, plugins, irs=stacks.irs, **settings)


def run(loop: WorkerLoop, ticks: int = 10) -> None:
    for _ in range(ticks):
        loop.run_once()


def create(stacks: StackApi, ctx: RequestContext, template: str) -> tuple[str, str]:
    record = stacks.create(ctx, {"stack_name": "s", "template": template})
    return record.name, record.id
