"""Functional fixtures: real databases (SQLite file, PostgreSQL), real Kiln processes,
the real python-heatclient. Loopback only."""

from __future__ import annotations

import contextlib
import inspect
import os
import pathlib
import time
import types
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from heatclient import client as heat_client

from engine.db import migration
from engine.db.session import Database
from tests.functional import servers
from tests.functional.dists import pip_install

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"


@contextlib.contextmanager
def fresh_database() -> Iterator[str]:
    """A new PostgreSQL database of its own, dropped afterwards: its URL."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"kiln_test_{worker}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def postgresql_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this test process, dropped at the end."""
    with fresh_database() as url:
        yield url


@contextlib.contextmanager
def migrated_database(revision: str = "head") -> Iterator[Database]:
    """A fresh PostgreSQL database migrated to ``revision``, dropped afterwards."""
    with fresh_database() as url:
        database = Database(url)
        try:
            migration.upgrade(database, revision)
            yield database
        finally:
            database.dispose()


@pytest.fixture(scope="module")
def postgresql_database(request: pytest.FixtureRequest) -> Iterator[Database]:
    """A migrated PostgreSQL database for one test module, in this process. Migrated to
    the module's ``REVISION`` when it names one: a plugin's tests stop at the plugin's own
    migration, as its SQLite tests do."""
    with migrated_database(getattr(request.module, "REVISION", "head")) as database:
        yield database


def unit_tests_taking(module: types.ModuleType, fixture: str) -> dict[str, Callable[..., Any]]:
    """The test functions of ``module`` that take ``fixture``. A test module that adds them
    to its globals runs them again where its own ``fixture`` answers: a store's SQLite unit
    tests run on PostgreSQL without a copy of their bodies."""
    return {name: value for name, value in vars(module).items()
            if name.startswith("test_") and inspect.isfunction(value)
            and fixture in inspect.signature(value).parameters}


@pytest.fixture(scope="session")
def resources_site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The test resource types (``tests/dists/kiln-test-resources``), pip-installed."""
    return pip_install("kiln-test-resources", tmp_path_factory.mktemp("site-resources"))


# The two shared servers live for the whole test process, not one module: starting one
# costs a second or more of CPU per process it runs (imports, plugins, migrations), and
# with them started per module that was a fifth of the suite's CPU. Modules keep to
# themselves with tenants of their own (``unique`` names); a module that needs another
# configuration, or stops its server, starts its own.
@pytest.fixture(scope="session")
def kiln_all(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Kiln]:
    """kiln-all on a SQLite file: the embedded default."""
    kiln = servers.start_all(tmp_path_factory.mktemp("kiln-all"), None)
    yield kiln
    kiln.stop()


@pytest.fixture(scope="session")
def kiln_postgresql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Kiln]:
    """kiln-api (gunicorn) and two kiln-engine processes on PostgreSQL, on a database of
    their own: their engines would claim the work of any other server on the same one."""
    with fresh_database() as url:
        kiln = servers.start_split(tmp_path_factory.mktemp("kiln-pg"), url, engines=2)
        yield kiln
        kiln.stop()


HeatFactory = Callable[..., Any]


def heat_for(kiln: servers.Kiln, credentials: servers.Credentials) -> Any:
    return heat_client.Client("1", endpoint=kiln.endpoint(credentials.tenant_id),
                              token=credentials.token)


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def wait_for_status(heat: Any, stack_id: str, wanted: str, timeout: float = 30.0) -> Any:
    """Poll until the stack reaches ``wanted`` (or any final state: then fail loudly)."""
    deadline = time.monotonic() + timeout
    stack = None
    while time.monotonic() < deadline:
        stack = heat.stacks.get(stack_id)
        if stack.stack_status == wanted:
            return stack
        if not stack.stack_status.endswith("IN_PROGRESS"):
            break
        time.sleep(0.1)
    status = stack.stack_status if stack else "unknown"
    reason = stack.stack_status_reason if stack else ""
    raise AssertionError(f"stack {stack_id} is {status} ({reason}), wanted {wanted}")


def settled_events(heat: Any, stack_id: str, action: str, timeout: float = 30.0) -> list[Any]:
    """The stack's events once every post-op of ``action`` is recorded: they follow the
    final status by a moment, and each plugin whose pre-op ran gets one."""
    deadline = time.monotonic() + timeout
    while True:
        events = heat.events.list(stack_id, sort_dir="asc")
        calls = [e.lifecycle for e in events
                 if getattr(e, "lifecycle", None) and e.lifecycle["action"] == action]
        # A skipped pre-op is owed nothing; an approval gate's decision is one more event
        # of the same plugin's pre-op.
        called = {call["plugin"] for call in calls
                  if call["phase"] == "pre" and call["verdict"] != "skipped"}
        notified = {call["plugin"] for call in calls if call["phase"] == "post"}
        if called <= notified or time.monotonic() > deadline:
            return list(events)
        time.sleep(0.1)
