"""Crash safety on PostgreSQL with real processes: kiln-engine workers share the steps of
every stack; one killed with SIGKILL mid-operation has its leases expire and the others
finish its work exactly once (the test resources' own ledger counts what was really
created); one stopped with SIGTERM hands its work back and exits 0."""

from __future__ import annotations

import json
import pathlib
import signal
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional import servers
from tests.functional.conftest import fresh_database, heat_for, unique, wait_for_status
from tests.functional.dists import pip_install, with_path

pytestmark = pytest.mark.postgresql

LEASE_SECONDS = 3
STACKS, WIDTH, WAIT_SECONDS = 6, 10, 2


def two_layers(width: int, wait: float) -> str:
    """``width`` ledger resources, then ``width`` more that wait for all of them."""
    lines = ["heat_template_version: rocky", "resources:"]
    for i in range(width):
        lines += [f"  a{i}:", "    type: Kiln::Test::Ledger",
                  f"    properties: {{wait_secs: {wait}}}"]
    first = ", ".join(f"a{i}" for i in range(width))
    for i in range(width):
        lines += [f"  b{i}:", "    type: Kiln::Test::Ledger", f"    depends_on: [{first}]",
                  f"    properties: {{wait_secs: {wait}}}"]
    return "\n".join(lines) + "\n"


class Cluster:
    """kiln-api and ``engines`` kiln-engine processes on a database of their own, with
    the test resource types installed and short leases."""

    def __init__(self, root: pathlib.Path, database: str, site: pathlib.Path,
                 engines: int) -> None:
        self.ledger = root / "ledger.jsonl"
        extra = with_path({}, site, root / "cache")
        self.kiln = servers.start_split(
            root / "state", database, engines=engines, KILN_TEST_LEDGER=str(self.ledger),
            OS_ENGINE__LEASE_SECONDS=str(LEASE_SECONDS),
            OS_ENGINE__HEARTBEAT_INTERVAL_SECONDS="0.5", **extra)
        self.engines = self.kiln.processes[1:]
        self.admin = heat_for(self.kiln, servers.new_tenant(self.kiln.env, unique("ops-"),
                                                            role="admin"))
        self.heat = heat_for(self.kiln, servers.new_tenant(self.kiln.env, unique("crash-")))

    def services(self) -> list[dict[str, Any]]:
        """``GET /services`` as python-heatclient's service list asks for it."""
        return [service.to_dict() for service in self.admin.services.list()]

    def busiest_engine(self, timeout: float = 30) -> servers.Process:
        """The engine process holding the most steps, once one holds some."""
        deadline = time.monotonic() + timeout
        by_pid = {p.popen.pid: p for p in self.engines if p.popen.poll() is None}
        while time.monotonic() < deadline:
            held = [s for s in self.services() if s["pid"] in by_pid and s["steps_held"]]
            if held:
                return by_pid[max(held, key=lambda s: s["steps_held"])["pid"]]
            time.sleep(0.05)
        raise AssertionError(f"no engine took any step:\n{self.kiln.logs()}")

    def created(self) -> Counter[str]:
        entries = [json.loads(line) for line in self.ledger.read_text().splitlines()]
        return Counter(e["name"] for e in entries if e["op"] == "create")

    def creators(self) -> set[int]:
        entries = [json.loads(line) for line in self.ledger.read_text().splitlines()]
        return {e["pid"] for e in entries if e["op"] == "create"}

    def create_stacks(self) -> list[str]:
        template = two_layers(WIDTH, WAIT_SECONDS)
        return [self.heat.stacks.create(stack_name=unique("crash"), template=template)
                ["stack"]["id"] for _ in range(STACKS)]


@pytest.fixture(scope="session")
def resources_site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return pip_install("kiln-test-resources", tmp_path_factory.mktemp("site-resources"))


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
        # Every lifecycle plugin heard how each create ended exactly once.
        post_ops = Counter(e.resource_status_reason.split()[2]
                           for e in heat.events.list(stack_id)
                           if "post-op CREATE" in e.resource_status_reason)
        assert post_ops == {"policy": 1, "quota": 1, "placement": 1}
    status = {s["pid"]: s["status"] for s in cluster.services()}
    assert status[victim.popen.pid] == "down"
    assert sorted(status[p.popen.pid] for p in cluster.engines if p is not victim) == [
        "up", "up"]


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
