"""The composition root: configuration -> database -> registries -> services -> processes.

Only ``engine.cmd`` imports this module. Everything below it receives plain values and
built objects, never ``cfg.CONF``.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from oslo_config import cfg

from engine import budget, config
from engine.api.app import ApiServices, ApiSettings, create_app
from engine.clock import Clock, utcnow
from engine.db import migration
from engine.db.session import Database, sqlite_file
from engine.errors import DatabaseMissing, KilnError, PluginConfigInvalid
from engine.ir.stored import StoredIrs
from engine.lifecycle.base import PluginServices
from engine.lifecycle.registry import LifecycleRegistry, LifecycleSettings
from engine.resources.registry import ResourceTypeRegistry
from engine.resources.shared_clients import ResourceServices
from engine.services.events import StackEvents
from engine.services.health import HealthService
from engine.services.lifecycle import LifecycleService
from engine.services.operator import OperatorService
from engine.services.proposals import StackLimits
from engine.services.resource_types import ResourceTypes
from engine.services.stack_actions import StackActions
from engine.services.stack_dry_runs import StackDryRuns
from engine.services.stack_reads import StackReads
from engine.services.stack_resources import StackResources
from engine.services.stack_writes import StackWrites
from engine.services.tenants import TenantService
from engine.services.workers import WorkerService
from engine.worker.loop import WorkerLoop, WorkerSettings
from engine.worker.poison import PoisonRule

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
            plugin_timeout_seconds=timeouts, plugin_on_timeout=dict(group.plugin_on_timeout))
        return LifecycleRegistry.load(settings, PluginServices(self.conf, self.db, self.clock))

    @functools.cached_property
    def lifecycle_service(self) -> LifecycleService:
        return LifecycleService(self.lifecycle)

    @functools.cached_property
    def irs(self) -> StoredIrs:
        """The one cache of stored stacks' IRs, shared by the services and the worker."""
        return StoredIrs(self.registry.get, self.registry.constraint)

    @functools.cached_property
    def stack_limits(self) -> StackLimits:
        return StackLimits(
            max_template_bytes=self.conf.api.max_template_bytes,
            max_stacks_per_tenant=self.conf.api.max_stacks_per_tenant,
            default_timeout_seconds=self.conf.engine.stack_action_timeout_seconds)

    @functools.cached_property
    def stack_writes(self) -> StackWrites:
        return StackWrites(self.db, self.registry, self.stack_limits, self.clock, self.irs)

    @functools.cached_property
    def stack_dry_runs(self) -> StackDryRuns:
        return StackDryRuns(self.db, self.registry, self.stack_limits, self.clock, self.irs,
                            lifecycle=self.lifecycle_service)

    @functools.cached_property
    def stack_reads(self) -> StackReads:
        return StackReads(self.db, self.irs)

    @functools.cached_property
    def stack_resources(self) -> StackResources:
        return StackResources(self.db, self.registry, self.clock, self.irs)

    @functools.cached_property
    def stack_events(self) -> StackEvents:
        return StackEvents(self.db)

    @functools.cached_property
    def resource_types(self) -> ResourceTypes:
        return ResourceTypes(self.registry)

    def wsgi_app(self) -> WsgiApp:
        actions = StackActions(self.db, self.clock,
                               self.conf.engine.stack_action_timeout_seconds)
        services = ApiServices(
            stack_writes=self.stack_writes, stack_dry_runs=self.stack_dry_runs,
            stack_reads=self.stack_reads, stack_actions=actions,
            resources=self.stack_resources, events=self.stack_events,
            resource_types=self.resource_types, tenants=self.tenants,
            lifecycle=self.lifecycle_service, workers=self.workers,
            health=HealthService(self.db))
        return create_app(services, ApiSettings(
            max_body_bytes=self.conf.api.max_body_bytes,
            healthcheck_detailed=self.conf.api.healthcheck_detailed))

    @functools.cached_property
    def workers(self) -> WorkerService:
        return WorkerService(self.db, self.clock, self.conf.engine.lease_seconds)

    @functools.cached_property
    def operator(self) -> OperatorService:
        return OperatorService(self.db, self.clock, self.stack_reads, self.tenants, self.workers)

    def worker(self) -> WorkerLoop:
        engine = self.conf.engine
        settings = WorkerSettings(
            max_parallel_steps=engine.max_parallel_steps, lease_seconds=engine.lease_seconds,
            type_concurrency=dict(engine.type_concurrency),
            heartbeat_interval_seconds=engine.heartbeat_interval_seconds,
            idle_poll_seconds=engine.idle_poll_seconds,
            max_step_poll_seconds=engine.max_step_poll_seconds,
            operation_threads=engine.operation_threads,
            poison=PoisonRule(engine.internal_error_attempts,
                              engine.internal_error_backoff_seconds),
            api_url=self.public_api_url)
        return WorkerLoop(self.db, self.registry, settings, host=self.conf.host,
                          lifecycle=self.lifecycle, clock=self.clock, irs=self.irs)

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


def load_config(argv: Sequence[str], prog: str,
                description: str | None = None) -> cfg.ConfigOpts:
    conf = config.load(argv, prog=prog, description=description)
    logging.basicConfig(
        level=logging.DEBUG if conf.debug else logging.INFO, stream=sys.stderr,
        format="%(asctime)s %(process)d %(levelname)s %(name)s %(message)s")
    return conf


def start(argv: Sequence[str] | None, prog: str, description: str) -> Kiln:
    """Configuration and wiring for a long-running process; exit 1 with the reason when
    it must not start (a schema that is behind, a plugin that does not load).
    ``description`` (what the process runs) heads its ``--help``."""
    conf = load_config(list(sys.argv[1:] if argv is None else argv), prog, description)
    try:
        kiln = build(conf)
        # Load every plugin now: fail at start, not mid-request.
        kiln.registry  # noqa: B018
        kiln.lifecycle  # noqa: B018
        return kiln
    except KilnError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        raise SystemExit(1) from None


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
                  sqlite_busy_timeout_ms=conf.database.sqlite_busy_timeout_ms)
    if check_schema:
        migration.ensure_current(db)
    budget.configure(evaluation_budget(conf))
    return Kiln(conf, db)


def evaluation_budget(conf: cfg.ConfigOpts) -> budget.Budget:
    """What one evaluation of a template may cost, and how many resources a stack and
    its nested stacks may hold (``engine.budget``)."""
    return budget.from_options(lambda group, name: getattr(getattr(conf, group), name))
