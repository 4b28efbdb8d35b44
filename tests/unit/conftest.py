"""What the service and worker tests share: a migrated SQLite file, an injected clock
(nothing sleeps; a test moves time), the installed types, the stack services and a tenant."""

from __future__ import annotations

import datetime
import pathlib
import threading
from collections.abc import Iterator

import pytest

from engine.context import ADMIN_ROLE, RequestContext
from engine.db import migration
from engine.db.session import Database
from engine.resources.registry import ResourceTypeRegistry
from engine.services.proposals import StackLimits
from engine.services.tenants import TenantService
from tests.unit.stack_api import StackApi


class Clock:
    def __init__(self) -> None:
        self.now = datetime.datetime(2026, 11, 22, 12, 0, tzinfo=datetime.UTC)

    def __call__(self) -> datetime.datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += datetime.timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db(tmp_path: pathlib.Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path}/kiln.sqlite")
    migration.upgrade(database)
    yield database
    database.dispose()


@pytest.fixture
def registry() -> ResourceTypeRegistry:
    return ResourceTypeRegistry.load()


@pytest.fixture
def types(registry: ResourceTypeRegistry) -> ResourceTypeRegistry:
    """The registry under the name the lifecycle tests give it."""
    return registry


@pytest.fixture
def release(db: Database) -> Iterator[threading.Event]:
    """Frees every held plugin call at teardown, before the database goes away."""
    event = threading.Event()
    yield event
    event.set()
    for thread in threading.enumerate():
        if thread.name.startswith(("lifecycle-", "kiln-operation")):
            thread.join(10)


@pytest.fixture
def stacks(db: Database, registry: ResourceTypeRegistry, clock: Clock) -> StackApi:
    return StackApi(db, registry, StackLimits(), clock)


@pytest.fixture
def ctx(db: Database, clock: Clock) -> RequestContext:
    tenant = TenantService(db, clock).create_tenant("t")
    return RequestContext(tenant_id=tenant.id, token_tenant_id=tenant.id, role=ADMIN_ROLE)
