"""The tenant's side of the stack services in one object, for tests that drive stacks
through their lives (create, let the worker run, read, signal) in a few lines; the unit,
functional and benchmark tests share it.

Production code is handed only the service it uses; here the services are the ones an
``engine.bootstrap.Kiln`` wires over the test's database, types, clock and limits, so a
test runs the real wiring (one ``StoredIrs`` for all of them, the limits read from the
configuration) and each method is the service's own.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

from oslo_config import cfg

from engine import config
from engine.bootstrap import Kiln
from engine.db.session import Database
from engine.lifecycle.registry import LifecycleRegistry
from engine.resources.registry import ResourceTypeRegistry
from engine.services.proposals import StackLimits


def kiln_config(limits: StackLimits) -> cfg.ConfigOpts:
    """Kiln's options at their defaults, with ``limits`` where bootstrap reads them; no
    file is read, so a developer's /etc/kiln/kiln.conf cannot change a test."""
    conf = cfg.ConfigOpts()
    config.register_opts(conf)
    conf([], project="kiln", default_config_files=[])
    conf.set_override("max_template_bytes", limits.max_template_bytes, group="api")
    conf.set_override("max_stacks_per_tenant", limits.max_stacks_per_tenant, group="api")
    conf.set_override("stack_action_timeout_seconds", limits.default_timeout_seconds,
                      group="engine")
    return conf


class StackApi:
    def __init__(self, db: Database, registry: ResourceTypeRegistry, limits: StackLimits,
                 clock: Callable[[], datetime.datetime], *,
                 lifecycle: LifecycleRegistry | None = None) -> None:
        # No lifecycle plugin unless the test installs some: Kiln would load every one.
        self.kiln = kiln = Kiln(kiln_config(limits), db, clock=clock, registry=registry,
                                lifecycle=lifecycle or LifecycleRegistry(()))
        self.irs = kiln.irs  # a test's worker shares it, as Kiln.worker() would
        self.writes = writes = kiln.stack_writes
        self.dry_runs = dry_runs = kiln.stack_dry_runs
        self.reads = reads = kiln.stack_reads
        self.resources = resources = kiln.stack_resources
        self.events = events = kiln.stack_events
        self.types = kiln.resource_types
        self.snapshots = kiln.stack_snapshots
        self.software_configs = kiln.software_configs

        self.create, self.update, self.delete = writes.create, writes.update, writes.delete
        self.preview, self.validate = dry_runs.preview, dry_runs.validate
        self.preview_update = dry_runs.preview_update
        self.lookup, self.get, self.list_stacks = reads.lookup, reads.get, reads.list_stacks
        self.get_template, self.get_environment = reads.get_template, reads.get_environment
        self.get_files, self.list_outputs = reads.get_files, reads.list_outputs
        self.get_output = reads.get_output
        self.list_resources, self.get_resource = (resources.list_resources,
                                                  resources.get_resource)
        self.resource_metadata = resources.resource_metadata
        self.mark_unhealthy, self.signal = resources.mark_unhealthy, resources.signal
        self.list_events, self.get_event = events.list_events, events.get_event
        self.lifecycle_calls = events.lifecycle_calls
        self.approvals = kiln.approvals
