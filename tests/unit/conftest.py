"""What the service and worker tests share: a migrated SQLite file, an injected clock
(nothing sleeps; a test moves time), the installed types, the stack services and a tenant."""

from __future__ import annotations

import datetime
import json
import logging
import pathlib
import shutil
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from engine import logs
from engine.context import ADMIN_ROLE, RequestContext
from engine.db import leases, migration
from engine.db.session import Database
from engine.resources.registry import ResourceTypeRegistry
from engine.services.proposals import StackLimits
from engine.services.tenants import TenantService
from tests.stack_api import StackApi


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


def alive_worker(db: Database, worker_id: str, now: datetime.datetime,
                 lease_seconds: float = 86400.0) -> str:
    """Register ``worker_id`` as a worker alive for a day (by default): what it claims
    stays its own, for tests that claim as a named owner rather than through a loop."""
    with db.transaction() as session:
        leases.register_worker(session, worker_id, "test", 1, now, lease_seconds)
    return worker_id


@pytest.fixture(scope="session")
def migrated_file(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """One SQLite file migrated to head per test process (each xdist worker has its own
    base temp dir); every test's ``db`` is a copy, since migrating takes ~60 ms."""
    path = tmp_path_factory.mktemp("schema") / "kiln.sqlite"
    database = Database(f"sqlite:///{path}")
    migration.upgrade(database)
    database.dispose()
    # The last connection's close checkpoints the WAL into the file; a leftover log
    # would hold part of the schema, and copying the file alone would lose it.
    assert not path.with_name(f"{path.name}-wal").exists()
    path.chmod(0o444)  # a test that opened the shared file by mistake fails, not leaks
    return path


@pytest.fixture
def db(tmp_path: pathlib.Path, migrated_file: pathlib.Path) -> Iterator[Database]:
    path = tmp_path / "kiln.sqlite"
    shutil.copyfile(migrated_file, path)  # the copy gets the default mode: writable
    database = Database(f"sqlite:///{path}")
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


@pytest.fixture
def root_logging() -> Iterator[logging.Logger]:
    """The root logger, put back as found with the loggers whose levels ``engine.logs``
    raises: ``logs.configure`` (every command's start) sets them for the whole process."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    floors = {name: logging.getLogger(name).level for name in logs.FLOORS}
    yield root
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)
    for name, floor in floors.items():
        logging.getLogger(name).setLevel(floor)


Logged = Callable[[], list[dict[str, Any]]]


@pytest.fixture
def logged(tmp_path: pathlib.Path, root_logging: logging.Logger) -> Logged:
    """Kiln's logging set up as a process sets it (``engine.logs.configure``), at DEBUG in
    JSON to a file; the lines written so far, parsed."""
    path = tmp_path / "kiln.log"
    logs.configure(logs.LogSettings(level="DEBUG", file=str(path), format="json"))

    def read() -> list[dict[str, Any]]:
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    return read
