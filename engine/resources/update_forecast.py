"""An update's forecast: what it will do to each resource, decided before it runs the
way its steps will decide it. The update preview and the lifecycle plugins' views (the
real pre-op and the dry runs) read the same forecast.

The update's planner (``plan_update``) says which resources get a CREATE, an UPDATE or a
DELETE step. Each UPDATE step is then decided by the worker's own decision functions
(``engine.ir.update_decision``: an external resource's, the update decision, and
``converge``'s), given the new properties evaluated as far as they can be before the
update runs:

* parameters are known;
* a resource the update leaves unchanged answers ``get_resource`` and ``get_attr`` from
  its stored state, exactly as the worker will read it (so the resources are decided in
  the new dependency order, each after those it uses);
* a resource changed in place keeps its physical id, so ``get_resource`` of it is known
  when its type answers with the physical id (the default); its attributes are not;
* nothing is known of a resource the update creates or replaces.

A property whose value is not known counts as changed (:data:`UNKNOWN` equals nothing),
so the decision errs towards more disturbance, never less: updated rather than
unchanged, replaced when the type cannot change that property in place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from engine.errors import KilnError
from engine.ir.build import properties_for_runtime
from engine.ir.graph import topological_order
from engine.ir.model import ResolvedStack, ResourceNode
from engine.ir.plan import ExistingResource, plan_delete, plan_update
from engine.ir.update_decision import (
    UNKNOWN,
    Decision,
    Stored,
    converging,
    decide,
    external_update,
    prop_diff,
    retains,
)
from engine.resources.base import Resource, Runtime
from engine.resources.registry import ResourceTypeRegistry
from engine.schema import coerce_properties
from engine.template.functions import Deferred, resolve
from engine.vocabulary import Action, Change

RuntimeFor = Callable[[str], Runtime]
#: Property name -> (old value, new value); None where a side has none.
Differences = Mapping[str, tuple[Any, Any]]

# What an update step's decision means for the resource. RESTORE happens only in a
# rollback, which is not forecast yet.
_CHANGE = {Decision.NONE: Change.NONE, Decision.UPDATE: Change.UPDATE,
           Decision.REPLACE: Change.REPLACE, Decision.CREATE: Change.CREATE}


class StoredRow(Protocol):
    """A stored resource (a ``Resource`` row satisfies it)."""

    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def action(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def properties(self) -> Any: ...
    @property
    def physical_id(self) -> str | None: ...
    @property
    def data(self) -> Any: ...
    @property
    def replaced(self) -> Any: ...
    @property
    def requires(self) -> Any: ...
    @property
    def deletion_policy(self) -> str: ...


@dataclasses.dataclass(frozen=True)
class StoredFacts:
    """A stored resource as the decision and the scope read it (a row's snapshot)."""

    name: str
    type: str
    action: str
    status: str
    properties: Mapping[str, Any] | None
    physical_id: str | None
    data: Mapping[str, Any]
    replaced: Mapping[str, Any] | None
    requires: frozenset[str]
    deletion_policy: str = "Delete"

    @classmethod
    def of(cls, row: StoredRow) -> StoredFacts:
        return cls(row.name, row.type, row.action, row.status, row.properties,
                   row.physical_id, dict(row.data or {}), row.replaced,
                   frozenset(row.requires or ()), row.deletion_policy)


@dataclasses.dataclass(frozen=True)
class PlannedChange:
    """What the operation will do to one resource, and the properties that differ
    (hidden values not masked yet: whoever shows them masks them)."""

    action: Change
    differences: Differences
    #: A DELETE whose deletion policy keeps the physical resource: it leaves the stack
    #: and is not destroyed.
    retained: bool = False


def forecast_update(target: ResolvedStack, stored: Mapping[str, StoredFacts],
                    types: ResourceTypeRegistry, runtime_for: RuntimeFor, *,
                    converge: bool = False) -> dict[str, PlannedChange]:
    """Each resource's planned change, by name: of the new template's resources and of
    the stored ones it drops. A resource created gets its known new properties, one
    deleted its stored ones, the others the properties whose values differ."""
    plan = plan_update(target, {name: ExistingResource(name, res.requires,
                                                       replaced=res.replaced is not None)
                                for name, res in stored.items()})
    primary = {step.resource: step for step in plan.steps
               if step.action in (Action.CREATE, Action.UPDATE)}
    found = {step.resource: _deleted(stored[step.resource])
             for step in plan.steps if step.action == Action.DELETE}
    decisions: dict[str, Decision] = {}
    scope = _ForecastScope(target.parameters, stored, decisions, types, runtime_for)
    order = topological_order({name: {dep for dep, _ in step.requires}
                               for name, step in primary.items()})
    for name in order:
        node = target.resources[name]
        if primary[name].action == Action.CREATE:
            decisions[name] = Decision.CREATE
            properties = _evaluate(node, types.get(node.type_name), scope)
            found[name] = PlannedChange(Change.CREATE, {
                key: (None, value) for key, value in properties.items() if value is not None})
            continue
        decisions[name], properties = _decide(node, stored[name], types, scope, runtime_for,
                                              converge)
        old = stored[name].properties or {}
        # An external resource's step leaves it as it is, whatever its properties say.
        differing = prop_diff(old, properties) if decisions[name] != Decision.NONE else {}
        found[name] = PlannedChange(_CHANGE[decisions[name]], {
            key: (old.get(key), properties.get(key)) for key in differing})
    return found


def forecast_create(target: ResolvedStack, types: ResourceTypeRegistry
                    ) -> dict[str, PlannedChange]:
    """A create's planned changes: every resource created, with its properties as far as
    they are known before anything exists."""
    return forecast_update(target, {}, types, _no_runtime)


def forecast_delete(stored: Mapping[str, StoredFacts]) -> dict[str, PlannedChange]:
    """A delete's planned changes: every stored resource deleted, with its properties."""
    plan = plan_delete({name: ExistingResource(name, res.requires)
                        for name, res in stored.items()})
    return {step.resource: _deleted(stored[step.resource])
            for step in plan.steps if step.action == Action.DELETE}


def _deleted(stored: StoredFacts) -> PlannedChange:
    return PlannedChange(Change.DELETE, {key: (value, None)
                                         for key, value in (stored.properties or {}).items()
                                         if value is not None},
                         retained=retains(stored.deletion_policy))


def _no_runtime(name: str) -> Runtime:
    # A create has nothing stored: nothing is read, and no step decides.
    raise RuntimeError(f"resource {name} is not stored: it has no runtime to read from")


def _decide(node: ResourceNode, stored: StoredFacts, types: ResourceTypeRegistry,
            scope: _ForecastScope, runtime_for: RuntimeFor, converge: bool
            ) -> tuple[Decision, dict[str, Any]]:
    """The update step's decision, and the properties it was made with; each rule as
    ``StepDecider.decide`` applies it."""
    cls = types.get(node.type_name)  # the new IR was built: every type exists
    properties = _evaluate(node, cls, scope)
    if node.external_id is not None:
        try:
            return external_update(node.external_id, stored.physical_id,
                                   f"{node.name} ({stored.type})"), properties
        except KilnError:
            # The step fails on it: an update attempted, whatever else it would change.
            return Decision.UPDATE, properties
    probe = cls(node.name, properties, runtime_for(node.name))

    def needs_replacement(diff: Mapping[str, Any]) -> bool:
        try:
            return probe.needs_replacement(diff)
        except Exception:  # noqa: BLE001 -- plugin code, maybe handed UNKNOWN: assume the worst
            return True

    state = Stored(stored.type, stored.properties, stored.physical_id, stored.action,
                   stored.status, stored.replaced)
    decided = decide(state, node.type_name, properties, needs_replacement, False)
    return converging(decided, converge and cls.observes()), properties


def _evaluate(node: ResourceNode, cls: type[Resource], scope: _ForecastScope
              ) -> dict[str, Any]:
    """The properties the update step will see, :data:`UNKNOWN` where they cannot be
    known yet. When all are known this is the worker's own evaluation."""
    try:
        return properties_for_runtime(node, cls, scope)
    except Exception:  # noqa: BLE001, S110 -- some value is not known: key by key below
        pass
    written = node.properties if isinstance(node.properties, Mapping) else {}
    given: dict[str, Any] = {}
    for key, value in written.items():
        try:
            given[key] = resolve(value, scope)
        except Exception:  # noqa: BLE001 -- Deferred, or an error the step would hit
            given[key] = UNKNOWN
    result: dict[str, Any] = {}
    for key, prop in cls.properties_schema.items():
        if given.get(key) is UNKNOWN:
            result[key] = UNKNOWN
            continue
        try:
            result.update(coerce_properties({key: prop}, {key: given.get(key)}, ""))
        except KilnError:
            # A value from another resource that does not fit: the step will fail on
            # it, which is a change all the same.
            result[key] = UNKNOWN
    if cls.allow_unknown_properties:
        result.update({k: v for k, v in given.items() if k not in cls.properties_schema})
    return result


class _ForecastScope:
    """``get_param``, ``get_resource`` and ``get_attr`` as an update step will answer
    them, where that is known before the update runs (see the module documentation)."""

    def __init__(self, parameters: Mapping[str, Any], stored: Mapping[str, StoredFacts],
                 decisions: Mapping[str, Decision], types: ResourceTypeRegistry,
                 runtime_for: RuntimeFor) -> None:
        self._parameters = parameters
        self._stored = stored
        self._decisions = decisions
        self._types = types
        self._runtime_for = runtime_for

    def param(self, name: str) -> Any:
        return self._parameters[name]  # the build checked every reference

    def reference_id(self, resource: str) -> Any:
        decision = self._decisions.get(resource)
        known = decision in (Decision.NONE, Decision.UPDATE)
        instance = self._instance(resource) if known else None
        if instance is None or (decision == Decision.UPDATE and type(instance).get_reference_id
                                is not Resource.get_reference_id):
            raise Deferred(resource)
        return self._read(resource, instance.get_reference_id)

    def attribute(self, resource: str, attribute: str, path: Sequence[Any] = ()) -> Any:
        unchanged = self._decisions.get(resource) == Decision.NONE
        instance = self._instance(resource) if unchanged else None
        if instance is None:
            raise Deferred(resource)
        return self._read(resource, lambda: instance.get_attribute_path(attribute, path))

    def attributes(self, resource: str) -> Any:
        unchanged = self._decisions.get(resource) == Decision.NONE
        instance = self._instance(resource) if unchanged else None
        if instance is None:
            raise Deferred(resource)
        return self._read(resource, instance.all_attributes)

    def _instance(self, name: str) -> Resource | None:
        stored = self._stored.get(name)
        cls = self._types.for_stored(stored.type) if stored is not None else None
        if stored is None or cls is None or stored.properties is None:
            return None
        return cls(name, stored.properties, self._runtime_for(name),
                   physical_id=stored.physical_id, data=dict(stored.data))

    @staticmethod
    def _read(resource: str, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except Exception:  # noqa: BLE001 -- plugin code; the step would fail: a change
            raise Deferred(resource) from None
