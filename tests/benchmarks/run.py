"""Engine throughput benchmarks: not collected by pytest; prints a table and writes JSON.

    make benchmark            # or: python tests/benchmarks/run.py [--sizes 10,100,1000]

Each case creates one stack through python-heatclient against real Kiln processes and
measures the time from the create request to CREATE_COMPLETE, then the delete.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time
import uuid
from typing import Any

import psycopg

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from heatclient import client as heat_client  # noqa: E402

from tests.functional import servers  # noqa: E402

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/test"


def none_template(count: int) -> str:
    body = "".join(f"  r{i}: {{type: OS::Heat::None}}\n" for i in range(count))
    return f"heat_template_version: 2018-08-31\nresources:\n{body}"


def waiting_template(count: int, seconds: float) -> str:
    body = "".join(
        f"  r{i}:\n    type: OS::Heat::TestResource\n    properties: {{wait_secs: {seconds}}}\n"
        for i in range(count))
    return f"heat_template_version: 2018-08-31\nresources:\n{body}"


def wait(heat: Any, stack_id: str, wanted: str, timeout: float = 600) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        status = heat.stacks.get(stack_id).stack_status
        if status == wanted:
            return time.monotonic() - started
        if not status.endswith("IN_PROGRESS"):
            raise RuntimeError(f"stack {stack_id} ended {status}")
        time.sleep(0.2)
    raise RuntimeError(f"stack {stack_id} not {wanted} after {timeout}s")


def peak_rss_mib(kiln: servers.Kiln) -> float:
    total = 0.0
    for process in kiln.processes:
        status = pathlib.Path(f"/proc/{process.popen.pid}/status").read_text()
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                total += int(line.split()[1]) / 1024
    return round(total, 1)


def run_case(kiln: servers.Kiln, heat: Any, label: str, template: str, resources: int
             ) -> dict[str, Any]:
    started = time.monotonic()
    created = heat.stacks.create(stack_name=f"b{uuid.uuid4().hex[:8]}", template=template)
    stack_id = created["stack"]["id"]
    create_s = time.monotonic() - started
    create_s += wait(heat, stack_id, "CREATE_COMPLETE")
    started = time.monotonic()
    heat.stacks.delete(stack_id)
    delete_s = time.monotonic() - started + wait(heat, stack_id, "DELETE_COMPLETE")
    return {"setup": label, "case": f"{resources} x {template_kind(template)}",
            "resources": resources, "create_s": round(create_s, 3),
            "create_per_s": round(resources / create_s, 1), "delete_s": round(delete_s, 3),
            "peak_rss_mib": peak_rss_mib(kiln)}


def template_kind(template: str) -> str:
    return "TestResource(wait 1s)" if "wait_secs" in template else "OS::Heat::None"


def cases(sizes: list[int]) -> list[tuple[str, int]]:
    return [(none_template(n), n) for n in sizes] + [(waiting_template(50, 1), 50)]


def bench_setup(label: str, kiln: servers.Kiln, sizes: list[int]) -> list[dict[str, Any]]:
    try:
        creds = servers.new_tenant(kiln.env, "bench")
        heat = heat_client.Client("1", endpoint=kiln.endpoint(creds.tenant_id),
                                  token=creds.token)
        return [run_case(kiln, heat, label, template, n) for template, n in cases(sizes)]
    finally:
        kiln.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--engines", default="1,2")
    parser.add_argument("--output", default=str(ROOT / "tests/benchmarks/results/engine.json"))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = pathlib.Path(tmp)
        results += bench_setup("kiln-all sqlite", servers.start_all(base / "all", None), sizes)
        for engines in (int(e) for e in args.engines.split(",")):
            name = f"kiln_bench_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            try:
                kiln = servers.start_split(base / f"pg{engines}",
                                           f"postgresql+psycopg://postgres@127.0.0.1/{name}",
                                           engines=engines)
                results += bench_setup(f"postgresql {engines} engine(s)", kiln, sizes)
            finally:
                with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    columns = ["setup", "case", "create_s", "create_per_s", "delete_s", "peak_rss_mib"]
    widths = {c: max(len(c), *(len(str(r[c])) for r in results)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for row in results:
        print("  ".join(str(row[c]).ljust(widths[c]) for c in columns))
    output = pathlib.Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps({"results": results}, indent=2))
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
