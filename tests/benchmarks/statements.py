"""SQL statements an operation costs, counted in one process: the engine's services take
the request (as the API would) and one worker loop runs it, on a scratch database; every
statement sent to the database in between is counted."""

from __future__ import annotations

import contextlib
import dataclasses
import pathlib
import tempfile
import uuid
from collections.abc import Iterator
from typing import Any

from sqlalchemy import event

from engine import budget
from engine.clock import utcnow
from engine.context import ADMIN_ROLE, RequestContext
from engine.db import migration
from engine.db.models import Stack
from engine.db.session import Database
from engine.resources.registry import ResourceTypeRegistry
from engine.services.proposals import StackLimits
from engine.services.tenants import TenantService
from engine.worker.loop import WorkerLoop, WorkerSettings
from tests.functional.conftest import fresh_database
from tests.stack_api import StackApi


@contextlib.contextmanager
def _database(kind: str | None) -> Iterator[Database]:
    with contextlib.ExitStack() as stack:
        if kind is None:
            tmp = pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory()))
            url = f"sqlite:///{tmp / 'kiln.sqlite'}"
        else:
            url = stack.enter_context(fresh_database())
        database = Database(url)
        try:
            yield database
        finally:
            database.dispose()


def count_statements(template: str, changed: str, kind: str | None) -> dict[str, int]:
    """Statements for create, a no-op update, the update to ``changed`` and the delete."""
    with _database(kind) as db:
        migration.upgrade(db)
        registry = ResourceTypeRegistry.load()
        # Shapes far larger than a stack may hold by default.
        budget.configure(dataclasses.replace(budget.limits(), max_resources_per_stack=100000))
        stacks = StackApi(db, registry, StackLimits(), utcnow)
        tenant = TenantService(db, utcnow).create_tenant(f"t{uuid.uuid4().hex[:6]}")
        ctx = RequestContext(tenant_id=tenant.id, token_tenant_id=tenant.id, role=ADMIN_ROLE)
        # The heartbeat's statements (a few a second, whatever the stack) are not what
        # this counts: none falls due while it runs.
        loop = WorkerLoop(db, registry, WorkerSettings(idle_poll_seconds=0.0,
                                                       lease_seconds=7200.0,
                                                       heartbeat_interval_seconds=3600.0),
                          host="bench", irs=stacks.irs)
        loop.register()
        counter = {"n": 0}

        def count(*_: Any) -> None:
            counter["n"] += 1

        event.listen(db.engine, "before_cursor_execute", count)

        def settle(stack_id: str) -> None:
            while True:
                loop.run_once()
                with db.read() as session:
                    stack = session.get(Stack, stack_id)
                    busy = stack is not None and stack.status == "IN_PROGRESS"
                if not busy and not loop.held_count:
                    return

        counts: dict[str, int] = {}
        start = counter["n"]
        record = stacks.create(ctx, {"stack_name": "s", "template": template})
        settle(record.id)
        counts["create"] = counter["n"] - start
        for label, body in (("no-op update", {}), ("update all", {"template": changed})):
            start = counter["n"]
            stacks.update(ctx, record.name, record.id, body, patch=True)
            settle(record.id)
            counts[label] = counter["n"] - start
        start = counter["n"]
        stacks.delete(ctx, record.name, record.id)
        settle(record.id)
        counts["delete"] = counter["n"] - start
        event.remove(db.engine, "before_cursor_execute", count)
        return counts
