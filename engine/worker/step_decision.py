"""What a claimed step will do, decided in the transaction that prepares it: act on its
resource (with which action, properties and changes), delete what a replacement left
behind, close with nothing to do, or fail before it starts. ``engine.worker.step``
carries the decision out.

An update step's decision (``engine.ir.update_decision.decide``, the pure rule the
update preview calls too) is made once and stored with the step, so a step resumed by
another worker does the same thing; a replacement moves the current physical resource
aside in the same transaction. That is the one write made here; the caller makes the
others. A decision the stack's environment restricts (``restricted_actions``) fails the
step instead, its resource left as it is. In the restore of a snapshot the type's
``handle_restore`` first adjusts the properties the update is decided on
(``specs/stack-snapshots.rst``).
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import cachetools

from engine import errors, reasons
from engine.clock import Clock
from engine.db import resource_rows
from engine.db.models import Operation, Stack, Step
from engine.db.models import Resource as ResourceRow
from engine.db.session import Database, DbSession
from engine.errors import KilnError, ResourceActionRestricted, ResourceMissing
from engine.ir.build import properties_for_runtime
from engine.ir.stored import StoredIrs
from engine.ir.update_decision import (
    Decision,
    Stored,
    check_restricted,
    converging,
    decide,
    external_update,
    retains,
)
from engine.ir.update_decision import prop_diff as diff_of
from engine.resources.base import Resource
from engine.resources.drift import Drift, drift_of
from engine.resources.read_only import ReadOnlyRuntime
from engine.resources.registry import ResourceTypeRegistry
from engine.template.environment import (
    RESTRICTED_ACTIONS,
    resource_restricted_actions,
    sets_any,
)
from engine.vocabulary import Action
from engine.worker.step_runtime import Placements, StepRuntime
from engine.worker.stored_scope import StoredResource, StoredScope, stack_secrets

LOG = logging.getLogger(__name__)
T = TypeVar("T")
PER_OPERATION_CACHE_SIZE = 128
# Actions whose resource instances are built from the IR (properties evaluated now);
# the others act on what is stored, so they work when a type has been uninstalled.
NEEDS_PROPERTIES = (Action.CREATE, Action.ADOPT, Action.UPDATE)
# Actions with nothing to act on when the resource was never created.
NOTHING_IF_NEVER_CREATED = (Action.DELETE, Action.SUSPEND, Action.RESUME, Action.SNAPSHOT)


class Outcome(enum.Enum):
    ACT = "act"  # the step's handler acts on the resource itself
    CLEAN_UP = "clean up"  # delete the physical resource a replacement replaced
    RESTORE = "restore"  # a rollback: delete the replacement, take the replaced back
    CLOSE = "close"  # nothing to act on: the step closes, its resource untouched
    END = "end"  # a delete with nothing to delete: the resource ends DELETE_COMPLETE
    FAIL = "fail"  # the step fails before it starts


@dataclasses.dataclass(frozen=True)
class Definition:
    """What the template now says of the resource, stored on its row before acting."""

    type: str
    properties: Mapping[str, Any]
    deletion_policy: str


@dataclasses.dataclass(frozen=True)
class StepDecision:
    outcome: Outcome
    #: What the handler does: a replacement is a CREATE and an external resource's
    #: create or update an ADOPT; CLEAN_UP and RESTORE are a DELETE; END's event.
    action: str = ""
    instance: Resource | None = None
    resource_type: str = ""  # the type whose handler acts
    secrets: tuple[str, ...] = ()  # the stack's hidden values, kept out of reasons
    prop_diff: Mapping[str, Any] | None = None  # UPDATE: the changed properties
    adopt: Mapping[str, Any] | None = None  # ADOPT: the resource's abandon data
    converge: bool = False  # an UPDATE that observes the backend first
    definition: Definition | None = None  # ACT: None leaves the row's definition as is
    #: FAIL: why. ACT: what failed while preparing (evaluating the properties, the
    #: adopt data), recorded once the preparing transaction has ended.
    failure: Exception | None = None
    mark_in_progress: bool = False  # FAIL: the resource shows <ACTION>_IN_PROGRESS first
    #: FAIL: the resource keeps its state, an event records the failure (an action its
    #: environment restricts, refused before it touched the resource, as in Heat).
    keep_state: bool = False
    reason: str = ""  # END: the DELETE_COMPLETE reason


CLOSE = StepDecision(Outcome.CLOSE)


def failed(exc: Exception, *, mark_in_progress: bool = False, keep_state: bool = False
           ) -> StepDecision:
    return StepDecision(Outcome.FAIL, failure=exc, mark_in_progress=mark_in_progress,
                        keep_state=keep_state)


def per_operation() -> cachetools.LRUCache[str, Any]:
    """Facts of the operations whose steps are being decided, by operation id; the least
    recently used forgotten past ``PER_OPERATION_CACHE_SIZE``. Unlocked: a worker decides
    its steps in its loop's thread only (``WorkerLoop`` runs the ``StepRunner`` there)."""
    return cachetools.LRUCache(PER_OPERATION_CACHE_SIZE)


def read_once(cache: cachetools.LRUCache[str, T], operation_id: str, read: Callable[[], T]
              ) -> T:
    """The operation's fact in ``cache``, read (and kept) the first time."""
    if operation_id not in cache:
        cache[operation_id] = read()
    return cache[operation_id]


class StepDecider:
    """Decides what claimed steps will do. What a step needs of its operation (its
    action, its payload, its stack's secrets and IR) is read once per operation."""

    def __init__(self, db: Database, registry: ResourceTypeRegistry, clock: Clock, *,
                 api_url: str, irs: StoredIrs,
                 placements: Placements | None = None) -> None:
        self._db = db
        self._registry = registry
        self._clock = clock
        self._api_url = api_url
        self._irs = irs
        self._placements = placements
        self._secrets: cachetools.LRUCache[str, tuple[str, ...]] = per_operation()
        self._adopt: cachetools.LRUCache[str, Mapping[str, Any]] = per_operation()
        self._restore: cachetools.LRUCache[str, Mapping[str, Any]] = per_operation()
        self._actions: cachetools.LRUCache[str, str] = per_operation()
        self._converging: cachetools.LRUCache[str, bool] = per_operation()
        self._restricting: cachetools.LRUCache[str, Mapping[str, Any] | None] = per_operation()

    def decide(self, session: DbSession, step: Step, stack: Stack, row: ResourceRow
               ) -> StepDecision:
        if step.action == Action.CLEANUP:
            return self._replaced(step, stack, row, restoring=False)
        never_created = row.properties is None and row.physical_id is None
        retained = step.action == Action.DELETE and retains(row.deletion_policy)
        if (step.action in NOTHING_IF_NEVER_CREATED and never_created) or retained:
            # Nothing in the backend to act on, or the template says to leave it
            # there (deletion_policy: Retain). A delete still ends the resource.
            if step.action == Action.DELETE:
                return StepDecision(Outcome.END, Action.DELETE,
                                    reason=reasons.RETAINED if retained else reasons.STATE_CHANGED)
            return CLOSE
        if step.action == Action.CHECK and never_created:
            return failed(ResourceMissing(reason="the resource was never created"),
                          mark_in_progress=True)
        try:
            # A delete needs no IR: one uninstalled type must not fail every other
            # resource's delete along with its own.
            ir = (self._irs.for_operation(step.operation_id, stack)
                  if step.action in NEEDS_PROPERTIES else None)
            node = ir.resources[row.name] if ir is not None else None
            cls = self._registry.get(node.type_name if node is not None else row.type)
        except KilnError as exc:
            # A type uninstalled since the stack was made: fail this step, keep working.
            return failed(exc, mark_in_progress=not step.started)
        secrets = self.secrets(step.operation_id, stack)
        rows = {row.name: row}
        properties: Mapping[str, Any] = row.properties or {}
        failure: Exception | None = None
        if ir is not None and node is not None:
            # Only what this resource references, so a step costs O(its references),
            # not O(size of the stack).
            for other in resource_rows.list_resources_read_once(session, stack.id,
                                                                sorted(node.requires)):
                rows[other.name] = other
            scope = StoredScope(ir, {n: StoredResource.of(r) for n, r in rows.items()},
                                self._registry, self.runtimes(stack, rows))
            try:
                properties = properties_for_runtime(node, cls, scope)
            except Exception as exc:  # noqa: BLE001 -- evaluation errors are state
                failure = exc
        restored: dict[str, Any] = {}
        entry = (self._restore_entries(session, step.operation_id).get(row.name)
                 if node is not None and failure is None else None)
        if entry is not None:
            # A restore: the type adjusts what it is restored with (Heat's handle_restore)
            # before the update is decided on it. Pure, as the contract says: inside this
            # transaction a runtime call would open another one (SQLite: a deadlock).
            restorer = cls(row.name, properties, ReadOnlyRuntime(stack, row, self._clock))
            try:
                properties = dict(restorer.handle_restore(entry))
                restored = dict(restorer.data)
            except Exception as exc:  # noqa: BLE001 -- plugin code: any failure is state
                failure = exc
        action, prop_diff, converge = step.action, None, False
        external = node.external_id if node is not None else None
        if external is not None and step.action == Action.UPDATE and failure is None:
            try:
                if external_update(external, row.physical_id,
                                   f"{row.name} ({row.type})") == Decision.NONE:
                    return CLOSE  # an external resource is Heat's to look at, never to change
            except KilnError as exc:
                failure = exc
        if step.action == Action.UPDATE and failure is None and external is None:
            probe = cls(row.name, properties, self.runtimes(stack, rows)(row.name))
            converge = cls.observes() and self._converge(session, step.operation_id)
            try:
                decided = converging(self._decide_update(
                    session, step, stack, row, probe,
                    node.type_name if node is not None else row.type), converge)
            except ResourceActionRestricted as exc:
                return failed(exc, keep_state=True)
            if decided == Decision.NONE:
                return CLOSE
            if decided == Decision.RESTORE:
                return self._replaced(step, stack, row, restoring=True)
            action = (Action.CREATE if decided in (Decision.CREATE, Decision.REPLACE)
                      else Action.UPDATE)
            prop_diff = diff_of(row.properties or {}, properties)
            converge = converge and action == Action.UPDATE
        if external is not None and action in (Action.CREATE, Action.UPDATE) \
                and failure is None:
            action = Action.ADOPT  # take over the named thing instead of creating one
        definition = None
        if node is not None and failure is None:
            # An external resource stays when the stack goes (Heat's rule).
            definition = Definition(node.type_name, properties,
                                    "Retain" if external else node.deletion_policy)
        instance = cls(row.name, properties, self.runtimes(stack, rows)(row.name),
                       physical_id=row.physical_id, data={**(row.data or {}), **restored},
                       update_policy=node.update_policy if node is not None else None)
        adopt = (self._adopt_data(session, step.operation_id).get(row.name)
                 if step.action == Action.ADOPT else None)
        if action == Action.ADOPT and external is not None:
            adopt = {"resource_id": external, "resource_data": {}}
        if step.action == Action.ADOPT and adopt is None and failure is None:
            failure = ResourceMissing(reason="the adopt data has no entry for this resource")
        return StepDecision(Outcome.ACT, action, instance,
                            definition.type if definition is not None else row.type,
                            secrets, prop_diff=prop_diff, adopt=adopt, converge=converge,
                            definition=definition, failure=failure)

    def secrets(self, operation_id: str, stack: Stack) -> tuple[str, ...]:
        """The hidden values of ``stack`` as its operation ``operation_id`` defines it
        (read once an operation: parsing the stored definition costs a step more than
        the rest of its preparing)."""
        return read_once(self._secrets, operation_id, lambda: stack_secrets(stack))

    def runtimes(self, stack: Stack, rows: Mapping[str, ResourceRow]
                 ) -> Callable[[str], StepRuntime]:
        """The runtime of each resource among ``rows``, by name."""
        def runtime(name: str) -> StepRuntime:
            return StepRuntime(self._db, self._clock, stack, rows[name].id, name,
                               rows[name].generation, registry=self._registry,
                               api_url=self._api_url, placements=self._placements)

        return runtime

    def _decide_update(self, session: DbSession, step: Step, stack: Stack, row: ResourceRow,
                       probe: Resource, new_type: str) -> Decision:
        """An update step's decision, made once and stored with the step. A replacement
        moves the current physical resource aside (``row.replaced``) in the same
        transaction, so the new one is created into a clean row. One the environment
        restricts raises ResourceActionRestricted before anything is written."""
        if step.resource_action is not None:
            return Decision(step.resource_action)
        rolling_back = self.operation_action(session, step.operation_id) == Action.ROLLBACK
        decided = decide(
            Stored(row.type, row.properties, row.physical_id, row.action, row.status,
                   row.replaced),
            new_type, probe.properties, probe.needs_replacement, rolling_back)
        check_restricted(decided, self._restricted_actions(step.operation_id, stack, row.name))
        if decided == Decision.REPLACE:
            if row.replaced is not None:
                # An earlier replacement never cleaned up: that one goes first, with
                # this step's cleanup, and the current one is kept as the replaced.
                LOG.info("resource %s replaced again before its cleanup", row.name)
            row.replaced = {"type": row.type, "physical_id": row.physical_id,
                            "properties": row.properties, "data": dict(row.data or {}),
                            "generation": row.generation}
            row.generation += 1
            row.physical_id, row.data = None, {}
        step.resource_action = decided
        return decided

    def _replaced(self, step: Step, stack: Stack, row: ResourceRow, *, restoring: bool
                  ) -> StepDecision:
        """Delete one of the two physical resources a replacement left: the replaced one
        (CLEAN_UP, after its users moved on) or the replacement (a rollback's RESTORE,
        which then takes the replaced one back)."""
        replaced = row.replaced
        if replaced is None:
            return CLOSE
        secrets = self.secrets(step.operation_id, stack)
        try:
            if restoring:
                cls = self._registry.get(row.type)
                instance = cls(row.name, row.properties or {},
                               self.runtimes(stack, {row.name: row})(row.name),
                               physical_id=row.physical_id, data=dict(row.data or {}))
            else:
                cls = self._registry.get(replaced["type"])
                runtime = StepRuntime(self._db, self._clock, stack, row.id, row.name,
                                      replaced.get("generation", 0), replaced=True,
                                      registry=self._registry, api_url=self._api_url)
                instance = cls(row.name, replaced.get("properties") or {}, runtime,
                               physical_id=replaced.get("physical_id"),
                               data=dict(replaced.get("data") or {}))
        except KilnError as exc:
            return failed(exc)
        return StepDecision(Outcome.RESTORE if restoring else Outcome.CLEAN_UP,
                            Action.DELETE, instance,
                            row.type if restoring else replaced["type"], secrets)

    def _restricted_actions(self, operation_id: str, stack: Stack, name: str
                            ) -> frozenset[str]:
        """The actions the stack's environment as the operation defines it (an update's
        target, from its plan on; a nested stack's, inherited from its parent resource's
        entries) restricts on resource ``name``. Its registry is kept per operation only
        when some entry restricts an action: other stacks pay one lookup per step."""
        def read() -> Mapping[str, Any] | None:
            registry = (stack.environment or {}).get("resource_registry") or {}
            return registry if sets_any(registry, RESTRICTED_ACTIONS) else None

        registry = read_once(self._restricting, operation_id, read)
        return frozenset() if registry is None else resource_restricted_actions(registry, name)

    def operation_action(self, session: DbSession, operation_id: str) -> str:
        """The action of the operation (read once per operation)."""
        def read() -> str:
            operation = session.get(Operation, operation_id)
            return operation.action if operation is not None else ""

        return read_once(self._actions, operation_id, read)

    def _converge(self, session: DbSession, operation_id: str) -> bool:
        """Whether the update asked to observe reality first (Heat's ``converge``)."""
        def read() -> bool:
            operation = session.get(Operation, operation_id)
            payload = operation.payload if operation is not None else None
            return bool((payload or {}).get("converge"))

        return read_once(self._converging, operation_id, read)

    def _restore_entries(self, session: DbSession, operation_id: str) -> Mapping[str, Any]:
        """A restore's snapshot entries, by resource; none for any other operation."""
        def read() -> Mapping[str, Any]:
            operation = session.get(Operation, operation_id)
            if operation is None or operation.action != Action.RESTORE:
                return {}
            target = (operation.payload or {}).get("snapshot")
            resources = target.get("resources") if target else None
            return resources if isinstance(resources, Mapping) else {}

        return read_once(self._restore, operation_id, read)

    def _adopt_data(self, session: DbSession, operation_id: str) -> Mapping[str, Any]:
        """The abandon data's resources."""
        def read() -> Mapping[str, Any]:
            operation = session.get(Operation, operation_id)
            payload = operation.payload if operation is not None else None
            resources = (payload or {}).get("resources")
            return resources if isinstance(resources, Mapping) else {}

        return read_once(self._adopt, operation_id, read)


# --- observing the backend (outside any transaction, when the step starts) -----------


def observed_drift(instance: Resource) -> Drift:
    """How the backend differs from the resource's properties."""
    observed = instance.observe()
    if observed is None:
        raise ResourceMissing(reason=f"The physical resource {instance.physical_id} no "
                                     "longer exists")
    return drift_of(instance.properties, observed)


def converging_diff(instance: Resource, drift: Drift, prop_diff: Mapping[str, Any] | None
                    ) -> dict[str, Any]:
    """What a converging update changes: the drifted properties put back, with the
    template's own changes; empty when there is nothing to do."""
    if drift and instance.needs_replacement(drift):
        raise errors.NotSupported(reason=f"Drift in {', '.join(sorted(drift))} cannot be put "
                                         "back in place; change the template to replace the "
                                         "resource")
    return {**{name: instance.properties[name] for name in drift}, **(prop_diff or {})}
