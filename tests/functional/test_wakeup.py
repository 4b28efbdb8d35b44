"""Idle workers are woken by new work, not found by their poll: with a poll of ten
minutes, stacks still finish at once, on kiln-all (the API wakes the worker beside it)
and on PostgreSQL (the API's NOTIFY wakes separate engines); and SIGTERM still ends an
idle wait at once."""

from __future__ import annotations

import pathlib

import pytest

from tests.functional import servers
from tests.functional.conftest import fresh_database, heat_for, unique, wait_for_status

POLL = "600"  # far beyond every deadline below: only a wake-up can explain a finish
FLAT = "heat_template_version: 2018-08-31\nresources:\n" + "".join(
    f"  r{i}: {{type: OS::Heat::None}}\n" for i in range(4))


def _create_and_stop(kiln: servers.Kiln) -> None:
    try:
        heat = heat_for(kiln, servers.new_tenant(kiln.env, unique("wake-")))
        for _ in range(2):  # the second finds the workers idle again
            stack_id = heat.stacks.create(stack_name=unique("w"), template=FLAT)["stack"]["id"]
            wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=30)
    finally:
        codes = [process.stop(timeout=10) for process in kiln.processes]
    assert codes == [0] * len(codes), kiln.logs()


def test_kiln_all_wakes_its_worker(tmp_path: pathlib.Path) -> None:
    _create_and_stop(servers.start_all(tmp_path, None, OS_ENGINE__IDLE_POLL_SECONDS=POLL))


@pytest.mark.postgresql
def test_engines_on_postgresql_are_woken_by_notify(tmp_path: pathlib.Path) -> None:
    with fresh_database() as url:  # its own: no other test's engine can take the work
        _create_and_stop(servers.start_split(tmp_path, url, engines=2,
                                             OS_ENGINE__IDLE_POLL_SECONDS=POLL))
