"""Stack dry runs: preview (of a create), validate, and the update preview.

Each proposes the stack exactly as the write would (so bad input fails as it does) and
asks each lifecycle plugin for its verdict; nothing is stored or reserved. A verdict that
would fail the operation (a deny, an error, a timeout that fails) refuses the request
(``LifecycleDenied``, a 400), so Heat's clients fail with the plugin's message; warnings
and allows are returned with the answer. A create or update asks the same verdicts at the
door, before it is stored (``create_verdicts``, ``update_verdicts``; ``stack_writes``).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from engine.clock import Clock
from engine.context import RequestContext
from engine.db import resource_rows, stack_trees
from engine.db.models import Resource as ResourceRow
from engine.db.models import Stack
from engine.db.session import Database
from engine.db.stack_trees import TreeMember
from engine.errors import EntityNotFound, KilnError
from engine.ir.model import ResolvedStack, ResourceNode, TypeSchema
from engine.ir.stored import StoredIrs
from engine.lifecycle.planned import view_changes
from engine.lifecycle.snapshot import TreeMemberFacts
from engine.resources.registry import ResourceTypeRegistry
from engine.resources.update_forecast import PlannedChange, forecast_create
from engine.services import stack_requests, update_preview
from engine.services.lifecycle import (
    LifecycleService,
    ProposedStack,
    UpdateTarget,
    refuse_blocked,
)
from engine.services.nested_previews import NestedPreviews, ProposedChild
from engine.services.proposals import Proposal, Proposals, StackLimits, stack_name
from engine.services.records import StackRecord, stack_record
from engine.services.stack_lookup import named_stack
from engine.services.update_requests import check_immutable, update_body
from engine.template.environment import Environment
from engine.template.functions import Deferred, resolve
from engine.template.parameters import (
    MASK,
    ParameterSchema,
    hidden_values,
    redact,
)
from engine.template.stored_parameters import masked_environment, stored_hidden_values
from engine.vocabulary import Action, Change

# The id and, in validate, the name of a stack that does not exist: what Heat's preview
# shows as the id.
NO_ID = "None"


@dataclasses.dataclass(frozen=True)
class PreviewResource:
    """A resource of a previewed stack; values not known before it exists are None."""

    name: str
    type: str
    description: str
    required_by: list[str]
    properties: dict[str, Any]  # every property of the type, defaults applied, masked
    attributes: list[str]  # names only: no attribute has a value yet
    metadata: Any  # as written in the template
    #: The stack the resource would make, when the preview can tell (``nested_previews``):
    #: Heat lists its resources in the resource's place.
    nested: NestedPreview | None = None


@dataclasses.dataclass(frozen=True)
class NestedPreview:
    stack_name: str
    resources: list[PreviewResource]


@dataclasses.dataclass(frozen=True)
class StackPreview:
    stack: StackRecord
    outputs: list[dict[str, Any]]  # output_value None: nothing exists yet
    resources: list[PreviewResource]
    #: Each plugin's dry-run verdict on the stack, then on each nested stack it would
    #: make, whose records add its ``path`` and ``stack_name``.
    lifecycle: list[dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class TemplateValidation:
    description: str
    parameters: list[ParameterSchema]  # template order; a hidden default is the mask
    values: dict[str, Any]  # the values the request gave, hidden ones masked
    parameter_groups: list[Any] | None
    lifecycle: list[dict[str, Any]]  # each plugin's dry-run verdict
    environment: dict[str, Any] = dataclasses.field(default_factory=dict)  # hidden masked


class StackDryRuns:
    def __init__(self, db: Database, registry: ResourceTypeRegistry, limits: StackLimits,
                 clock: Clock, irs: StoredIrs, *,
                 lifecycle: LifecycleService | None = None) -> None:
        self._db = db
        self._registry = registry
        self._clock = clock
        self._irs = irs
        self._lifecycle = lifecycle
        self._proposals = Proposals(registry, limits, clock)
        self._sink_rules = limits.sink_rules
        self._nested = NestedPreviews(registry, clock, _known_properties)

    def preview(self, ctx: RequestContext, body: Mapping[str, Any]) -> StackPreview:
        """What a create with ``body`` would build, nested stacks included, and what each
        lifecycle plugin would say of it and of each nested stack; nothing is stored or
        reserved. Bad input fails exactly as create does; a verdict that would fail the
        create, or the create of a nested stack, raises ``LifecycleDenied``."""
        stack_requests.check_body(body)
        stack_requests.refuse_converge(body)
        proposal = self._proposals.propose(ctx, body, stack_name(body), NO_ID)
        ir, stack = proposal.ir, proposal.stack
        secrets = hidden_values(ir.parameter_schemas, ir.parameters)
        children = self._nested.children(_proposed(stack), ir,
                                         (TreeMember(stack.id, stack.name, None),), secrets)
        outputs = [{"output_key": o.name, "description": o.description, "output_value": None}
                   for o in ir.outputs.values()]
        # The stack's own verdicts first: a create they refuse makes no nested stack.
        verdicts = self.create_verdicts(ctx, proposal)
        verdicts += self._nested_verdicts(ctx, children)
        return StackPreview(stack=stack_record(ir, stack), outputs=outputs,
                            resources=self._preview_resources(ir, secrets, children),
                            lifecycle=verdicts)

    def _preview_resources(self, ir: ResolvedStack, secrets: tuple[str, ...],
                           children: Mapping[str, ProposedChild]) -> list[PreviewResource]:
        scope = _PreviewScope(ir.parameters)
        required_by = ir.dependents()
        resources = []
        for name, node in ir.resources.items():
            schema = self._registry.get(node.type_name)  # build checked every type exists
            child = children.get(name)
            resources.append(PreviewResource(
                name=name, type=node.type_name, description=node.description,
                required_by=sorted(required_by[name]),
                properties=redact(_preview_properties(node, schema, scope), secrets),
                attributes=sorted(schema.attributes_schema),
                # As written: the IR keeps metadata unparsed, so its functions are shown,
                # not evaluated (and so no hidden value can reach it).
                metadata=redact(node.metadata or {}, secrets),
                nested=None if child is None else NestedPreview(
                    child.stack.name,
                    self._preview_resources(child.ir, child.secrets, child.children))))
        return resources

    def _nested_verdicts(self, ctx: RequestContext, children: Mapping[str, ProposedChild]
                         ) -> list[dict[str, Any]]:
        """Each plugin's verdict on the create of each nested stack (``_create_records``).
        Raises ``LifecycleDenied`` naming each refused stack's path."""
        records = self._create_records(ctx, children)
        refuse_blocked(records)
        return records

    def _create_records(self, ctx: RequestContext, children: Mapping[str, ProposedChild]
                        ) -> list[dict[str, Any]]:
        """Each plugin's verdict on the create of each nested stack, at its place in the
        tree (a root-only plugin is skipped there), each record with the stack's ``path``
        and ``stack_name``; the stacks a refused one would make are not asked about."""
        if self._lifecycle is None:
            return []
        records: list[dict[str, Any]] = []
        pending = list(children.values())
        while pending:
            child = pending.pop(0)
            verdicts: list[dict[str, Any]] = redact(self._lifecycle.dry_run(
                ctx, child.stack, child.ir, Action.CREATE, lineage=child.lineage,
                changes=view_changes(forecast_create(child.ir, self._registry),
                                     child.secrets)), child.secrets)
            records += _placed(verdicts, child.path, child.stack.name)
            if not _blocked(verdicts):
                pending[:0] = child.children.values()  # depth first, in template order
        return records

    def _nested_update_verdicts(self, ctx: RequestContext, stack: Stack,
                                rows: Sequence[ResourceRow], lineage: Sequence[TreeMemberFacts],
                                new: Proposal, planned: Mapping[str, PlannedChange]
                                ) -> list[dict[str, Any]]:
        """Each plugin's verdict on what an update of ``stack`` to ``new`` would do to its
        nested stacks, each record with the stack's ``path`` and ``stack_name``: a child
        a resource would create is asked about its create (as in a preview), one it
        would update about that update, each at its place in the tree, and the stacks
        below them in turn, but below a refused one. Raises ``LifecycleDenied`` naming
        each refused stack's path."""
        if self._lifecycle is None:
            return []
        members = tuple(TreeMember(m.id, m.name, m.parent_resource) for m in lineage)
        records = self._update_records_below(ctx, stack, rows, members, new, planned, ())
        refuse_blocked(records)
        return records

    def _update_records_below(self, ctx: RequestContext, stack: Stack,
                              rows: Sequence[ResourceRow], lineage: tuple[TreeMember, ...],
                              new: Proposal, planned: Mapping[str, PlannedChange],
                              above: tuple[str, ...]) -> list[dict[str, Any]]:
        """``above``: the hidden values of the stacks above ``stack``, which its nested
        stacks may have been given as plain parameters."""
        parent = _proposed(new.stack)
        secrets = tuple(sorted({*above, *_update_secrets(stack, new)[1]}, key=len,
                               reverse=True))
        stored = {row.name: row for row in rows}
        records: list[dict[str, Any]] = []
        for name in new.ir.resources:
            change = planned.get(name)
            if change is not None and change.action == Change.CREATE:
                child = self._nested.child(parent, new.ir, name, lineage, secrets)
                if child is not None:
                    records += self._create_records(ctx, {name: child})
            elif change is not None and change.action == Change.UPDATE and name in stored:
                records += self._child_update_records(ctx, stack, parent, new.ir, name,
                                                      stored[name], lineage, secrets)
        return records

    def _child_update_records(self, ctx: RequestContext, stack: Stack, parent: ProposedStack,
                              ir: ResolvedStack, name: str, resource: ResourceRow,
                              lineage: tuple[TreeMember, ...], above: tuple[str, ...]
                              ) -> list[dict[str, Any]]:
        """The verdicts on the update resource ``name`` would make of its child stack,
        and below it; [] when it has none or the preview cannot tell its definition."""
        with self._db.read() as session:
            child = stack_trees.live_child_stack(session, stack.id, name)
            rows = [] if child is None else resource_rows.list_resources(session, child.id)
        if child is None:
            return []
        defined = self._nested.definition(parent, ir, name, child_id=child.id,
                                          child_name=child.name, data=resource.data or {})
        if defined is None:
            return []
        target, target_ir = defined
        new = Proposal(stack=Stack(
            id=child.id, name=child.name, tenant_id=child.tenant_id, template=target.template,
            parameters=target.parameters, environment=target.environment,
            files=target.files, tags=child.tags, timeout_mins=target.timeout_mins,
            disable_rollback=child.disable_rollback), ir=target_ir, timeout_seconds=0)
        members = (*lineage, TreeMember(child.id, child.name, name))
        planned = update_preview.forecast(child, rows, target_ir, self._registry, self._clock)
        verdicts: list[dict[str, Any]] = redact(self._update_records(
            ctx, child, rows, members, self._irs.if_valid(child), new, planned), above)
        path = "/".join(member.parent_resource or "" for member in members[1:])
        records = _placed(verdicts, path, child.name)
        if not _blocked(verdicts):
            records += self._update_records_below(ctx, child, rows, members, new, planned,
                                                  above)
        return records

    def validate(self, ctx: RequestContext, body: Mapping[str, Any]) -> TemplateValidation:
        """The template's parameters, for a form that asks for them, and each lifecycle
        plugin's verdict on a create of it. Bad input fails exactly as create does; a
        verdict that would fail the create raises ``LifecycleDenied``."""
        stack_requests.check_body(body)
        proposal = self._proposals.propose(ctx, body, NO_ID, NO_ID, require_parameters=False)
        ir, stack = proposal.ir, proposal.stack
        schemas = ir.parameter_schemas
        shown = [dataclasses.replace(s, default=MASK) if s.hidden and s.default is not None
                 else s
                 for s in schemas.values()]
        groups = stack.template.get("parameter_groups")
        # The one masking of every view of an environment (hidden parameters by name,
        # sinks' secrets); the proposal's parameters are its environment's.
        environment = masked_environment(
            stack.template, Environment.from_dict(stack.environment).as_dict())
        given = environment["parameters"]
        return TemplateValidation(
            description=ir.description or "No description", parameters=shown, values=given,
            parameter_groups=groups if isinstance(groups, list) else None,
            lifecycle=self.create_verdicts(ctx, proposal), environment=environment)

    def preview_update(self, ctx: RequestContext, name: str, stack_id: str,
                       body: Mapping[str, Any], *, patch: bool
                       ) -> update_preview.UpdatePreview:
        """What ``StackWrites.update`` with the same request would do to each resource,
        decided as its steps decide (``update_preview``), and each lifecycle plugin's
        verdict on it. Nothing is stored or reserved. Bad input fails as update does, and
        a verdict that would fail the update raises ``LifecycleDenied``; as in Heat, a
        busy or suspended stack may be previewed."""
        with self._db.read() as session:
            stack = named_stack(session, ctx, name, stack_id)
            if stack.deleted_at is not None:
                raise EntityNotFound(entity="Stack", name=name)
            rows = resource_rows.list_resources(session, stack.id)
            lineage = stack_trees.lineage(session, stack)
        stack_requests.check_body(body)
        new = self._proposals.propose(
            ctx, update_body(update_preview.stored_request(stack), body, patch=patch,
                             sink_rules=self._sink_rules),
            stack.name, stack.id)
        stored_ir = self._irs.if_valid(stack)
        check_immutable(stored_ir, new.ir)
        _, secrets = _update_secrets(stack, new)
        planned = update_preview.forecast(stack, rows, new.ir, self._registry, self._clock)
        changes = update_preview.resource_changes(
            stack, rows, stored_ir, new.ir, new.stack.template, planned, self._registry,
            self._clock, secrets)
        verdicts = self.update_verdicts(ctx, stack, rows, lineage, stored_ir, new, planned)
        verdicts += self._nested_update_verdicts(ctx, stack, rows, lineage, new, planned)
        return update_preview.UpdatePreview(
            stack_id=stack.id, stack_name=stack.name, tenant_id=stack.tenant_id,
            changes=changes, lifecycle=verdicts)

    def create_verdicts(self, ctx: RequestContext, proposal: Proposal,
                        action: str = Action.CREATE) -> list[dict[str, Any]]:
        """Each lifecycle plugin's verdict on creating (or adopting: ``action``) the
        proposed stack, under the proposal's id; [] with none. Raises ``LifecycleDenied``
        when a verdict would fail the operation. Preview, validate and the door of a
        create (``StackWrites``) ask it."""
        if self._lifecycle is None:
            return []
        stack, ir = proposal.stack, proposal.ir
        proposed = dataclasses.replace(_proposed(stack), action=action)
        secrets = hidden_values(ir.parameter_schemas, ir.parameters)
        # As the worker's pre-op: an adopt's view has no planned changes (yet).
        planned = forecast_create(ir, self._registry) if action == Action.CREATE else {}
        verdicts = self._lifecycle.dry_run(
            ctx, proposed, ir, action, changes=view_changes(planned, secrets))
        # The plugins saw masked views; an error's text could still quote a value it was
        # handed some other way, so the hidden values are masked here too.
        masked_verdicts: list[dict[str, Any]] = redact(verdicts, secrets)
        refuse_blocked(masked_verdicts)
        return masked_verdicts

    def update_verdicts(self, ctx: RequestContext, stack: Stack,
                        rows: Sequence[ResourceRow], lineage: Sequence[TreeMemberFacts],
                        stored_ir: ResolvedStack | None, new: Proposal,
                        planned: Mapping[str, PlannedChange]) -> list[dict[str, Any]]:
        """Each lifecycle plugin's verdict on updating the stored ``stack`` (its ``rows``,
        its ``lineage``) to ``new``, with ``planned`` (``update_preview.forecast``), seen
        as the update's pre-op will see them; [] with none. Raises ``LifecycleDenied``
        when a verdict would fail the update. The update preview and the door of an
        update (``StackWrites``) ask it."""
        verdicts = self._update_records(ctx, stack, rows, lineage, stored_ir, new, planned)
        refuse_blocked(verdicts)
        return verdicts

    def _update_records(self, ctx: RequestContext, stack: Stack,
                        rows: Sequence[ResourceRow], lineage: Sequence[TreeMemberFacts],
                        stored_ir: ResolvedStack | None, new: Proposal,
                        planned: Mapping[str, PlannedChange]) -> list[dict[str, Any]]:
        """``update_verdicts``' records, none refused."""
        if self._lifecycle is None:
            return []
        old_secrets, secrets = _update_secrets(stack, new)
        previous, target = update_preview.pre_op_stacks(stack, new.stack)
        verdicts: list[dict[str, Any]] = redact(self._lifecycle.dry_run(
            ctx, previous, stored_ir, Action.UPDATE, current=UpdateTarget(
                target, new.ir, {row.name: row for row in rows}, old_secrets),
            lineage=lineage, changes=view_changes(planned, secrets)), secrets)
        return verdicts


def _placed(verdicts: list[dict[str, Any]], path: str, name: str) -> list[dict[str, Any]]:
    """A nested stack's verdicts, each with its place in the tree."""
    return [{**verdict, "path": path, "stack_name": name} for verdict in verdicts]


def _blocked(verdicts: list[dict[str, Any]]) -> bool:
    return any(verdict.get("blocking") for verdict in verdicts)


def _update_secrets(stack: Stack, new: Proposal) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the stored definition's hidden values, those of both definitions, longest first)."""
    old = stored_hidden_values(stack.template, stack.parameters, stack.environment)
    both = {*old, *hidden_values(new.ir.parameter_schemas, new.ir.parameters)}
    return old, tuple(sorted(both, key=len, reverse=True))


def _proposed(stack: Stack) -> ProposedStack:
    """A proposal's unsaved stack row as the plugins' views take it."""
    return ProposedStack(
        name=stack.name, tenant_id=stack.tenant_id, template=stack.template,
        parameters=stack.parameters, environment=stack.environment, files=stack.files,
        tags=tuple(stack.tags or ()), timeout_mins=stack.timeout_mins,
        disable_rollback=stack.disable_rollback, id=stack.id)


def _known_properties(node: ResourceNode, schema: TypeSchema, ir: ResolvedStack
                      ) -> tuple[dict[str, Any], frozenset[str]]:
    """``node``'s properties as a preview shows them, and the names of those given but
    known only at run time (``nested_previews.KnownProperties``)."""
    scope = _PreviewScope(ir.parameters)
    unknown = frozenset(key for key, value in dict(node.properties or {}).items()
                        if value is not None and _known(value, scope) is None)
    return _preview_properties(node, schema, scope), unknown


class _PreviewScope:
    """Values as Heat's preview shows them: parameters are known; a resource's reference
    id is its name (it has no physical id yet); its attributes are not known."""

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self._parameters = parameters

    def param(self, name: str) -> Any:
        return self._parameters[name]  # build checked every reference

    def reference_id(self, resource: str) -> Any:
        return resource

    def attribute(self, resource: str, attribute: str, path: Sequence[Any] = ()) -> Any:
        raise Deferred(resource)

    def attributes(self, resource: str) -> Any:
        raise Deferred(resource)


def _known(value: Any, scope: _PreviewScope) -> Any:
    """``value`` evaluated as far as a preview can, or None where it cannot."""
    try:
        return resolve(value, scope)
    except (Deferred, KilnError):
        return None


def _preview_properties(node: ResourceNode, schema: TypeSchema, scope: _PreviewScope
                        ) -> dict[str, Any]:
    """Every property of the type, as Heat's preview lists them: the value given (typed
    where it can be), else the default, else None."""
    written = dict(node.properties or {})
    given = {key: _known(value, scope) for key, value in written.items()}
    shown: dict[str, Any] = {}
    for key, prop in schema.properties_schema.items():
        value = given.get(key)
        if value is None:
            # Unset (or null) takes the default; set but not known yet stays None.
            shown[key] = copy.deepcopy(prop.default) if written.get(key) is None else None
            continue
        try:
            shown[key] = prop.coerce(value, key)
        except KilnError:
            shown[key] = value  # checked again when the stack is created; shown as given
    if schema.allow_unknown_properties:
        shown.update({k: v for k, v in given.items() if k not in schema.properties_schema})
    return shown
