"""The composition root: configuration -> database -> registries -> services -> processes.

Only ``engine.cmd`` imports this module. Everything below it receives plain values and
built objects, never ``cfg.CONF``.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from oslo_config import cfg

from engine import budget, config, logs
from engine.clock import Clock, utcnow
from engine.db import migration
from engine.db.queue_depth import read_queue_depth
from engine.db.session import Database, sqlite_file
from engine.errors import DatabaseMissing, KilnError, PluginConfigInvalid, StartupFailed
from engine.ir.stored import StoredIrs
from engine.lifecycle.base import PluginServices
from engine.lifecycle.registry import LifecycleRegistry, LifecycleSettings
from engine.metrics import QueueDepth
from engine.resources.registry import ResourceTypeRegistry
from engine.resources.shared_clients import ResourceServices
from engine.services.backlog import Backlog
from engine.services.events import StackEvents
from engine.services.health import HealthService
from engine.services.operator import OperatorService
from engine.services.stack_actions import StackActions
from engine.services.stack_reads import StackPaging, StackReads
from engine.services.tenants import TenantService
from engine.services.workers import WorkerService

if TYPE_CHECKING:
    # Imported where they are built, not at the top: the API (falcon, every endpoint),
    # the worker and these services bring the template functions and yaql with them,
    # some 250 ms of CPU that every kiln-manage command would pay, and most use none.
    from engine.services.approvals import Approvals
    from engine.services.lifecycle import LifecycleService
    from engine.services.proposals import StackLimits
    from engine.services.resource_types import ResourceTypes
    from engine.services.snapshots import StackSnapshots
    from engine.services.software_configs import SoftwareConfigs
    from engine.services.stack_dry_runs import StackDryRuns
    from engine.services.stack_resources import StackResources
    from engine.services.stack_writes import StackWrites
    from engine.worker.deliveries import DeliverySettings
    from engine.worker.loop import WorkerLoop

WsgiApp = Callable[..., Any]


class Kiln:
    """The wired application. Plugins load on first use, so ``kiln-manage db upgrade``
    works while a broken plugin is being fixed; the long-running processes load them in
    :func:`start` and refuse to run without them."""

    def __init__(self, conf: cfg.ConfigOpts, db: Database, *, clock: Clock = utcnow,
                 registry: ResourceTypeRegistry | None = None,
                 lifecycle: LifecycleRegistry | None = None) -> None:
        """``clock``, ``registry`` and ``lifecycle`` are the tests' seam (a moved clock,
        the types and plugins a test installs); a process reads the system's time and
        loads its plugins from their entry points."""
        self.conf = conf
        self.db = db
        self.clock = clock
        self._registry = registry
        self._lifecycle = lifecycle
        self.tenants = TenantService(db, clock)

    @functools.cached_property
    def registry(self) -> ResourceTypeRegistry:
        if self._registry is not None:
            return self._registry
        return ResourceTypeRegistry.load(services=ResourceServices.load(self.conf))

    @functools.cached_property
    def lifecycle(self) -> LifecycleRegistry:
        if self._lifecycle is not None:
            return self._lifecycle
        group = self.conf.lifecycle_plugins
        try:
            timeouts = {name: float(value)
                        for name, value in group.plugin_timeout_seconds.items()}
        except ValueError as exc:
            raise PluginConfigInvalid(option="plugin_timeout_seconds", reason=str(exc)) from None
        settings = LifecycleSettings(
            enabled=tuple(group.enabled), disabled=tuple(group.disabled),
            timeout_seconds=group.timeout_seconds, on_timeout=group.on_timeout,
            plugin_timeout_seconds=timeouts, plugin_on_timeout=dict(group.plugin_on_timeout),
            approval_window_seconds=group.approval_window_seconds)
        return LifecycleRegistry.load(settings, PluginServices(self.conf, self.db, self.clock))

    @functools.cached_property
    def lifecycle_service(self) -> LifecycleService:
        from engine.services.lifecycle import LifecycleService  # see TYPE_CHECKING above

        return LifecycleService(self.lifecycle)

    @functools.cached_property
    def irs(self) -> StoredIrs:
        """The one cache of stored stacks' IRs, shared by the services and the worker."""
        return StoredIrs(self.registry.get, self.registry.constraint)

    @functools.cached_property
    def stack_limits(self) -> StackLimits:
        from engine.services.proposals import StackLimits  # see TYPE_CHECKING above
        from engine.template.event_sinks import SinkRules

        return StackLimits(
            max_template_bytes=self.conf.api.max_template_bytes,
            max_stacks_per_tenant=self.conf.api.max_stacks_per_tenant,
            max_pending_operations=self.conf.api.max_pending_operations,
            default_timeout_seconds=self.conf.engine.stack_action_timeout_seconds,
            sink_rules=SinkRules(schemes=tuple(self.conf.event_sinks.allowed_schemes),
                                 max_per_stack=self.conf.event_sinks.max_per_stack))

    @functools.cached_property
    def stack_writes(self) -> StackWrites:
        from engine.services.stack_dry_runs import StackDryRuns  # see TYPE_CHECKING above
        from engine.services.stack_writes import StackWrites

        group = self.conf.lifecycle_plugins
        door = None
        # No door when no plugin would be asked: the request pays for no view.
        if group.check_at_the_door and self.lifecycle_service.judges_dry_runs:
            door = StackDryRuns(
                self.db, self.registry, self.stack_limits, self.clock, self.irs,
                lifecycle=self.lifecycle_service.at_the_door(group.door_timeout_seconds))
        return StackWrites(self.db, self.registry, self.stack_limits, self.clock, self.irs,
                           door=door)

    @functools.cached_property
    def stack_dry_runs(self) -> StackDryRuns:
        from engine.services.stack_dry_runs import StackDryRuns  # see TYPE_CHECKING above

        return StackDryRuns(self.db, self.registry, self.stack_limits, self.clock, self.irs,
                            lifecycle=self.lifecycle_service)

    @functools.cached_property
    def stack_reads(self) -> StackReads:
        return StackReads(self.db, self.irs, self.registry, self.clock, StackPaging(
            default=self.conf.api.default_stacks_per_page,
            maximum=self.conf.api.max_stacks_per_page))

    @functools.cached_property
    def stack_resources(self) -> StackResources:
        from engine.services.stack_resources import StackResources  # see TYPE_CHECKING above

        return StackResources(self.db, self.registry, self.clock, self.irs)

    @functools.cached_property
    def stack_snapshots(self) -> StackSnapshots:
        from engine.services.snapshots import StackSnapshots  # see TYPE_CHECKING above

        return StackSnapshots(
            self.db, self.registry, self.stack_limits, self.clock,
            max_per_stack=self.conf.api.max_snapshots_per_stack,
            backlog=Backlog(self.db, self.clock, self.conf.api.max_pending_operations))

    @functools.cached_property
    def stack_events(self) -> StackEvents:
        return StackEvents(self.db)

    @functools.cached_property
    def resource_types(self) -> ResourceTypes:
        from engine.services.resource_types import ResourceTypes  # see TYPE_CHECKING above

        return ResourceTypes(self.registry)

    def wsgi_app(self, *, metrics_multiprocess_dir: str | None = None) -> WsgiApp:
        """The API; with ``metrics_multiprocess_dir`` (kiln-api) its /metrics sums the
        metrics every gunicorn worker keeps there."""
        from engine.api.app import ApiServices, ApiSettings, create_app  # see TYPE_CHECKING
        from engine.services.stack_graph import StackGraphs

        actions = StackActions(self.db, self.clock,
                               self.conf.engine.stack_action_timeout_seconds,
                               backlog=Backlog(self.db, self.clock,
                                               self.conf.api.max_pending_operations),
                               registry=self.registry)
        # The plugins' settings (the console's plugin page) are read once, here, after the
        # plugins registered their own options: read on each request, the options not
        # registered yet would be registered on the live configuration from request
        # threads. Only the API shows them, so no kiln-manage command pays for reading.
        lifecycle = self.lifecycle_service.with_options(config.plugin_options(
            self.conf, [plugin.name for plugin in self.lifecycle_service.list_plugins()]))
        services = ApiServices(
            stack_writes=self.stack_writes, stack_dry_runs=self.stack_dry_runs,
            stack_reads=self.stack_reads, stack_actions=actions,
            resources=self.stack_resources, events=self.stack_events,
            resource_types=self.resource_types, tenants=self.tenants,
            lifecycle=lifecycle, workers=self.workers,
            health=HealthService(self.db), approvals=self.approvals,
            graphs=StackGraphs(self.db, self.irs, self.stack_reads,
                               self.stack_resources),
            operator=self.operator,
            snapshots=self.stack_snapshots,
            software_configs=self.software_configs)
        return create_app(services, ApiSettings(
            max_body_bytes=self.conf.api.max_body_bytes,
            healthcheck_detailed=self.conf.api.healthcheck_detailed,
            metrics_multiprocess_dir=metrics_multiprocess_dir))

    @functools.cached_property
    def software_configs(self) -> SoftwareConfigs:
        from engine.services.software_configs import SoftwareConfigs  # see TYPE_CHECKING

        return SoftwareConfigs(self.db, self.clock)

    @functools.cached_property
    def approvals(self) -> Approvals:
        from engine.services.approvals import Approvals  # see TYPE_CHECKING above

        return Approvals(self.db, self.clock)

    @functools.cached_property
    def workers(self) -> WorkerService:
        return WorkerService(self.db, self.clock)

    @functools.cached_property
    def operator(self) -> OperatorService:
        return OperatorService(self.db, self.clock, self.stack_reads, self.tenants, self.workers)

    def worker(self) -> WorkerLoop:
        from engine.worker.loop import WorkerLoop, WorkerSettings  # see TYPE_CHECKING above
        from engine.worker.poison import PoisonRule

        engine = self.conf.engine
        settings = WorkerSettings(
            max_parallel_steps=engine.max_parallel_steps, lease_seconds=engine.lease_seconds,
            type_concurrency=dict(engine.type_concurrency),
            heartbeat_interval_seconds=engine.heartbeat_interval_seconds,
            stall_seconds=engine.stall_seconds,
            idle_poll_seconds=engine.idle_poll_seconds,
            max_step_poll_seconds=engine.max_step_poll_seconds,
            operation_threads=engine.operation_threads,
            poison=PoisonRule(engine.internal_error_attempts,
                              engine.internal_error_backoff_seconds),
            api_url=self.public_api_url, deliveries=self.delivery_settings())
        return WorkerLoop(self.db, self.registry, settings, host=self.conf.host,
                          lifecycle=self.lifecycle, clock=self.clock, irs=self.irs)

    def delivery_settings(self) -> DeliverySettings:
        from engine.worker.deliveries import DeliverySettings  # see TYPE_CHECKING above

        sinks = self.conf.event_sinks
        return DeliverySettings(
            timeout_seconds=sinks.timeout_seconds, max_attempts=sinks.max_attempts,
            backoff_seconds=sinks.backoff_seconds,
            max_backoff_seconds=sinks.max_backoff_seconds, poll_seconds=sinks.poll_seconds,
            batch_size=sinks.batch_size, threads=sinks.threads,
            allowed_schemes=tuple(sinks.allowed_schemes),
            allow_private_targets=sinks.allow_private_targets)

    def queue_depth(self) -> QueueDepth | None:
        """What the workers have before them, for the gauges a metrics scrape reads in
        the processes that run a worker (``engine.metrics.queue_depth_reported``)."""
        return read_queue_depth(self.db, self.clock)

    @property
    def api_url(self) -> str:
        host = self.conf.api.bind_host
        host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.conf.api.bind_port}"

    @property
    def public_api_url(self) -> str:
        """Where signallers reach the API: ``[api] public_url``, else :attr:`api_url`."""
        return str(self.conf.api.public_url or self.api_url).rstrip("/")


def load_config(argv: Sequence[str], prog: str, description: str | None = None, *,
                configure_logs: bool = True) -> cfg.ConfigOpts:
    """The configuration, and the process's logging set up from it (``engine.logs``)
    unless ``configure_logs`` is False (kiln-manage: cliff owns its console, see
    ``engine.cli.app``). A log file that cannot be opened stops the process (exit 1)."""
    conf = config.load(argv, prog=prog, description=description)
    if configure_logs:
        settings = log_settings(conf)
        try:
            logs.configure(settings)
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            # fileConfig raises any of these for a file that is missing or wrong.
            path = settings.config_file or settings.file
            print(f"{prog}: cannot set up logging from {path}: "
                  f"{getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
            raise SystemExit(1) from None
    return conf


def log_settings(conf: cfg.ConfigOpts) -> logs.LogSettings:
    return logs.LogSettings(
        level="DEBUG" if conf.debug else str(conf.log_level).upper(),
        file=config.log_path(conf, "log_file"), format=conf.log_format,
        config_file=config.log_path(conf, "log_config_file"))


def start(argv: Sequence[str] | None, prog: str, description: str) -> Kiln:
    """Configuration and wiring for a long-running process; exit 1 with the reason when
    it must not start (a schema that is behind, a plugin that does not load).
    ``description`` (what the process runs) heads its ``--help``."""
    conf = load_config(list(sys.argv[1:] if argv is None else argv), prog, description)
    try:
        check_liveness_timing(conf)
        kiln = build(conf)
        # Load every plugin now: fail at start, not mid-request.
        kiln.registry  # noqa: B018
        kiln.lifecycle  # noqa: B018
        return kiln
    except KilnError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        raise SystemExit(1) from None


def check_liveness_timing(conf: cfg.ConfigOpts) -> None:
    """A worker stops acting on its claims a heartbeat before its liveness runs out, so
    the lease must hold at least two heartbeats (else it would stop between any two)."""
    engine = conf.engine
    if engine.lease_seconds < 2 * engine.heartbeat_interval_seconds:
        raise StartupFailed(
            reason=f"[engine] lease_seconds ({engine.lease_seconds}) must be at least "
                   f"twice heartbeat_interval_seconds ({engine.heartbeat_interval_seconds})")


def build(conf: cfg.ConfigOpts, *, check_schema: bool = True,
          create_database: bool = False) -> Kiln:
    """Wire Kiln; with ``check_schema`` refuse to run on a database that is behind.
    A SQLite file that does not exist is refused (DatabaseMissing, naming the path)
    unless ``create_database`` (``kiln-manage db upgrade``): opening it would create an
    empty database beside the operator's real one."""
    url = config.database_url(conf)
    path = sqlite_file(url)
    if path is not None and not os.path.exists(path):
        if not create_database:
            raise DatabaseMissing(path=path,
                                  files=", ".join(config.config_files(conf)) or "none")
        os.makedirs(os.path.dirname(path), exist_ok=True)
    db = Database(url, pool_size=conf.database.pool_size,
                  sqlite_busy_timeout_ms=conf.database.sqlite_busy_timeout_ms,
                  connect_timeout_seconds=conf.database.connect_timeout_seconds)
    if check_schema:
        migration.ensure_current(db)
    budget.configure(evaluation_budget(conf))
    return Kiln(conf, db)


def evaluation_budget(conf: cfg.ConfigOpts) -> budget.Budget:
    """What one evaluation of a template may cost, and how many resources a stack and
    its nested stacks may hold (``engine.budget``)."""
    return budget.from_options(lambda group, name: getattr(getattr(conf, group), name))
