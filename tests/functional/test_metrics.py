"""Prometheus metrics from real processes (specs/health-and-metrics.rst, Metrics): kiln-api
under gunicorn with two workers, whose /metrics sums what every worker counted, and a
kiln-engine serving its own on ``[engine] metrics_port``, after a stack create, on a
PostgreSQL database of their own."""

from __future__ import annotations

import pathlib
import re
import time
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.functional import servers
from tests.functional.conftest import fresh_database, heat_for, unique, wait_for_status
from tests.templates import TWO_IN_ORDER as TEMPLATE

pytestmark = pytest.mark.postgresql

SPEC = pathlib.Path(__file__).parents[2] / "specs" / "health-and-metrics.rst"
BUILD_INFO = "/v1/{tenant_id}/build_info"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


class Split:
    """kiln-api (two gunicorn workers) and one kiln-engine with a metrics port."""

    def __init__(self, root: pathlib.Path, database_url: str) -> None:
        self.metrics_port = servers.free_port()
        self.kiln = servers.start_split(root, database_url, engines=1, OS_API__WORKERS="2",
                                        OS_ENGINE__METRICS_PORT=str(self.metrics_port))
        port = self.kiln.env["OS_API__BIND_PORT"]
        self.metrics_dir = root / "metrics" / f"kiln-api-{port}"
        self.api, self.engine = self.kiln.processes

    def engine_metrics(self) -> str:
        deadline = time.monotonic() + servers.READY_SECONDS
        while True:
            try:
                return fetch(f"http://127.0.0.1:{self.metrics_port}/metrics")
            except OSError:
                if time.monotonic() > deadline or self.engine.popen.poll() is not None:
                    raise AssertionError(f"no engine metrics:\n{self.kiln.logs()}") from None
                time.sleep(0.1)

    def workers_that_counted(self) -> set[int]:
        """The gunicorn workers (not the arbiter) with a counter file of their own."""
        pids = {int(match.group(1)) for path in self.metrics_dir.iterdir()
                if (match := re.fullmatch(r"counter_(\d+)\.db", path.name))}
        return pids - {self.api.popen.pid}


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Split]:
    with fresh_database() as url:
        started = Split(tmp_path_factory.mktemp("kiln-metrics"), url)
        yield started
        started.kiln.stop()


def fetch(url: str, token: str | None = None) -> str:
    request = urllib.request.Request(url, headers={"X-Auth-Token": token} if token else {})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return str(answer.read().decode())


def samples(text: str) -> Samples:
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(scraped: Samples, name: str, **labels: str) -> float:
    """The sample's value; a sample that is missing fails the test, even where 0 was
    expected (a gauge left out of a scrape is not a gauge at 0)."""
    key = (name, frozenset(labels.items()))
    assert key in scraped, f"no sample {name}{labels}"
    return scraped[key]


def test_after_a_create_both_processes_show_the_documented_counters(split: Split) -> None:
    credentials = servers.new_tenant(split.kiln.env, unique("metrics-"))
    heat = heat_for(split.kiln, credentials)
    stack_id = heat.stacks.create(stack_name=unique("m"), template=TEMPLATE)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    # Requests until each gunicorn worker has served some: /metrics must sum them all.
    sent = 0
    deadline = time.monotonic() + servers.READY_SECONDS
    while len(split.workers_that_counted()) < 2 or sent < 10:
        assert time.monotonic() < deadline, "one gunicorn worker served every request"
        fetch(f"{split.kiln.endpoint(credentials.tenant_id)}/build_info", credentials.token)
        sent += 1

    api = samples(fetch(f"{split.kiln.url}/metrics"))
    engine_text = split.engine_metrics()
    engine = samples(engine_text)

    assert value(api, "kiln_http_requests_total", route=BUILD_INFO, method="GET",
                 status="200") == sent
    assert value(api, "kiln_http_requests_total", route="/v1/{tenant_id}/stacks",
                 method="POST", status="201") == 1
    assert value(api, "kiln_http_request_duration_seconds_count", route=BUILD_INFO,
                 method="GET") == sent
    assert credentials.tenant_id not in str(api)
    assert value(engine, "kiln_operations_started_total", action="CREATE") == 1
    assert value(engine, "kiln_operations_finished_total", action="CREATE",
                 outcome="COMPLETE") == 1
    assert value(engine, "kiln_operation_duration_seconds_count", action="CREATE",
                 outcome="COMPLETE") == 1
    assert value(engine, "kiln_steps_finished_total", resource_type="OS::Heat::None",
                 outcome="COMPLETE") == 2
    assert value(engine, "kiln_ready_steps") == 0
    assert value(engine, "kiln_waiting_operations") == 0
    assert ("kiln_oldest_running_operation_age_seconds", frozenset()) in engine
    # Every metric the spec documents is defined (a kiln-engine declares them all).
    documented = set(re.findall(r"^   \* - ``(kiln_\w+)``", SPEC.read_text(), re.MULTILINE))
    assert len(documented) == 17
    declared = set(re.findall(r"^# TYPE (kiln_\w+) ", engine_text, re.MULTILINE))
    assert documented == declared


def test_kiln_all_serves_the_api_and_worker_metrics_with_the_queue_depth(
        kiln_all: servers.Kiln) -> None:
    # The shared kiln-all: only what it declares is read, not what others made it count.
    text = fetch(f"{kiln_all.url}/metrics")

    assert ("kiln_ready_steps", frozenset()) in samples(text)
    assert "# TYPE kiln_operations_finished_total counter" in text
    assert "# TYPE process_cpu_seconds_total counter" in text
