"""Update preview (``PUT|PATCH .../preview``): what an update would do to each resource,
decided the way the update itself decides it.

The update's planner (``plan_update``) says which resources get a CREATE, an UPDATE or a
DELETE step. Each UPDATE step is then decided by the worker's own decision function,
given the new properties evaluated as far as they can be before the update runs:

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
import datetime
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine import reasons
from engine.clock import Clock
from engine.db.models import Resource as ResourceRow
from engine.db.models import Stack
from engine.errors import KilnError
from engine.ir.build import properties_for_runtime, pseudo_parameters
from engine.ir.graph import topological_order
from engine.ir.model import ResolvedStack, ResourceNode
from engine.ir.plan import ExistingResource, plan_update
from engine.ir.update_decision import Decision, Stored, decide
from engine.lifecycle.snapshot import Redefined
from engine.resources.base import Resource, Runtime
from engine.resources.registry import ResourceTypeRegistry
from engine.schema import coerce_properties
from engine.services.attributes import ReadOnlyRuntime, read_attributes
from engine.services.resource_requests import static_metadata
from engine.template.functions import Deferred, resolve
from engine.template.parameters import redact
from engine.vocabulary import Action, Status

RuntimeFor = Callable[[str], Runtime]

# The keys of Heat's ``resource_changes``, in the order Heat's clients list them.
ADDED, DELETED, REPLACED, UNCHANGED, UPDATED = (
    "added", "deleted", "replaced", "unchanged", "updated")
CATEGORIES = (ADDED, DELETED, REPLACED, UNCHANGED, UPDATED)
# Decisions (``steps.resource_action``) -> categories. RESTORE happens only in a rollback.
CATEGORY = {Decision.NONE: UNCHANGED, Decision.UPDATE: UPDATED, Decision.REPLACE: REPLACED,
            Decision.CREATE: ADDED}
# As in Heat: what goes away is shown as it is stored, the rest as the new stack has it.
FROM_STORED = (UPDATED, DELETED)


class _Unknown:
    """A property value not known before the update runs. It equals nothing, so the
    decision sees the property as changed."""

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return "<not known before the update>"


UNKNOWN: Any = _Unknown()


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

    @classmethod
    def of(cls, row: ResourceRow) -> StoredFacts:
        return cls(row.name, row.type, row.action, row.status, row.properties,
                   row.physical_id, dict(row.data or {}), row.replaced,
                   frozenset(row.requires or ()))


@dataclasses.dataclass(frozen=True)
class ChangedResource:
    """One item of ``resource_changes`` (Heat's raw resource format)."""

    name: str
    type: str
    action: str
    status: str
    status_reason: str
    physical_id: str
    created_at: datetime.datetime | None
    updated_at: datetime.datetime | None
    required_by: list[str]
    description: str
    metadata: Any
    attributes: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class UpdatePreview:
    stack_id: str
    stack_name: str
    tenant_id: str
    changes: dict[str, list[ChangedResource]]  # every key of CATEGORIES, items by name
    lifecycle: list[dict[str, Any]]  # each plugin's dry-run verdict on the update


# --- deciding ----------------------------------------------------------------------------


def categorise(target: ResolvedStack, stored: Mapping[str, StoredFacts],
               types: ResourceTypeRegistry, runtime_for: RuntimeFor) -> dict[str, str]:
    """Each resource's category (a key of ``resource_changes``), by name: of the new
    template's resources and of the stored ones it drops."""
    plan = plan_update(target, {name: ExistingResource(name, res.requires,
                                                       replaced=res.replaced is not None)
                                for name, res in stored.items()})
    primary = {step.resource: step for step in plan.steps
               if step.action in (Action.CREATE, Action.UPDATE)}
    found = {step.resource: DELETED for step in plan.steps if step.action == Action.DELETE}
    decisions: dict[str, Decision] = {}
    scope = _PreviewScope(target.parameters, stored, decisions, types, runtime_for)
    order = topological_order({name: {dep for dep, _ in step.requires}
                               for name, step in primary.items()})
    for name in order:
        if primary[name].action == Action.CREATE:
            decisions[name] = Decision.CREATE
        else:
            decisions[name] = _decide(target.resources[name], stored[name], types, scope,
                                      runtime_for)
        found[name] = CATEGORY[decisions[name]]
    return found


def _decide(node: ResourceNode, stored: StoredFacts, types: ResourceTypeRegistry,
            scope: _PreviewScope, runtime_for: RuntimeFor) -> Decision:
    cls = types.get(node.type_name)  # the new IR was built: every type exists
    properties = _evaluate(node, cls, scope)
    probe = cls(node.name, properties, runtime_for(node.name))

    def needs_replacement(diff: Mapping[str, Any]) -> bool:
        try:
            return probe.needs_replacement(diff)
        except Exception:  # noqa: BLE001 -- plugin code, maybe handed UNKNOWN: assume the worst
            return True

    state = Stored(stored.type, stored.properties, stored.physical_id, stored.action,
                   stored.status, stored.replaced)
    return decide(state, node.type_name, properties, needs_replacement, False)


def _evaluate(node: ResourceNode, cls: type[Resource], scope: _PreviewScope
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


class _PreviewScope:
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


# --- the response ------------------------------------------------------------------------


def stored_request(stack: Stack) -> dict[str, Any]:
    """The stored definition an update request starts from (``update_body``'s input)."""
    return {"stack_name": stack.name, "template": stack.template,
            "parameters": stack.parameters, "environment": stack.environment,
            "files": stack.files, "tags": stack.tags, "timeout_mins": stack.timeout_mins,
            "disable_rollback": stack.disable_rollback}


def pre_op_stacks(stack: Stack, new: Stack) -> tuple[Redefined, Redefined]:
    """``stack`` and ``current_stack`` as the update's lifecycle pre-op will see them:
    UPDATE_IN_PROGRESS with the request's tags, timeout and rollback flag, the first
    with the stored definition and the second with the new one."""
    previous = Redefined(
        id=stack.id, name=stack.name, tenant_id=stack.tenant_id, action=Action.UPDATE,
        status=Status.IN_PROGRESS, status_reason=reasons.stack_started(Action.UPDATE),
        template=stack.template, parameters=stack.parameters or {},
        environment=stack.environment or {}, files=stack.files or {}, tags=new.tags,
        timeout_mins=new.timeout_mins, disable_rollback=new.disable_rollback)
    return previous, dataclasses.replace(previous, template=new.template,
                                         parameters=new.parameters or {},
                                         environment=new.environment or {},
                                         files=new.files or {})


def resource_changes(stack: Stack, rows: Sequence[ResourceRow], stored_ir: ResolvedStack | None,
                     target: ResolvedStack, target_template: Mapping[str, Any],
                     types: ResourceTypeRegistry, clock: Clock,
                     secrets: tuple[str, ...]) -> dict[str, list[ChangedResource]]:
    """Heat's ``resource_changes``: every resource in one category, sorted by name;
    updated and deleted ones as stored, the others as the new stack has them."""
    by_name = {row.name: row for row in rows}
    found = categorise(target, {row.name: StoredFacts.of(row) for row in rows}, types,
                       lambda name: ReadOnlyRuntime(stack, by_name[name], clock))
    changes: dict[str, list[ChangedResource]] = {category: [] for category in CATEGORIES}
    users: dict[str, set[str]] = {row.name: set() for row in rows}
    for row in rows:
        for dep in row.requires or ():
            users.setdefault(dep, set()).add(row.name)
    new_users = target.dependents()
    template = stack.template if isinstance(stack.template, Mapping) else {}
    parameters = stored_ir.parameters if stored_ir is not None else {
        **pseudo_parameters(stack.id, stack.name, stack.tenant_id), **(stack.parameters or {})}
    for name in sorted(found):
        category = found[name]
        if category in FROM_STORED:
            row = by_name[name]
            node = stored_ir.resources.get(name) if stored_ir is not None else None
            item = ChangedResource(
                name=name, type=row.type, action=row.action, status=row.status,
                status_reason=redact(row.status_reason or "", secrets),
                physical_id=row.physical_id or "", created_at=row.created_at,
                updated_at=row.updated_at or row.created_at,
                required_by=sorted(users.get(name, ())),
                description=node.description if node is not None else "",
                metadata=_metadata(template, name, parameters, secrets),
                attributes=redact(read_attributes(stack, row, types, clock), secrets))
        else:
            new = target.resources[name]
            item = ChangedResource(
                name=name, type=new.type_name, action=Action.INIT, status=Status.COMPLETE,
                status_reason="", physical_id="", created_at=None, updated_at=None,
                required_by=sorted(new_users[name]), description=new.description,
                metadata=_metadata(target_template, name, target.parameters, secrets),
                attributes=dict.fromkeys(sorted(types.get(new.type_name).attributes_schema)))
        changes[category].append(item)
    return changes


def _metadata(template: Mapping[str, Any], name: str, parameters: Mapping[str, Any],
              secrets: tuple[str, ...]) -> Any:
    written = ((template.get("resources") or {}).get(name) or {}).get("metadata") or {}
    return static_metadata(template, written, parameters, secrets)
