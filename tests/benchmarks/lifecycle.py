"""Lifecycle-plugin overhead: not collected by pytest; prints a table and writes JSON.

    make benchmark            # or: python tests/benchmarks/lifecycle.py

kiln-all on SQLite, twice: with the built-in plugins disabled, and with policy, quota and
placement all configured (placement placing every resource). Each case creates a stack
through python-heatclient and measures request -> CREATE_COMPLETE, then the time until
every post-op is recorded, and reads each plugin call's own duration from the events.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from heatclient import client as heat_client  # noqa: E402

from tests.benchmarks.run import none_template, wait  # noqa: E402
from tests.functional import servers  # noqa: E402

POLICY = """\
rules:
  - {name: size, effect: deny, max_resources: 5000}
  - {name: types, effect: deny, allowed_types: ["OS::Heat::*"]}
  - {name: nova-cap, effect: warn, max_count: {type: "OS::Nova::Server", limit: 100}}
"""

INVENTORY = """\
units: [slots]
racks:
""" + "".join(f"  rack-{r}:\n    hosts:\n" + "".join(
    f"      host-{r}-{h}: {{slots: 64}}\n" for h in range(8)) for r in range(8)) + """\
types:
  OS::Heat::None:
    cost: {slots: 1}
"""


def start(root: pathlib.Path, with_plugins: bool) -> servers.Kiln:
    root.mkdir(parents=True)
    if not with_plugins:
        return servers.start_all(root / "state", None,
                                 OS_LIFECYCLE_PLUGINS__DISABLED="policy,quota,placement")
    (root / "policy.yaml").write_text(POLICY)
    (root / "inventory.yaml").write_text(INVENTORY)
    return servers.start_all(
        root / "state", None, OS_LIFECYCLE_POLICY__RULES_FILE=str(root / "policy.yaml"),
        OS_LIFECYCLE_PLACEMENT__INVENTORY_FILE=str(root / "inventory.yaml"),
        OS_LIFECYCLE_QUOTA__MAX_RESOURCES_PER_TENANT="100000")


def post_ops_done(heat: Any, stack_id: str, plugins: int, timeout: float = 120) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        posts = [e for e in heat.events.list(stack_id)
                 if getattr(e, "lifecycle", None) and e.lifecycle["phase"] == "post"]
        if len(posts) >= plugins:
            return time.monotonic() - started
        time.sleep(0.05)
    raise RuntimeError(f"post-ops of {stack_id} not done after {timeout}s")


def run(label: str, kiln: servers.Kiln, sizes: list[int], plugins: int
        ) -> list[dict[str, Any]]:
    rows = []
    try:
        creds = servers.new_tenant(kiln.env, "bench")
        heat = heat_client.Client("1", endpoint=kiln.endpoint(creds.tenant_id),
                                  token=creds.token)
        for size in sizes:
            started = time.monotonic()
            stack_id = heat.stacks.create(stack_name=f"b{uuid.uuid4().hex[:8]}",
                                          template=none_template(size))["stack"]["id"]
            create_s = time.monotonic() - started + wait(heat, stack_id, "CREATE_COMPLETE")
            tail_s = post_ops_done(heat, stack_id, plugins) if plugins else 0.0
            calls = [e.lifecycle for e in heat.events.list(stack_id)
                     if getattr(e, "lifecycle", None)]
            per_plugin = {}
            for call in calls:
                per_plugin.setdefault(f"{call['plugin']}.{call['phase']}", []).append(
                    call["duration_ms"])
            rows.append({
                "setup": label, "resources": size, "create_s": round(create_s, 3),
                "post_ops_after_s": round(tail_s, 3),
                "calls": len(calls),
                "slowest_call_ms": max((c["duration_ms"] for c in calls), default=0),
                "call_ms": {k: statistics.median(v) for k, v in sorted(per_plugin.items())},
            })
            heat.stacks.delete(stack_id)
            wait(heat, stack_id, "DELETE_COMPLETE")
    finally:
        kiln.stop()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,100,1000")
    parser.add_argument("--output",
                        default=str(ROOT / "tests/benchmarks/results/lifecycle.json"))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        base = pathlib.Path(tmp)
        results = run("no plugins", start(base / "off", False), sizes, 0)
        results += run("policy+quota+placement", start(base / "on", True), sizes, 3)
    columns = ["setup", "resources", "create_s", "post_ops_after_s", "calls",
               "slowest_call_ms"]
    widths = {c: max(len(c), *(len(str(r[c])) for r in results)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for row in results:
        print("  ".join(str(row[c]).ljust(widths[c]) for c in columns))
    for row in results:
        if row["call_ms"]:
            print(f"{row['setup']} {row['resources']}: median ms per call {row['call_ms']}")
    output = pathlib.Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps({"results": results}, indent=2))
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
