"""The tenant's side of the stack services in one object, for tests that drive stacks
through their lives (create, let the worker run, read, signal) in a few lines.

Production code is handed only the service it uses (``engine.bootstrap``); here every
service is built as bootstrap builds them, over one ``StoredIrs``, and each method is the
service's own.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

from engine.db.session import Database
from engine.ir.stored import StoredIrs
from engine.resources.registry import ResourceTypeRegistry
from engine.services.events import StackEvents
from engine.services.lifecycle import LifecycleService
from engine.services.proposals import StackLimits
from engine.services.resource_types import ResourceTypes
from engine.services.stack_dry_runs import StackDryRuns
from engine.services.stack_reads import StackReads
from engine.services.stack_resources import StackResources
from engine.services.stack_writes import StackWrites


class StackApi:
    def __init__(self, db: Database, registry: ResourceTypeRegistry, limits: StackLimits,
                 clock: Callable[[], datetime.datetime], *,
                 lifecycle: LifecycleService | None = None,
                 irs: StoredIrs | None = None) -> None:
        self.irs = irs or StoredIrs(registry.get, registry.constraint)
        self.writes = writes = StackWrites(db, registry, limits, clock, self.irs)
        self.dry_runs = dry_runs = StackDryRuns(db, registry, limits, clock, self.irs,
                                                lifecycle=lifecycle)
        self.reads = reads = StackReads(db, self.irs)
        self.resources = resources = StackResources(db, registry, clock, self.irs)
        self.events = events = StackEvents(db)
        self.types = ResourceTypes(registry)

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
