"""The placement plugin on PostgreSQL: every test of the SQLite unit module that takes
``database`` again (tests/unit/plugins/lifecycle/test_placement.py), and the advisory lock
a reservation waits for, which only PostgreSQL takes."""

from __future__ import annotations

import pathlib
import threading

import pytest

from engine.db.session import Database
from plugins.lifecycle.placement import store
from tests.functional.conftest import unit_tests_taking
from tests.unit.plugins.lifecycle import test_placement as on_sqlite
from tests.unit.plugins.lifecycle.test_placement import (
    CONTEXT,
    make_plugin,
    make_stack,
    run,
    server,
)

pytestmark = pytest.mark.postgresql

REVISION = on_sqlite.REVISION
PLUGIN_TABLE = store.RESERVATIONS  # emptied before each test
globals().update(unit_tests_taking(on_sqlite, "database"))


def test_a_reservation_waits_for_the_advisory_lock_on_postgresql(
        postgresql_database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(postgresql_database, tmp_path)
    stack = make_stack(server("a"))
    done = threading.Event()

    def reserve() -> None:
        plugin.do_pre_op(CONTEXT, stack, None, "CREATE")
        done.set()

    with postgresql_database.transaction() as session:
        store.lock(session)
        thread = threading.Thread(target=reserve)
        thread.start()
        assert not done.wait(0.5), "the reservation did not wait for the placement lock"
    thread.join(timeout=30)
    assert done.is_set()
    run(plugin, stack, "DELETE")
