"""engine.metrics: the recording functions' bounded labels, the queue-depth collector a
scrape reads (and survives), the multiprocess sum kiln-api's /metrics serves, and the
HTTP server kiln-engine serves its metrics with."""

from __future__ import annotations

import logging
import pathlib
import subprocess
import sys
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from engine import metrics
from tests.functional.servers import free_port
from tests.unit.metric_deltas import Moved

DEPTH = metrics.QueueDepth(ready_steps=3, waiting_operations=2,
                           oldest_running_operation_age_seconds=42.5)


def test_a_request_is_counted_by_its_route_template_and_a_bounded_method() -> None:
    moved = Moved()
    route = "/v1/{tenant_id}/stacks/{stack_name}/{stack_id}"

    metrics.http_request(route, "GET", 200, 0.25)
    metrics.http_request(None, "BREW", 404, 0.01)

    assert moved("kiln_http_requests_total", route=route, method="GET", status="200") == 1
    assert moved("kiln_http_request_duration_seconds_sum", route=route, method="GET") == 0.25
    assert moved("kiln_http_requests_total", route="unmatched", method="other",
                 status="404") == 1


def test_a_step_without_a_start_time_is_counted_but_not_timed() -> None:
    moved = Moved()

    metrics.step_finished("OS::Heat::None", "COMPLETE", None)
    metrics.step_finished("OS::Heat::None", "COMPLETE", 2.0)

    assert moved("kiln_steps_finished_total", resource_type="OS::Heat::None",
                 outcome="COMPLETE") == 2
    assert moved("kiln_step_duration_seconds_count", resource_type="OS::Heat::None",
                 outcome="COMPLETE") == 1


def test_plugin_calls_database_errors_retries_and_takeovers_are_counted() -> None:
    moved = Moved()

    metrics.lifecycle_plugin_call("quota", "pre", "timeout", 30.0)
    metrics.database_error(metrics.UNAVAILABLE)
    metrics.database_retry()
    metrics.lease_taken_over("operation", 2)

    assert moved("kiln_lifecycle_plugin_calls_total", plugin="quota", phase="pre",
                 verdict="timeout") == 1
    assert moved("kiln_lifecycle_plugin_call_duration_seconds_sum", plugin="quota",
                 phase="pre") == 30.0
    assert moved("kiln_database_errors_total", kind="unavailable") == 1
    assert moved("kiln_database_retries_total") == 1
    assert moved("kiln_lease_takeovers_total", kind="operation") == 2


def scrape(collector: metrics.QueueDepthCollector) -> str:
    registry = CollectorRegistry()
    registry.register(collector)
    return generate_latest(registry).decode()


def test_the_queue_depth_gauges_are_read_at_each_scrape() -> None:
    reads = []

    def read() -> metrics.QueueDepth:
        reads.append(1)
        return DEPTH

    collector = metrics.QueueDepthCollector(read)
    registry = CollectorRegistry()
    registry.register(collector)
    assert reads == []  # registering reads nothing

    text = generate_latest(registry).decode()

    assert reads == [1]
    assert "kiln_ready_steps 3.0" in text
    assert "kiln_waiting_operations 2.0" in text
    assert "kiln_oldest_running_operation_age_seconds 42.5" in text


def test_a_database_that_does_not_answer_leaves_the_gauges_out_not_the_scrape() -> None:
    assert "kiln_ready_steps" not in scrape(metrics.QueueDepthCollector(lambda: None))


def test_a_bug_reading_the_queue_depth_is_logged_and_the_scrape_answers(
        caplog: pytest.LogCaptureFixture) -> None:
    def read() -> metrics.QueueDepth:
        raise RuntimeError("a bug")

    with caplog.at_level(logging.ERROR, logger="engine.metrics"):
        text = scrape(metrics.QueueDepthCollector(read))

    assert "kiln_ready_steps" not in text
    assert "reading the queue depth" in caplog.text


def test_the_queue_depth_is_in_the_process_metrics_only_while_reported() -> None:
    with metrics.queue_depth_reported(lambda: DEPTH):
        assert b"kiln_waiting_operations 2.0" in metrics.exposition()
    assert b"kiln_waiting_operations" not in metrics.exposition()


# Two processes in multiprocess mode, as two gunicorn workers: each counts a request.
COUNT_ONE = """\
import sys
from engine import metrics
metrics.http_request("/healthcheck", "GET", 200, 0.5)
metrics.database_error(metrics.UNAVAILABLE)
"""


def test_the_multiprocess_exposition_sums_every_process_that_wrote_there(
        tmp_path: pathlib.Path) -> None:
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "PATH": ""}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", COUNT_ONE], env=env, check=True, timeout=30)

    text = metrics.exposition(str(tmp_path)).decode()

    assert ('kiln_http_requests_total{method="GET",route="/healthcheck",status="200"} 2.0'
            in text)
    assert 'kiln_http_request_duration_seconds_sum{method="GET",route="/healthcheck"} 1.0' \
        in text
    assert 'kiln_database_errors_total{kind="unavailable"} 2.0' in text


def test_serve_answers_the_metrics_over_http_until_stopped_and_refuses_a_busy_port(
        ) -> None:
    port = free_port()
    stop = metrics.serve("127.0.0.1", port)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
            body = answer.read().decode()
            assert answer.headers["Content-Type"] == metrics.CONTENT_TYPE
        with pytest.raises(OSError):
            metrics.serve("127.0.0.1", port)
    finally:
        stop()  # waits for the server's poll: half a second
    assert "# TYPE kiln_operations_started_total counter" in body
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5)


def test_a_count_that_fails_is_logged_and_never_raises(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def full_disk(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(metrics.HTTP_REQUESTS, "labels", full_disk)

    metrics.http_request("/healthcheck", "GET", 200, 0.01)

    assert "recording metric http_request failed" in caplog.text
