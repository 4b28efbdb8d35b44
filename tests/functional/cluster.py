"""A Kiln cluster for the crash and database-fault tests: kiln-api and several kiln-engine
processes on a database of their own, with the test resource types installed
(``tests/dists/kiln-test-resources``) and Kiln's default lease and heartbeat (what the
tests promise is what an operator gets)."""

from __future__ import annotations

import json
import pathlib
import time
from collections import Counter
from typing import Any

from engine.config import declared_default
from tests.functional import servers
from tests.functional.conftest import heat_for, unique
from tests.functional.dists import with_path

LEASE_SECONDS = declared_default("engine", "lease_seconds")
HEARTBEAT_SECONDS = declared_default("engine", "heartbeat_interval_seconds")
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
    the test resource types installed and the default lease and heartbeat."""

    def __init__(self, root: pathlib.Path, database: str, site: pathlib.Path,
                 engines: int) -> None:
        self.ledger = root / "ledger.jsonl"
        extra = with_path({}, site, root / "cache")
        self.kiln = servers.start_split(
            root / "state", database, engines=engines, KILN_TEST_LEDGER=str(self.ledger),
            OS_ENGINE__LEASE_SECONDS=str(LEASE_SECONDS),
            OS_ENGINE__HEARTBEAT_INTERVAL_SECONDS=str(HEARTBEAT_SECONDS), **extra)
        self.engines = self.kiln.processes[1:]
        self.admin = heat_for(self.kiln, servers.new_tenant(self.kiln.env, unique("ops-"),
                                                            role="admin"))
        self.tenant = servers.new_tenant(self.kiln.env, unique("crash-"))
        self.heat = heat_for(self.kiln, self.tenant)

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


