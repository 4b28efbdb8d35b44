"""Crash safety on PostgreSQL with real processes, at Kiln's default lease and heartbeat:
kiln-engine workers share the steps of every stack; one killed with SIGKILL mid-operation
is fenced once its liveness lapses and the others finish its work exactly once (the test
resources' own ledger counts what was really created); one stopped with SIGTERM hands its
work back and exits 0."""

from __future__ import annotations

import pathlib
import signal
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional.cluster import STACKS, WIDTH, Cluster
from tests.functional.conftest import fresh_database, wait_for_status

pytestmark = pytest.mark.postgresql


@pytest.fixture
def cluster(request: pytest.FixtureRequest, tmp_path: pathlib.Path,
            resources_site: pathlib.Path) -> Iterator[Cluster]:
    with fresh_database() as database:
        running = Cluster(tmp_path, database, resources_site, request.param)
        try:
            yield running
        finally:
            running.kiln.stop()


@pytest.mark.parametrize("cluster", [3], indirect=True)
def test_a_killed_worker_s_steps_are_finished_by_the_others_exactly_once(
        cluster: Cluster) -> None:
    heat = cluster.heat
    stack_ids = cluster.create_stacks()
    victim = cluster.busiest_engine()
    time.sleep(0.5)  # let it record some creates and start waiting on them
    victim.popen.send_signal(signal.SIGKILL)
    victim.popen.wait(10)

    for stack_id in stack_ids:
        wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=90)

    created = cluster.created()
    assert len(created) == STACKS * WIDTH * 2
    assert [name for name, times in created.items() if times > 1] == []
    assert victim.popen.pid in cluster.creators()  # it died holding real work
    for stack_id in stack_ids:
        assert {r.resource_status for r in heat.resources.list(stack_id)} == {
            "CREATE_COMPLETE"}
        # Every lifecycle plugin heard how each create ended exactly once. The post-ops
        # come after the stack's status: the last stack's may still be on their way.
        assert post_ops(heat, stack_id) == {
            "policy": 1, "approval": 1, "quota": 1, "placement": 1}
    status = {s["pid"]: s["status"] for s in cluster.services()}
    assert status[victim.popen.pid] == "down"
    assert sorted(status[p.popen.pid] for p in cluster.engines if p is not victim) == [
        "up", "up"]


def post_ops(heat: Any, stack_id: str, plugins: int = 4, timeout: float = 30
             ) -> Counter[str]:
    """The create's post-ops recorded, by plugin, once every plugin's is (or after
    ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        found = Counter(e.resource_status_reason.split()[2]
                        for e in heat.events.list(stack_id)
                        if "post-op CREATE" in e.resource_status_reason)
        if len(found) >= plugins or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


@pytest.mark.parametrize("cluster", [2], indirect=True)
def test_sigterm_hands_the_work_back_and_exits_0(cluster: Cluster) -> None:
    heat = cluster.heat
    stack_ids = cluster.create_stacks()
    leaving = cluster.busiest_engine()

    leaving.popen.send_signal(signal.SIGTERM)
    assert leaving.popen.wait(10) == 0  # raises if it has not exited by then

    for stack_id in stack_ids:
        wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=90)
    assert [name for name, times in cluster.created().items() if times > 1] == []
    assert len(cluster.created()) == STACKS * WIDTH * 2
    row = next(s for s in cluster.services() if s["pid"] == leaving.popen.pid)
    assert row["status"] == "down" and row["deleted_at"] is not None
    assert row["steps_held"] == 0
