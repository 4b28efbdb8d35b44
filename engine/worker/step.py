"""Runs one step: prepare the resource, call its handler, poll, record state and events.

Handlers run outside any transaction (a slow backend call must not hold SQLite's single
write lock), and every write after them is guarded by the step lease: a worker that lost
its lease discards its result instead of overwriting another worker's.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from engine.db import queries, steps
from engine.db.models import Operation, Stack, Step
from engine.db.models import Resource as ResourceRow
from engine.db.session import Database
from engine.db.states import STEP_RUNNING
from engine.errors import KilnError
from engine.ir.build import properties_for_runtime
from engine.ir.model import ResolvedStack
from engine.resources.base import (
    ADOPT,
    CHECK,
    CREATE,
    DELETE,
    RESUME,
    SUSPEND,
    Resource,
    action_methods,
)
from engine.resources.registry import ResourceTypeRegistry
from engine.template.parameters import redact
from engine.worker.state import StoredResource, StoredScope, stack_ir, stack_secrets

LOG = logging.getLogger(__name__)
Clock = Callable[[], datetime.datetime]
FIRST_POLL_SECONDS = 0.05
PER_OPERATION_CACHE_SIZE = 128
T = TypeVar("T")
IN_PROGRESS, COMPLETE, FAILED = "IN_PROGRESS", "COMPLETE", "FAILED"
# Actions whose resource instances are built from the IR (properties evaluated now);
# the others act on what is stored, so they work when a type has been uninstalled.
NEEDS_PROPERTIES = (CREATE, ADOPT)


class ResourceMissing(Exception):  # noqa: N818 -- the reason tenants read
    """The resource to act on does not exist (never created, or absent from adopt data)."""


class LeaseLost(Exception):
    """Another worker owns the step now; drop it without writing."""


class StepRuntime:
    """The ``engine.resources.base.Runtime`` a resource instance gets from the worker."""

    def __init__(self, db: Database, clock: Clock, stack: Stack, row_id: int,
                 resource_name: str) -> None:
        self._db = db
        self._clock = clock
        self._row_id = row_id
        self.stack_id = stack.id
        self.stack_name = stack.name
        self.tenant_id = stack.tenant_id
        self.resource_key = f"{stack.id}/{resource_name}/{row_id}"

    def now(self) -> float:
        return self._clock().timestamp()

    def record_physical_id(self, physical_id: str, data: Mapping[str, Any]) -> None:
        with self._db.transaction() as session:
            queries.record_physical_id(session, self._row_id, physical_id, dict(data),
                                       self._clock())


@dataclasses.dataclass
class HeldStep:
    step_id: int
    operation_id: str
    stack_id: str
    resource_name: str
    resource_type: str
    action: str
    instance: Resource
    secrets: tuple[str, ...]
    token: Any = None
    needs_start: bool = True
    next_poll_at: float = 0.0
    interval: float = FIRST_POLL_SECONDS
    saved_data: dict[str, Any] = dataclasses.field(default_factory=dict)
    adopt: Mapping[str, Any] | None = None  # this resource's abandon data, for ADOPT


class StepRunner:
    def __init__(self, db: Database, registry: ResourceTypeRegistry, owner: str,
                 clock: Clock, max_poll_seconds: float) -> None:
        self._db = db
        self._registry = registry
        self._owner = owner
        self._clock = clock
        self._max_poll = max_poll_seconds
        self._irs: dict[str, ResolvedStack] = {}
        self._secrets: dict[str, tuple[str, ...]] = {}
        self._adopt: dict[str, Mapping[str, Any]] = {}

    # --- entry points used by the loop ---------------------------------------------------

    def start(self, step_id: int) -> HeldStep | None:
        """Prepare a claimed step and start its action; None when it is already closed."""
        try:
            held = self._prepare(step_id)
            if held is None:
                return None
            if held.needs_start:
                start, _ = action_methods(held.instance, held.action, held.adopt)
                try:
                    held.token = start()
                except Exception as exc:  # noqa: BLE001 -- plugin code: any failure is state
                    self._fail(held, exc)
                    return None
                held.needs_start = False
                with self._db.transaction() as session:
                    self._save(session, held)
            return None if self.poll(held) else held
        except LeaseLost:
            return None

    def poll(self, held: HeldStep) -> bool:
        """Ask whether the action finished; True when the step is closed (or lost)."""
        try:
            _, check = action_methods(held.instance, held.action, held.adopt)
            try:
                done = check(held.token)
            except Exception as exc:  # noqa: BLE001 -- plugin code: any failure is state
                self._fail(held, exc)
                return True
            if done:
                self._complete(held)
                return True
            now = self._clock().timestamp()
            held.interval = min(held.interval * 2, self._max_poll)
            held.next_poll_at = now + held.interval
            if dict(held.instance.data) != held.saved_data:
                with self._db.transaction() as session:
                    self._save(session, held)
            return False
        except LeaseLost:
            return True

    # --- the three writes -----------------------------------------------------------------

    def _prepare(self, step_id: int) -> HeldStep | None:
        now = self._clock()
        failure: Exception | None = None
        with self._db.transaction() as session:
            step = session.get(Step, step_id)
            if step is None or step.lease_owner != self._owner or step.state != STEP_RUNNING:
                return None
            stack = queries.load_stack(session, step.stack_id)
            row = queries.get_resource(session, stack, step.resource_name)
            never_created = row.properties is None and row.physical_id is None
            if step.action in (DELETE, SUSPEND, RESUME) and never_created:
                # Nothing in the backend to act on. A delete still ends the resource.
                if step.action == DELETE:
                    self._set_state(session, stack, row, DELETE, COMPLETE, "state changed",
                                    now)
                if not steps.complete_step(session, step, self._owner, now):
                    raise LeaseLost()
                return None
            if step.action == CHECK and never_created:
                self._set_state(session, stack, row, CHECK, IN_PROGRESS, "state changed", now)
                self._record_failure(session, step, stack, row, ResourceMissing(
                    "the resource was never created"), (), now)
                return None
            try:
                cls = self._registry.get(row.type)
                # A delete needs no IR: one uninstalled type must not fail every other
                # resource's delete along with its own.
                ir = (self._ir(stack, step.operation_id) if step.action in NEEDS_PROPERTIES
                      else None)
            except KilnError as exc:
                # A type uninstalled since the stack was made: fail this step, keep working.
                if not step.started:
                    self._set_state(session, stack, row, step.action, IN_PROGRESS,
                                    "state changed", now)
                self._record_failure(session, step, stack, row, exc, (), now)
                return None
            secrets = self._per_operation(self._secrets, step.operation_id,
                                          lambda: stack_secrets(stack))
            if not step.started:
                self._set_state(session, stack, row, step.action, IN_PROGRESS,
                                "state changed", now)
            rows = {row.name: row}
            properties: Mapping[str, Any] = row.properties or {}
            if ir is not None:
                node = ir.resources[row.name]
                # Only what this resource references, so a step costs O(its references),
                # not O(size of the stack).
                for other in queries.list_resources_named(session, stack.id,
                                                          sorted(node.requires)):
                    rows[other.name] = other
                scope = StoredScope(ir, {n: StoredResource.of(r) for n, r in rows.items()},
                                    self._registry, self._runtime_factory(stack, rows))
                try:
                    properties = properties_for_runtime(node, cls, scope)
                    row.properties = properties
                except Exception as exc:  # noqa: BLE001 -- evaluation errors are state
                    failure = exc
            instance = cls(row.name, properties, self._runtime_factory(stack, rows)(row.name),
                           physical_id=row.physical_id, data=dict(row.data or {}))
            adopt = (self._adopt_data(session, step.operation_id).get(row.name)
                     if step.action == ADOPT else None)
            if step.action == ADOPT and adopt is None and failure is None:
                failure = ResourceMissing("the adopt data has no entry for this resource")
            held = HeldStep(step.id, step.operation_id, stack.id, row.name, row.type,
                            step.action, instance, secrets, token=step.token,
                            needs_start=not step.started, saved_data=dict(row.data or {}),
                            adopt=adopt)
        if failure is None and step.action in NEEDS_PROPERTIES and held.needs_start:
            try:
                instance.validate()
            except Exception as exc:  # noqa: BLE001 -- plugin code: any failure is state
                failure = exc
        if failure is not None:
            self._fail(held, failure)
            return None
        return held

    def _adopt_data(self, session: Any, operation_id: str) -> Mapping[str, Any]:
        """The abandon data's resources, read once per operation."""
        def read() -> Mapping[str, Any]:
            operation = session.get(Operation, operation_id)
            payload = operation.payload if operation is not None else None
            resources = (payload or {}).get("resources")
            return resources if isinstance(resources, Mapping) else {}

        return self._per_operation(self._adopt, operation_id, read)

    def _ir(self, stack: Stack, operation_id: str) -> ResolvedStack:
        """The stack's IR, built once per operation (one operation per stack at a time)."""
        return self._per_operation(self._irs, operation_id,
                                   lambda: stack_ir(stack, self._registry))

    @staticmethod
    def _per_operation(cache: dict[str, T], operation_id: str, make: Callable[[], T]) -> T:
        if operation_id not in cache:
            if len(cache) >= PER_OPERATION_CACHE_SIZE:
                cache.clear()
            cache[operation_id] = make()
        return cache[operation_id]

    def _save(self, session: Any, held: HeldStep) -> None:
        next_poll = datetime.datetime.fromtimestamp(held.next_poll_at, datetime.UTC)
        if not steps.save_progress(session, held.step_id, self._owner, held.token, next_poll):
            raise LeaseLost()
        row = self._row(session, held)
        row.data = dict(held.instance.data)
        held.saved_data = dict(held.instance.data)

    def _complete(self, held: HeldStep) -> None:
        now = self._clock()
        with self._db.transaction() as session:
            step = session.get(Step, held.step_id)
            if step is None or not steps.complete_step(session, step, self._owner, now):
                raise LeaseLost()
            row = self._row(session, held)
            row.data = dict(held.instance.data)
            row.physical_id = held.instance.physical_id
            stack = queries.load_stack(session, held.stack_id)
            self._set_state(session, stack, row, held.action, COMPLETE, "state changed", now)

    def _fail(self, held: HeldStep, exc: Exception) -> None:
        now = self._clock()
        with self._db.transaction() as session:
            step = session.get(Step, held.step_id)
            if step is None:
                raise LeaseLost()
            stack = queries.load_stack(session, held.stack_id)
            row = self._row(session, held)
            row.data = dict(held.instance.data)
            self._record_failure(session, step, stack, row, exc, held.secrets, now)

    def _record_failure(self, session: Any, step: Step, stack: Stack, row: ResourceRow,
                        exc: Exception, secrets: tuple[str, ...],
                        now: datetime.datetime) -> None:
        message = exc.message if isinstance(exc, KilnError) else str(exc)
        reason = redact(f"{type(exc).__name__}: resources.{row.name}: {message}", secrets)
        if not isinstance(exc, KilnError):
            LOG.info("resource %s of stack %s failed %s: %s", row.name, stack.id, step.action,
                     type(exc).__name__)
        if not steps.fail_step(session, step, self._owner, now,
                               f"Resource {step.action} failed: {reason}"):
            raise LeaseLost()
        self._set_state(session, stack, row, step.action, FAILED, reason, now)

    # --- small pieces ---------------------------------------------------------------------

    def _row(self, session: Any, held: HeldStep) -> ResourceRow:
        return queries.get_stack_resource(session, held.stack_id, held.resource_name)

    def _runtime_factory(self, stack: Stack, rows: Mapping[str, ResourceRow]
                         ) -> Callable[[str], StepRuntime]:
        def runtime(name: str) -> StepRuntime:
            return StepRuntime(self._db, self._clock, stack, rows[name].id, name)

        return runtime

    @staticmethod
    def _set_state(session: Any, stack: Stack, row: ResourceRow, action: str, status: str,
                   reason: str, now: datetime.datetime) -> None:
        row.action, row.status, row.status_reason, row.updated_at = action, status, reason, now
        queries.add_event(session, stack_id=stack.id, resource_name=row.name,
                          physical_resource_id=row.physical_id or "", resource_type=row.type,
                          action=action, status=status, reason=reason, now=now)
