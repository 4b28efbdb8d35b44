"""The quota plugin on PostgreSQL: every test of the SQLite unit module that takes
``database`` again (tests/unit/plugins/lifecycle/test_quota.py), and the tenant lock a
reservation waits for, which only PostgreSQL takes."""

from __future__ import annotations

import pathlib
import threading

import pytest
import sqlalchemy as sa

from engine.db.session import Database
from plugins.lifecycle.quota import store
from tests.functional.conftest import unit_tests_taking
from tests.unit.plugins.lifecycle import test_quota as on_sqlite
from tests.unit.plugins.lifecycle.test_quota import context, make_plugin, make_stack, usage

pytestmark = pytest.mark.postgresql

REVISION = on_sqlite.REVISION
PLUGIN_TABLE = store.USAGE  # emptied before each test
globals().update(unit_tests_taking(on_sqlite, "database"))


def test_a_reservation_waits_for_the_tenant_lock_on_postgresql(
        postgresql_database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(postgresql_database, tmp_path, max_stacks_per_tenant="5")
    stack = make_stack(1, tenant_id="locked")
    done = threading.Event()

    def reserve() -> None:
        plugin.do_pre_op(context("locked"), stack, action="CREATE")
        done.set()

    namespace, key = store.lock_keys("locked")
    with postgresql_database.transaction() as session:
        session.execute(sa.select(sa.func.pg_advisory_xact_lock(
            sa.cast(namespace, sa.Integer), sa.cast(key, sa.Integer))))
        thread = threading.Thread(target=reserve)
        thread.start()
        assert not done.wait(0.5), "the reservation did not wait for the tenant's lock"
    thread.join(timeout=30)
    assert done.is_set()
    assert usage(postgresql_database, "locked") == store.Usage(stacks=1, resources=1)
