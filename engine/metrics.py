"""Kiln's Prometheus metrics: every metric's definition, one recording function per event
the engine reports, and their exposition (specs/health-and-metrics.rst, Metrics).

The rest of the engine makes one call at each point (``operation_finished(action,
outcome, seconds)``) and never touches a prometheus_client object, so names, labels and
buckets are decided here only. Label values are bounded here or by the caller, as each
function says: a label never carries a tenant's id, a stack's name or any other text a
tenant writes.

The metrics live in prometheus_client's default registry, a registry being the one kind
of module state Kiln keeps. Under gunicorn (kiln-api) prometheus_client's multiprocess
mode keeps each worker's values in files of a shared directory, which it chooses when it
is first imported: ``engine/cmd/api.py`` sets ``PROMETHEUS_MULTIPROC_DIR`` before anything
imports this module, and :func:`exposition` reads that directory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import ParamSpec

from prometheus_client import (
    CONTENT_TYPE_PLAIN_0_0_4,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
    multiprocess,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

LOG = logging.getLogger(__name__)

#: The ``Content-Type`` of :func:`exposition`'s text: the classic text format (0.0.4), as
#: prometheus_client's own server labels it. (Its ``CONTENT_TYPE_LATEST`` names 1.0.0,
#: the format that allows UTF-8 names, which ``generate_latest`` writes only when asked.)
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
#: The ``route`` of a request that matched no route template (a 404, the ARN sink).
UNMATCHED_ROUTE = "unmatched"
#: The ``method`` of a request whose method is none of :data:`METHODS`.
OTHER_METHOD = "other"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
#: The ``resource_type`` of a step whose type no installed plugin registers by name: a
#: provider template or an environment's alias, text a tenant writes.
OTHER_TYPE = "other"
#: The ``outcome`` of an operation that a cancel ended (its stack shows FAILED).
CANCELLED = "CANCELLED"
#: ``kiln_event_deliveries_total`` outcomes.
DELIVERED, RETRIED, GIVEN_UP = "delivered", "retried", "given_up"
#: ``kiln_database_errors_total`` kinds: the database did not answer (refused, gone,
#: locked past the busy timeout), or aborted a transaction (a deadlock, a serialisation
#: failure), which ``Database.retrying`` may run again.
UNAVAILABLE, ABORTED = "unavailable", "aborted"

# A counter's ``_created`` series doubles the output for a timestamp nobody alerts on,
# and multiprocess mode has none: both modes expose the same series without them.
disable_created_metrics()  # type: ignore[no-untyped-call]

HTTP_REQUESTS = Counter(
    "kiln_http_requests_total", "HTTP requests answered, by route template, method and "
    "status.", ("route", "method", "status"))
HTTP_DURATION = Histogram(
    "kiln_http_request_duration_seconds", "Time from a request's arrival in the API to its "
    "response, by route template and method.", ("route", "method"))
OPERATIONS_STARTED = Counter(
    "kiln_operations_started_total", "Stack operations a worker claimed for the first "
    "time, by action.", ("action",))
OPERATIONS_FINISHED = Counter(
    "kiln_operations_finished_total", "Stack operations ended, by action and outcome "
    "(COMPLETE, FAILED or CANCELLED).", ("action", "outcome"))
OPERATION_DURATION = Histogram(
    "kiln_operation_duration_seconds", "Time from a stack operation's creation (the "
    "request) to its end, by action and outcome.", ("action", "outcome"),
    buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400))
STEPS_FINISHED = Counter(
    "kiln_steps_finished_total", "Resource steps closed by a worker, by resource type "
    "and outcome (COMPLETE or FAILED).", ("resource_type", "outcome"))
STEP_DURATION = Histogram(
    "kiln_step_duration_seconds", "Time from a resource step's first claim to its close, "
    "by resource type and outcome.", ("resource_type", "outcome"),
    buckets=(0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 900, 1800, 3600))
LEASE_TAKEOVERS = Counter(
    "kiln_lease_takeovers_total", "Claims of an operation or step whose lease another "
    "worker held and let expire (it died, or stopped renewing), by kind.", ("kind",))
PLUGIN_CALLS = Counter(
    "kiln_lifecycle_plugin_calls_total", "Lifecycle plugin calls, by plugin, phase (pre "
    "or post) and verdict.", ("plugin", "phase", "verdict"))
PLUGIN_DURATION = Histogram(
    "kiln_lifecycle_plugin_call_duration_seconds", "Time a lifecycle plugin call took "
    "(up to its timeout), by plugin and phase.", ("plugin", "phase"),
    buckets=(0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120))
DATABASE_ERRORS = Counter(
    "kiln_database_errors_total", "Units of work the database failed, by kind "
    "(unavailable, aborted).", ("kind",))
DATABASE_RETRIES = Counter(
    "kiln_database_retries_total", "Transactions run again after the database aborted "
    "them (a deadlock or a serialisation failure).")
EVENT_DELIVERIES = Counter(
    "kiln_event_deliveries_total", "Tries to deliver an event to an event sink, by "
    "outcome (delivered, retried: failed and due again, given_up: failed for the last "
    "time).", ("outcome",))


# --- recording ----------------------------------------------------------------------------

P = ParamSpec("P")


def _never_raises(record: Callable[P, None]) -> Callable[P, None]:
    """A metric is never worth a request or a worker's tick: in multiprocess mode each
    count is a write to a file under state_path, which a full disk refuses. The failure
    is logged and the count lost."""
    @functools.wraps(record)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            record(*args, **kwargs)
        except Exception:  # noqa: BLE001
            LOG.warning("recording metric %s failed", record.__name__, exc_info=True)

    return guarded



@_never_raises
def http_request(route: str | None, method: str, status: int, seconds: float) -> None:
    """One answered request. ``route`` is the route template that matched (None: none
    did); the method is bounded here, for a client may send any word."""
    route = route or UNMATCHED_ROUTE
    method = method if method in METHODS else OTHER_METHOD
    HTTP_REQUESTS.labels(route, method, str(status)).inc()
    HTTP_DURATION.labels(route, method).observe(seconds)


@_never_raises
def operation_started(action: str) -> None:
    OPERATIONS_STARTED.labels(action).inc()


@_never_raises
def operation_finished(action: str, outcome: str, seconds: float) -> None:
    OPERATIONS_FINISHED.labels(action, outcome).inc()
    OPERATION_DURATION.labels(action, outcome).observe(seconds)


@_never_raises
def step_finished(resource_type: str, outcome: str, seconds: float | None) -> None:
    """One closed step. ``resource_type`` is bounded by the caller (a registered type's
    name, else :data:`OTHER_TYPE`); ``seconds`` None: not known, counted only."""
    STEPS_FINISHED.labels(resource_type, outcome).inc()
    if seconds is not None:
        STEP_DURATION.labels(resource_type, outcome).observe(seconds)


@_never_raises
def lease_taken_over(kind: str, count: int = 1) -> None:
    """``kind``: operation or step."""
    LEASE_TAKEOVERS.labels(kind).inc(count)


@_never_raises
def lifecycle_plugin_call(plugin: str, phase: str, verdict: str, seconds: float) -> None:
    PLUGIN_CALLS.labels(plugin, phase, verdict).inc()
    PLUGIN_DURATION.labels(plugin, phase).observe(seconds)


@_never_raises
def database_error(kind: str) -> None:
    DATABASE_ERRORS.labels(kind).inc()


@_never_raises
def database_retry() -> None:
    DATABASE_RETRIES.inc()


@_never_raises
def event_delivery(outcome: str) -> None:
    """One try of an event sink delivery: :data:`DELIVERED`, :data:`RETRIED` or
    :data:`GIVEN_UP`."""
    EVENT_DELIVERIES.labels(outcome).inc()


# --- queue depth, read at scrape time ------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class QueueDepth:
    """What the workers have before them, as the database says at one moment."""

    ready_steps: int
    waiting_operations: int
    #: Age of the oldest operation not yet finished; 0 when there is none.
    oldest_running_operation_age_seconds: float
    #: Event sink deliveries owed, neither made nor given up (the outbox's depth).
    pending_event_deliveries: int = 0


class QueueDepthCollector(Collector):
    """The queue-depth gauges, read from the database at each scrape by ``read``.

    ``read`` answers None when the database does not (the error is counted where it was
    met): the gauges are left out of that scrape, so the scrape itself still answers and
    an alert on them sees no data rather than a false zero."""

    def __init__(self, read: Callable[[], QueueDepth | None]) -> None:
        self._read = read

    def describe(self) -> Iterable[Metric]:
        # Names only, so registering does not query the database.
        return list(_queue_families(None))

    def collect(self) -> Iterable[Metric]:
        try:
            depth = self._read()
        except Exception:  # noqa: BLE001 -- a bug here must not fail the whole scrape
            LOG.exception("reading the queue depth for a metrics scrape failed")
            return []
        return [] if depth is None else list(_queue_families(depth))


QUEUE_GAUGES = (
    ("kiln_ready_steps", "Resource steps ready to run that no worker has claimed yet.",
     "ready_steps"),
    ("kiln_waiting_operations", "Stack operations accepted that no worker has started "
     "yet.", "waiting_operations"),
    ("kiln_oldest_running_operation_age_seconds", "Age of the oldest stack operation not "
     "yet finished (0: none).", "oldest_running_operation_age_seconds"),
    ("kiln_pending_event_deliveries", "Event sink deliveries owed, neither made nor given "
     "up yet (the outbox's depth).", "pending_event_deliveries"),
)


def _queue_families(depth: QueueDepth | None) -> Iterator[GaugeMetricFamily]:
    """The gauges with ``depth``'s values; without, their names only."""
    for name, documentation, field in QUEUE_GAUGES:
        yield GaugeMetricFamily(name, documentation,
                                value=None if depth is None else getattr(depth, field))


@contextlib.contextmanager
def queue_depth_reported(read: Callable[[], QueueDepth | None]) -> Iterator[None]:
    """Report the queue depth ``read`` gives in this process's metrics while inside."""
    collector = QueueDepthCollector(read)
    REGISTRY.register(collector)
    try:
        yield
    finally:
        REGISTRY.unregister(collector)


# --- exposition ---------------------------------------------------------------------------


def exposition(multiprocess_dir: str | None = None) -> bytes:
    """The text exposition (:data:`CONTENT_TYPE`): this process's metrics, or with
    ``multiprocess_dir`` those of every process that wrote there (kiln-api's gunicorn
    workers, the dead ones' counters included), read afresh for each scrape."""
    if multiprocess_dir is None:
        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(  # type: ignore[no-untyped-call]
        registry, path=multiprocess_dir)
    return generate_latest(registry)


def mark_process_dead(pid: int, multiprocess_dir: str) -> None:
    """A gunicorn worker exited: drop its live-gauge files (its counters stay summed)."""
    multiprocess.mark_process_dead(pid, multiprocess_dir)  # type: ignore[no-untyped-call]


def serve(host: str, port: int) -> Callable[[], None]:
    """Serve this process's metrics over HTTP on ``host:port`` (any path, ``/metrics``
    included) from a daemon thread; OSError when the address is taken. Returns the
    function that stops it."""
    server, thread = start_http_server(port, addr=host)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join()

    return stop
