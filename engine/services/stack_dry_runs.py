"""Stack dry runs: preview (of a create), validate, and the update preview.

Each proposes the stack exactly as the write would (so bad input fails as it does) and
asks each lifecycle plugin for its verdict; nothing is stored or reserved. A verdict that
would fail the operation (a deny, an error, a timeout that fails) refuses the request
(``LifecycleDenied``, a 400), so Heat's clients fail with the plugin's message; warnings
and allows are returned with the answer.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from engine.clock import Clock
from engine.context import RequestContext
from engine.db import resource_rows, stack_trees
from engine.db.session import Database
from engine.errors import EntityNotFound, KilnError
from engine.ir.model import ResourceNode, TypeSchema
from engine.ir.stored import StoredIrs
from engine.lifecycle.planned import view_changes
from engine.resources.registry import ResourceTypeRegistry
from engine.resources.update_forecast import forecast_create
from engine.services import stack_requests, update_preview
from engine.services.lifecycle import (
    LifecycleService,
    ProposedStack,
    UpdateTarget,
    refuse_blocked,
)
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
    masked,
    redact,
    stored_hidden_values,
)
from engine.vocabulary import Action

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


@dataclasses.dataclass(frozen=True)
class StackPreview:
    stack: StackRecord
    outputs: list[dict[str, Any]]  # output_value None: nothing exists yet
    resources: list[PreviewResource]
    lifecycle: list[dict[str, Any]]  # each plugin's dry-run verdict


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

    def preview(self, ctx: RequestContext, body: Mapping[str, Any]) -> StackPreview:
        """What a create with ``body`` would build, and what each lifecycle plugin would
        say of it; nothing is stored or reserved. Bad input fails exactly as create does;
        a verdict that would fail the create raises ``LifecycleDenied``."""
        stack_requests.check_body(body)
        stack_requests.refuse_converge(body)
        proposal = self._proposals.propose(ctx, body, stack_name(body), NO_ID)
        ir, stack = proposal.ir, proposal.stack
        secrets = hidden_values(ir.parameter_schemas, ir.parameters)
        scope = _PreviewScope(ir.parameters)
        required_by = ir.dependents()
        resources = []
        for name, node in ir.resources.items():
            schema = self._registry.get(node.type_name)  # build checked every type exists
            resources.append(PreviewResource(
                name=name, type=node.type_name, description=node.description,
                required_by=sorted(required_by[name]),
                properties=redact(_preview_properties(node, schema, scope), secrets),
                attributes=sorted(schema.attributes_schema),
                # As written: the IR keeps metadata unparsed, so its functions are shown,
                # not evaluated (and so no hidden value can reach it).
                metadata=redact(node.metadata or {}, secrets)))
        outputs = [{"output_key": o.name, "description": o.description, "output_value": None}
                   for o in ir.outputs.values()]
        return StackPreview(stack=stack_record(ir, stack), outputs=outputs,
                            resources=resources, lifecycle=self._dry_run(ctx, proposal))

    def validate(self, ctx: RequestContext, body: Mapping[str, Any]) -> TemplateValidation:
        """The template's parameters, for a form that asks for them, and each lifecycle
        plugin's verdict on a create of it. Bad input fails exactly as create does; a
        verdict that would fail the create raises ``LifecycleDenied``."""
        stack_requests.check_body(body)
        proposal = self._proposals.propose(ctx, body, NO_ID, NO_ID, require_parameters=False)
        ir, stack = proposal.ir, proposal.stack
        schemas = ir.parameter_schemas
        given = masked(schemas, stack.parameters)
        shown = [dataclasses.replace(s, default=MASK) if s.hidden and s.default is not None
                 else s
                 for s in schemas.values()]
        groups = stack.template.get("parameter_groups")
        environment = Environment.from_dict(stack.environment).as_dict()
        environment["parameters"] = given
        environment["parameter_defaults"] = masked(schemas, environment["parameter_defaults"])
        return TemplateValidation(
            description=ir.description or "No description", parameters=shown, values=given,
            parameter_groups=groups if isinstance(groups, list) else None,
            lifecycle=self._dry_run(ctx, proposal), environment=environment)

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
            ctx, update_body(update_preview.stored_request(stack), body, patch=patch),
            stack.name, stack.id)
        stored_ir = self._irs.if_valid(stack)
        check_immutable(stored_ir, new.ir)
        old_secrets = stored_hidden_values(stack.template, stack.parameters)
        secrets = tuple(sorted({*old_secrets, *hidden_values(new.ir.parameter_schemas,
                                                              new.ir.parameters)},
                               key=len, reverse=True))
        planned = update_preview.forecast(stack, rows, new.ir, self._registry, self._clock)
        changes = update_preview.resource_changes(
            stack, rows, stored_ir, new.ir, new.stack.template, planned, self._registry,
            self._clock, secrets)
        verdicts: list[dict[str, Any]] = []
        if self._lifecycle is not None:
            previous, target = update_preview.pre_op_stacks(stack, new.stack)
            verdicts = redact(self._lifecycle.dry_run(
                ctx, previous, stored_ir, Action.UPDATE, current=UpdateTarget(
                    target, new.ir, {row.name: row for row in rows}, old_secrets),
                lineage=lineage, changes=view_changes(planned, secrets)), secrets)
            refuse_blocked(verdicts)
        return update_preview.UpdatePreview(
            stack_id=stack.id, stack_name=stack.name, tenant_id=stack.tenant_id,
            changes=changes, lifecycle=verdicts)

    def _dry_run(self, ctx: RequestContext, proposal: Proposal) -> list[dict[str, Any]]:
        """Each lifecycle plugin's verdict on creating the proposed stack; [] with none.
        Raises ``LifecycleDenied`` when a verdict would fail the create."""
        if self._lifecycle is None:
            return []
        stack, ir = proposal.stack, proposal.ir
        proposed = ProposedStack(
            name=stack.name, tenant_id=stack.tenant_id, template=stack.template,
            parameters=stack.parameters, environment=stack.environment, files=stack.files,
            tags=tuple(stack.tags or ()), timeout_mins=stack.timeout_mins,
            disable_rollback=stack.disable_rollback)
        secrets = hidden_values(ir.parameter_schemas, ir.parameters)
        verdicts = self._lifecycle.dry_run(
            ctx, proposed, ir, Action.CREATE,
            changes=view_changes(forecast_create(ir, self._registry), secrets))
        # The plugins saw masked views; an error's text could still quote a value it was
        # handed some other way, so the hidden values are masked here too.
        masked_verdicts: list[dict[str, Any]] = redact(verdicts, secrets)
        refuse_blocked(masked_verdicts)
        return masked_verdicts


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
