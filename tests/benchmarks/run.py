"""Kiln's benchmarks (not collected by pytest): print tables, write JSON.

    make benchmark                       # everything below, with the default sizes
    python tests/benchmarks/run.py --suites engine --sizes 1000 --engines 1

Suites (``--suites``, comma-separated; all by default):

* ``engine``: OS::Heat::None stacks of N resources in three shapes (flat; chain, each
  depending on the one before; tree, a root and N-1 resources that get_attr it), each
  created, updated with nothing changed, updated with one property changed on every
  resource, and deleted through python-heatclient, on kiln-all (SQLite) and on
  PostgreSQL with 1, 2 and 4 kiln-engine processes: wall seconds, resources per second,
  peak RSS of each process.
* ``waiting``: OS::Heat::TestResource with ``action_wait_secs: {create: 1}``: 50 flat, a
  chain of 5 layers of 10, 1000 flat; wall seconds against the critical path.
* ``api``: with 1,000 stacks stored, 32 concurrent clients on GET /stacks, GET of one
  stack and POST /stacks: median and p99 latency, requests per second.
* ``mixed``: on kiln-all, 50 clients for 60 s each creating a stack, showing one, listing
  and deleting one, without waiting out refusals: creates accepted, how many of them
  the worker completed within the minute, requests refused (503, ``Retry-After``),
  latencies.
* ``crash``: 20 stacks of 50 waiting resources (5 layers of 10, 1 s each) over three
  kiln-engine processes on PostgreSQL at Kiln's default lease, heartbeat and poll
  settings, the busiest killed with SIGKILL mid-way: time to finish (from the first
  create, and after the kill), resources created twice, stacks left IN_PROGRESS.
* ``statements``: SQL statements per resource of each shape and operation, counted in
  one process (the engine's own loop and services, no HTTP) on SQLite and PostgreSQL.

PostgreSQL is reached as postgres@127.0.0.1:5432 (database ``test`` to create scratch
databases); the processes run with the functional tests' settings
(``tests/functional/servers.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import http.client
import json
import pathlib
import random
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from heatclient import client as heat_client  # noqa: E402

from tests.functional import servers  # noqa: E402
from tests.functional.conftest import fresh_database  # noqa: E402
from tests.functional.dists import pip_install, with_path  # noqa: E402

VERSION = "heat_template_version: 2018-08-31\nresources:\n"
POLL = 0.1  # seconds between two looks at a stack's status


# --- templates -----------------------------------------------------------------------------

def shaped(shape: str, count: int, value: int = 1) -> str:
    """``count`` OS::Heat::None resources in ``shape``, each with property ``v``."""
    lines = []
    for i in range(count):
        props = f"v: {value}"
        if shape == "chain" and i:
            lines.append(f"  r{i}:\n    type: OS::Heat::None\n    depends_on: r{i - 1}\n"
                         f"    properties: {{{props}}}\n")
            continue
        if shape == "tree" and i:
            props += ", root: {get_attr: [r0, x]}"
        lines.append(f"  r{i}:\n    type: OS::Heat::None\n    properties: {{{props}}}\n")
    return VERSION + "".join(lines)


def waiting(layers: int, width: int, resource: str = "OS::Heat::TestResource",
            properties: str = "{action_wait_secs: {create: 1}}") -> str:
    """``layers`` layers of ``width`` waiting resources, each layer after the one before."""
    lines = []
    for layer in range(layers):
        after = (f"    depends_on: [{', '.join(f'l{layer - 1}r{i}' for i in range(width))}]\n"
                 if layer else "")
        lines += [f"  l{layer}r{i}:\n    type: {resource}\n{after}"
                  f"    properties: {properties}\n" for i in range(width)]
    return VERSION + "".join(lines)


# --- processes -----------------------------------------------------------------------------

@contextlib.contextmanager
def setups(base: pathlib.Path, engines: list[int], *, with_all: bool = True, **env: str
           ) -> Iterator[Iterator[tuple[str, servers.Kiln]]]:
    """kiln-all on SQLite (unless not ``with_all``), then kiln-api with each number of
    engines on PostgreSQL."""
    # Room for the largest stacks asked for (the defaults stop at 1000 resources).
    env = {"OS_API__MAX_RESOURCES_PER_STACK": "20000", "OS_API__MAX_TEMPLATE_BYTES": "8000000",
           "OS_API__MAX_BODY_BYTES": "16000000", **env}

    def each() -> Iterator[tuple[str, servers.Kiln]]:
        if with_all:
            kiln = servers.start_all(base / f"all-{uuid.uuid4().hex[:6]}", None, **env)
            try:
                yield "kiln-all sqlite", kiln
            finally:
                kiln.stop()
        for count in engines:
            with fresh_database() as url:
                kiln = servers.start_split(base / f"pg{count}-{uuid.uuid4().hex[:6]}", url,
                                           engines=count, **env)
                try:
                    yield f"postgresql {count} engine{'s' if count > 1 else ''}", kiln
                finally:
                    kiln.stop()

    yield each()


def heat_of(kiln: servers.Kiln, role: str = "member") -> Any:
    creds = servers.new_tenant(kiln.env, f"bench-{uuid.uuid4().hex[:6]}", role)
    return heat_client.Client("1", endpoint=kiln.endpoint(creds.tenant_id), token=creds.token)


def pids(kiln: servers.Kiln) -> list[int]:
    """Every process of the setup, gunicorn's forked workers included."""
    found = []
    for process in kiln.processes:
        found.append(process.popen.pid)
        for task in pathlib.Path(f"/proc/{process.popen.pid}/task").glob("*/children"):
            found += [int(p) for p in task.read_text().split()]
    return found


def reset_peaks(kiln: servers.Kiln) -> None:
    for pid in pids(kiln):
        with contextlib.suppress(OSError):
            pathlib.Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM


def peaks_mib(kiln: servers.Kiln) -> list[float]:
    peaks = []
    for pid in pids(kiln):
        with contextlib.suppress(OSError):
            for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peaks.append(round(int(line.split()[1]) / 1024, 1))
    return peaks


def wait_for(heat: Any, stack_id: str, wanted: str, timeout: float = 1800) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = heat.stacks.get(stack_id).stack_status
        if status == wanted:
            return
        if not status.endswith("IN_PROGRESS"):
            raise RuntimeError(f"stack {stack_id} ended {status}, not {wanted}")
        time.sleep(POLL)
    raise RuntimeError(f"stack {stack_id} not {wanted} after {timeout}s")


# --- suites --------------------------------------------------------------------------------

def run_shape(heat: Any, shape: str, size: int) -> dict[str, float]:
    """Create, update with nothing changed, update every resource, delete: seconds each."""
    times: dict[str, float] = {}
    started = time.monotonic()
    stack_id = heat.stacks.create(stack_name=f"b{uuid.uuid4().hex[:8]}",
                                  template=shaped(shape, size))["stack"]["id"]
    wait_for(heat, stack_id, "CREATE_COMPLETE")
    times["create"] = time.monotonic() - started
    for label, fields in (("no-op update", {}),
                          ("update all", {"template": shaped(shape, size, value=2)})):
        started = time.monotonic()
        heat.stacks.update(stack_id, existing=True, **fields)
        wait_for(heat, stack_id, "UPDATE_COMPLETE")
        times[label] = time.monotonic() - started
    started = time.monotonic()
    heat.stacks.delete(stack_id)
    wait_for(heat, stack_id, "DELETE_COMPLETE")
    times["delete"] = time.monotonic() - started
    return {label: round(seconds, 3) for label, seconds in times.items()}


def engine_suite(base: pathlib.Path, sizes: list[int], shapes: list[str],
                 engines: list[int], with_all: bool = True) -> list[dict[str, Any]]:
    rows = []
    with setups(base, engines, with_all=with_all) as each:
        for setup, kiln in each:
            heat = heat_of(kiln)
            for shape in shapes:
                for size in sizes:
                    reset_peaks(kiln)
                    times = run_shape(heat, shape, size)
                    for operation, seconds in times.items():
                        rows.append({"setup": setup, "shape": shape, "resources": size,
                                     "operation": operation, "seconds": seconds,
                                     "per_second": round(size / seconds, 1)})
                    rows[-1]["peak_rss_mib"] = peaks_mib(kiln)
                    print(f"  {setup} {shape} {size}: {times}, peak RSS MiB "
                          f"{rows[-1]['peak_rss_mib']}", flush=True)
    return rows


WAITING_CASES = [("50 flat", waiting(1, 50), 1.0), ("5 layers of 10", waiting(5, 10), 5.0),
                 ("1000 flat", waiting(1, 1000), 1.0)]


def create_seconds(heat: Any, template: str) -> float:
    started = time.monotonic()
    stack_id = heat.stacks.create(stack_name=f"w{uuid.uuid4().hex[:8]}",
                                  template=template)["stack"]["id"]
    wait_for(heat, stack_id, "CREATE_COMPLETE")
    return round(time.monotonic() - started, 3)


def waiting_suite(base: pathlib.Path, engines: list[int]) -> list[dict[str, Any]]:
    rows = []
    with setups(base, engines) as each:
        for setup, kiln in each:
            heat = heat_of(kiln)
            # One small stack first: what is measured is a running service's overhead,
            # not its first request's (imports, the statement cache, the plugins' first
            # calls), which took 0.1-0.15 s more.
            create_seconds(heat, waiting(1, 2))
            for label, template, critical in WAITING_CASES:
                seconds = create_seconds(heat, template)
                rows.append({"setup": setup, "case": label, "critical_path_s": critical,
                             "seconds": seconds, "over_s": round(seconds - critical, 3)})
                print(f"  {setup} {label}: {seconds}s", flush=True)
    return rows


def api_suite(base: pathlib.Path, stored: int = 1000, clients: int = 32,
              seconds: float = 5.0) -> list[dict[str, Any]]:
    rows = []
    kiln = servers.start_all(base / "api", None,
                             OS_API__MAX_STACKS_PER_TENANT=str(stored * 10),
                             # What it measures is the API's cost; creates arrive far
                             # faster than one worker starts them (the mixed suite
                             # measures the bound).
                             OS_API__MAX_PENDING_OPERATIONS="-1",
                             OS_LIFECYCLE_QUOTA__MAX_STACKS_PER_TENANT="-1")
    try:
        creds = servers.new_tenant(kiln.env, "bench-api")
        heat = heat_client.Client("1", endpoint=kiln.endpoint(creds.tenant_id),
                                  token=creds.token)
        one = VERSION + "  r: {type: OS::Heat::None}\n"
        ids = [heat.stacks.create(stack_name=f"s{i}", template=one)["stack"]["id"]
               for i in range(stored)]
        wait_for(heat, ids[-1], "CREATE_COMPLETE")
        host, port = kiln.url.removeprefix("http://").split(":")
        prefix = f"/v1/{creds.tenant_id}"
        body = json.dumps({"template": one, "stack_name": "x"})
        requests = {
            "GET /stacks": lambda n: ("GET", f"{prefix}/stacks", None),
            "GET /stacks/{name}/{id}": lambda n: ("GET", f"{prefix}/stacks/s7/{ids[7]}", None),
            "POST /stacks": lambda n: ("POST", f"{prefix}/stacks",
                                       body.replace('"x"', f'"p{uuid.uuid4().hex[:10]}"')),
        }
        for label, make in requests.items():
            latencies: list[float] = []
            lock = threading.Lock()
            stop_at = time.monotonic() + seconds

            def client(make: Callable[[int], tuple[str, str, str | None]] = make,
                       latencies: list[float] = latencies, lock: threading.Lock = lock,
                       stop_at: float = stop_at) -> None:
                conn = http.client.HTTPConnection(host, int(port), timeout=60)
                mine, n = [], 0
                while time.monotonic() < stop_at:
                    method, path, payload = make(n)
                    n += 1
                    started = time.monotonic()
                    conn.request(method, path, body=payload, headers={
                        "X-Auth-Token": creds.token, "Content-Type": "application/json"})
                    response = conn.getresponse()
                    response.read()
                    if response.status >= 400:
                        raise RuntimeError(f"{method} {path}: {response.status}")
                    mine.append(time.monotonic() - started)
                conn.close()
                with lock:
                    latencies.extend(mine)

            threads = [threading.Thread(target=client) for _ in range(clients)]
            started = time.monotonic()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.monotonic() - started
            latencies.sort()
            rows.append({"request": label, "stored_stacks": stored, "clients": clients,
                         "requests": len(latencies),
                         "median_ms": round(statistics.median(latencies) * 1000, 1),
                         "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 1),
                         "per_second": round(len(latencies) / wall, 1)})
            print(f"  {rows[-1]}", flush=True)
    finally:
        kiln.stop()
    return rows


def mixed_suite(base: pathlib.Path, clients: int = 50, seconds: float = 60.0,
                tenants: int = 10) -> list[dict[str, Any]]:
    """``clients`` threads (over ``tenants`` tenants) each in a loop for ``seconds``:
    create a one-resource stack, show one of its own, list its tenant's stacks (no
    limit), delete one of its own it saw complete. No client waits out a refusal's
    Retry-After: the load stays the heaviest. Then, from the operations table: the
    creates accepted in the window and how many of them completed within it."""
    kiln = servers.start_all(base / "mixed", None, OS_API__MAX_STACKS_PER_TENANT="100000",
                             OS_LIFECYCLE_QUOTA__MAX_STACKS_PER_TENANT="-1")
    try:
        creds = [servers.new_tenant(kiln.env, f"mixed-{n}") for n in range(tenants)]
        host, port = kiln.url.removeprefix("http://").split(":")
        body = json.dumps({"template": VERSION + "  r: {type: OS::Heat::None}\n",
                           "stack_name": "NAME"})
        lock = threading.Lock()
        latencies: dict[str, list[float]] = {k: [] for k in ("create", "show", "list",
                                                             "delete")}
        counts: Counter[str] = Counter()
        retry_after: list[int] = []
        started = time.monotonic()
        stop_at = started + seconds

        def client(n: int) -> None:
            mine = creds[n % tenants]
            prefix = f"/v1/{mine.tenant_id}/stacks"
            conn = http.client.HTTPConnection(host, int(port), timeout=120)
            waiting: list[str] = []  # name/id of its stacks not yet seen complete
            complete: list[str] = []
            timed: dict[str, list[float]] = {k: [] for k in latencies}
            tally: Counter[str] = Counter()
            waits: list[int] = []
            pick = random.Random(n)

            def call(kind: str, method: str, path: str, payload: str | None = None
                     ) -> tuple[int, bytes]:
                begun = time.monotonic()
                conn.request(method, path, body=payload, headers={
                    "X-Auth-Token": mine.token, "Content-Type": "application/json"})
                response = conn.getresponse()
                data = response.read()
                timed[kind].append(time.monotonic() - begun)
                if response.status == 503:
                    tally["refused"] += 1
                    waits.append(int(response.getheader("Retry-After") or 0))
                elif response.status >= 400:
                    tally["errors"] += 1
                return response.status, data

            while time.monotonic() < stop_at:
                name = f"m{uuid.uuid4().hex[:12]}"
                status, data = call("create", "POST", prefix, body.replace("NAME", name))
                if status == 201:
                    tally["created"] += 1
                    waiting.append(f"{name}/{json.loads(data)['stack']['id']}")
                if waiting and time.monotonic() < stop_at:
                    stack = pick.choice(waiting)
                    status, data = call("show", "GET", f"{prefix}/{stack}")
                    if status == 200 and json.loads(data)["stack"]["stack_status"] == (
                            "CREATE_COMPLETE"):
                        waiting.remove(stack)
                        complete.append(stack)
                if time.monotonic() < stop_at:
                    call("list", "GET", prefix)
                if complete and time.monotonic() < stop_at:
                    status, _ = call("delete", "DELETE", f"{prefix}/{complete.pop(0)}")
                    tally["deleted"] += status == 204
            conn.close()
            with lock:
                for kind, values in timed.items():
                    latencies[kind].extend(values)
                counts.update(tally)
                retry_after.extend(waits)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        window = time.monotonic() - started
        # Read from the operations table, as the engine wrote it: when each create was
        # accepted and when it finished.
        from engine.db.models import Operation
        from engine.db.session import Database

        db = Database(f"sqlite:///{kiln.env['OS_DEFAULT__STATE_PATH']}/kiln.sqlite")
        try:
            with db.read() as session:
                creates = [op for op in session.query(Operation) if op.action == "CREATE"]
        finally:
            db.dispose()
        first = min(op.created_at for op in creates)
        end = first + datetime.timedelta(seconds=window)
        completed = sum(1 for op in creates if op.state == "COMPLETE"
                        and op.finished_at is not None and op.finished_at <= end)
        every = sorted(x for values in latencies.values() for x in values)
        row = {"clients": clients, "seconds": seconds,
               "creates_accepted": counts["created"], "completed_in_window": completed,
               "completed_share": round(completed / max(1, counts["created"]), 3),
               "refused_503": counts["refused"],
               "retry_after_s": (f"{min(retry_after)}-{max(retry_after)}"
                                 if retry_after else "-"),
               "errors": counts["errors"], "deletes_accepted": counts["deleted"],
               "requests": len(every), "p50_ms": round(statistics.median(every) * 1000, 1),
               "p99_ms": round(every[int(len(every) * 0.99) - 1] * 1000, 1),
               **{f"{kind}_p50_ms": round(statistics.median(values) * 1000, 1)
                  for kind, values in latencies.items() if values}}
        print(f"  {row}", flush=True)
        return [row]
    finally:
        kiln.stop()

# The engine options the functional tests' servers shorten; the crash suite runs them at
# Kiln's defaults, since how soon a dead worker's work resumes is what it measures.
ENGINE_DEFAULTS = ("lease_seconds", "heartbeat_interval_seconds", "idle_poll_seconds",
                   "max_step_poll_seconds")


def crash_suite(base: pathlib.Path, stacks: int = 20, engines: int = 3) -> list[dict[str, Any]]:
    from engine.config import declared_default

    site = pip_install("kiln-test-resources", base / "site")
    ledger = base / "ledger.jsonl"
    env = with_path({}, site, base / "cache")
    env |= {f"OS_ENGINE__{name.upper()}": str(declared_default("engine", name))
            for name in ENGINE_DEFAULTS}
    with fresh_database() as url:
        kiln = servers.start_split(base / "crash", url, engines=engines,
                                   KILN_TEST_LEDGER=str(ledger), **env)
        try:
            heat, admin = heat_of(kiln), heat_of(kiln, "admin")
            template = waiting(5, 10, "Kiln::Test::Ledger", "{wait_secs: 1}")
            started = time.monotonic()
            ids = [heat.stacks.create(stack_name=f"c{i}", template=template)["stack"]["id"]
                   for i in range(stacks)]
            time.sleep(1.5)
            by_pid = {p.popen.pid: p for p in kiln.processes[1:]}
            busiest = max((s.to_dict() for s in admin.services.list()
                           if s.to_dict()["pid"] in by_pid), key=lambda s: s["steps_held"])
            by_pid[busiest["pid"]].popen.send_signal(signal.SIGKILL)
            killed = time.monotonic()
            left = 0
            for stack_id in ids:
                try:
                    wait_for(heat, stack_id, "CREATE_COMPLETE", timeout=300)
                except RuntimeError:
                    left += 1
            done = time.monotonic()
            entries = [json.loads(line) for line in ledger.read_text().splitlines()]
            created = Counter(e["name"] for e in entries if e["op"] == "create")
            row = {"stacks": stacks, "resources": stacks * 50, "engines": engines,
                   "lease_s": declared_default("engine", "lease_seconds"),
                   "heartbeat_s": declared_default("engine", "heartbeat_interval_seconds"),
                   "killed_holding_steps": busiest["steps_held"], "critical_path_s": 5.0,
                   "killed_at_s": round(killed - started, 2),
                   "finished_s": round(done - started, 2),
                   "after_kill_s": round(done - killed, 2),
                   "created_twice": sum(1 for n in created.values() if n > 1),
                   "created": len(created), "stacks_not_complete": left}
            print(f"  {row}", flush=True)
            return [row]
        finally:
            kiln.stop()


def statements_suite(size: int, shapes: list[str]) -> list[dict[str, Any]]:
    from tests.benchmarks.statements import count_statements

    rows = []
    for label, url in (("sqlite", None), ("postgresql", "postgres")):
        for shape in shapes:
            counts = count_statements(shaped(shape, size), shaped(shape, size, value=2), url)
            for operation, statements in counts.items():
                rows.append({"database": label, "shape": shape, "resources": size,
                             "operation": operation, "statements": statements,
                             "per_resource": round(statements / size, 1)})
            print(f"  {label} {shape}: {counts}", flush=True)
    return rows


# --- output --------------------------------------------------------------------------------

def table(title: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    columns = list(dict.fromkeys(k for row in rows for k in row))
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    print(f"\n{title}")
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for row in rows:
        print("  ".join(str(row.get(c, "")).ljust(widths[c]) for c in columns))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suites", default="engine,waiting,api,mixed,crash,statements")
    parser.add_argument("--sizes", default="10,100,1000,5000")
    parser.add_argument("--shapes", default="flat,chain,tree")
    parser.add_argument("--engines", default="1,2,4")
    parser.add_argument("--no-kiln-all", action="store_true",
                        help="engine suite: PostgreSQL setups only")
    parser.add_argument("--output", default=str(ROOT / "tests/benchmarks/results/run.json"))
    args = parser.parse_args()
    suites = args.suites.split(",")
    sizes = [int(s) for s in args.sizes.split(",")]
    shapes = args.shapes.split(",")
    engines = [int(e) for e in args.engines.split(",") if e]
    results: dict[str, list[dict[str, Any]]] = {}
    output = pathlib.Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    runs: dict[str, Callable[[pathlib.Path], list[dict[str, Any]]]] = {
        "engine": lambda base: engine_suite(base, sizes, shapes, engines,
                                            with_all=not args.no_kiln_all),
        "waiting": lambda base: waiting_suite(base, engines),
        "api": api_suite,
        "mixed": mixed_suite,
        "crash": crash_suite,
        "statements": lambda base: statements_suite(1000, shapes),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for suite in suites:
            (pathlib.Path(tmp) / suite).mkdir()
            results[suite] = runs[suite](pathlib.Path(tmp) / suite)
            # Written after each suite, so a failing suite keeps the others' figures.
            output.write_text(json.dumps(results, indent=2))
    for suite, rows in results.items():
        table(suite, rows)
    print(f"\nwrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
