"""Stack use-cases for the API and the CLI: validate and accept requests, and reads.

A write stores the stack, its operation and its first event in one transaction and
returns; workers do the rest. Reads turn rows into records with hidden parameters masked.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine import budget
from engine.context import RequestContext
from engine.db import operations, queries
from engine.db.models import Event, Resource, Stack
from engine.db.session import Database
from engine.errors import (
    ActionInProgress,
    BadRequest,
    EntityNotFound,
    EventNotFound,
    InvalidFilter,
    KilnError,
    OutputNotFound,
    RequestLimitExceeded,
    ResourceNotFound,
    StackValidationFailed,
)
from engine.ir.build import build, build_from_document, pseudo_parameters
from engine.ir.model import ResolvedStack, ResourceNode, TypeSchema
from engine.ir.provider import MAX_NESTED_DEPTH
from engine.resources.registry import ResourceTypeRegistry
from engine.services import (
    listing,
    resource_requests,
    stack_requests,
    template_info,
    type_catalogue,
    update_preview,
)
from engine.services.adopt import adopt_request
from engine.services.attributes import read_attributes
from engine.services.lifecycle import LifecycleService, ProposedStack, UpdateTarget
from engine.services.operations import new_operation, request_context, start_operation
from engine.services.records import (
    EventRecord,
    ResourceRecord,
    ResourceTypeRecord,
    StackRecord,
)
from engine.services.updates import check_immutable, update_body
from engine.template.environment import Environment, request_environment
from engine.template.functions import Deferred, resolve
from engine.template.loader import load, written_resources
from engine.template.parameters import (
    MASK,
    ParameterSchema,
    hidden_names,
    hidden_values,
    masked,
    redact,
    stored_hidden_values,
)
from engine.template.parse import document

Clock = Callable[[], datetime.datetime]
NAME_PATTERN = re.compile(r"^[a-zA-Z][a-zA-Z0-9_.-]{0,254}$")
IR_CACHE_SIZE = 256
EVENT_FILTERS = {"resource_status", "resource_action", "resource_name", "resource_type"}
# The id and, in validate, the name of a stack that does not exist: what Heat's preview
# shows as the id.
NO_ID = "None"


@dataclasses.dataclass(frozen=True)
class StackLimits:
    max_template_bytes: int = 524288
    default_timeout_seconds: int = 3600
    max_stacks_per_tenant: int = -1  # -1: no limit


@dataclasses.dataclass(frozen=True)
class StackQuery:
    filters: Mapping[str, list[str]] = dataclasses.field(default_factory=dict)
    show_deleted: bool = False
    limit: int | None = None
    marker: str | None = None
    sort_keys: tuple[str, ...] = ()
    sort_dir: str | None = None  # None: newest first, or ascending by known sort keys
    all_tenants: bool = False
    tags: tuple[str, ...] = ()  # has every one
    tags_any: tuple[str, ...] = ()  # has at least one
    not_tags: tuple[str, ...] = ()  # lacks at least one
    not_tags_any: tuple[str, ...] = ()  # has none
    show_nested: bool = False  # nested stacks too (they are left out, as in Heat)


@dataclasses.dataclass(frozen=True)
class EventQuery:
    filters: Mapping[str, list[str]] = dataclasses.field(default_factory=dict)
    limit: int | None = None
    marker: str | None = None
    ascending: bool = False  # the order when neither sort_dir nor a known sort key is given
    sort_keys: tuple[str, ...] = ()
    sort_dir: str | None = None


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


@dataclasses.dataclass(frozen=True)
class _Proposal:
    stack: Stack  # not added to any session: create stores it, the dry runs do not
    ir: ResolvedStack
    timeout_seconds: int


class StackService:
    def __init__(self, db: Database, registry: ResourceTypeRegistry, limits: StackLimits,
                 clock: Clock, *, lifecycle: LifecycleService | None = None) -> None:
        self._db = db
        self._registry = registry
        self._limits = limits
        self._clock = clock
        self._lifecycle = lifecycle
        self._irs: dict[tuple[str, datetime.datetime | None], ResolvedStack | None] = {}

    # --- writes -------------------------------------------------------------------------

    def create(self, ctx: RequestContext, body: Mapping[str, Any]) -> StackRecord:
        stack_requests.check_body(body)
        stack_requests.refuse_converge(body)
        action, payload = "CREATE", None
        if body.get("adopt_stack_data") is not None:
            action = "ADOPT"
            body, payload = adopt_request(body)
            # Another body: the abandon data's template, parameters and environment.
            stack_requests.check_body(body)
        proposal = self._propose(ctx, body, _stack_name(body), str(uuid.uuid4()))
        stack = proposal.stack
        stack.action, stack.status_reason = action, f"Stack {action} started"
        operation = new_operation(ctx, stack.id, action, stack.created_at,
                                  proposal.timeout_seconds, payload)
        with self._db.transaction() as session:
            # Counted in the inserting transaction; two creates racing at the very limit
            # may both pass (the quota lifecycle plugin holds the exact count if needed).
            limit = self._limits.max_stacks_per_tenant
            if limit >= 0 and queries.count_live_stacks(session, ctx.tenant_id) >= limit:
                raise RequestLimitExceeded(reason=f"You have reached the maximum stacks per "
                                                  f"tenant, {limit}. Please delete some "
                                                  "stacks.")
            queries.add_stack_with_operation(session, stack, operation, stack.created_at)
            return stack_record(proposal.ir, stack)

    # --- dry runs -----------------------------------------------------------------------

    def preview(self, ctx: RequestContext, body: Mapping[str, Any]) -> StackPreview:
        """What a create with ``body`` would build, and what each lifecycle plugin would
        say of it; nothing is stored or reserved. Bad input fails exactly as create does."""
        stack_requests.check_body(body)
        stack_requests.refuse_converge(body)
        proposal = self._propose(ctx, body, _stack_name(body), NO_ID)
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
        plugin's verdict on a create of it. Bad input fails exactly as create does."""
        stack_requests.check_body(body)
        proposal = self._propose(ctx, body, NO_ID, NO_ID, require_parameters=False)
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

    def _propose(self, ctx: RequestContext, body: Mapping[str, Any], name: str,
                 stack_id: str, *, require_parameters: bool = True) -> _Proposal:
        """The checks every way of proposing a stack shares (create, preview, validate),
        from the request body to an unsaved stack row and its IR. Raises what create
        raises, naming the template path and line. The caller has checked the request's
        body (``check_body``); an update's, before it was merged with the stored one."""
        template = body.get("template")
        if template is None:
            raise BadRequest(reason="No template specified")
        size = len((template if isinstance(template, str) else json.dumps(template)).encode())
        if size > self._limits.max_template_bytes:
            raise RequestLimitExceeded(
                reason=f"Template size ({size} bytes) exceeds maximum allowed size "
                       f"({self._limits.max_template_bytes} bytes).")
        doc = document(template)
        # Counted as written, before any resource is read: a template past the limit
        # costs no more than its parse.
        # The limit is the budget's (one value for the API, groups and nested stacks).
        if written_resources(doc) > budget.limits().max_resources_per_stack:
            raise RequestLimitExceeded(reason="Maximum resources per stack exceeded.")
        files = stack_requests.files(body)
        timeout_mins = stack_requests.timeout_mins(body.get("timeout_mins"))
        hot = load(doc, files)
        environment = request_environment(
            body, {n: schema.type for n, schema in hot.parameters.items()})
        parameters = environment["parameters"]
        ir = build(hot, parameters, pseudo_parameters(stack_id, name, ctx.tenant_id),
                   self._registry.get, require_all=require_parameters,
                   constraints=self._registry.constraint,
                   environment=Environment.from_dict(environment))
        now = self._clock()
        timeout = timeout_mins * 60 if timeout_mins else self._limits.default_timeout_seconds
        stack = Stack(
            id=stack_id, tenant_id=ctx.tenant_id, name=name, action="CREATE",
            status="IN_PROGRESS", status_reason="Stack CREATE started",
            description=ir.description, template=doc.data,
            parameters=parameters, environment=environment, files=files,
            outputs=None, tags=stack_requests.tags(body.get("tags")),
            disable_rollback=stack_requests.flag(body.get("disable_rollback", True),
                                                 "disable_rollback"),
            timeout_mins=timeout_mins, owner=ctx.username, created_at=now)
        return _Proposal(stack=stack, ir=ir, timeout_seconds=timeout)

    def _dry_run(self, ctx: RequestContext, proposal: _Proposal) -> list[dict[str, Any]]:
        """Each lifecycle plugin's verdict on creating the proposed stack; [] with none."""
        if self._lifecycle is None:
            return []
        stack, ir = proposal.stack, proposal.ir
        proposed = ProposedStack(
            name=stack.name, tenant_id=stack.tenant_id, template=stack.template,
            parameters=stack.parameters, environment=stack.environment, files=stack.files,
            tags=tuple(stack.tags or ()), timeout_mins=stack.timeout_mins,
            disable_rollback=stack.disable_rollback)
        verdicts = self._lifecycle.dry_run(ctx, proposed, ir, "CREATE")
        # The plugins saw masked views; an error's text could still quote a value it was
        # handed some other way, so the hidden values are masked here too.
        masked_verdicts: list[dict[str, Any]] = redact(
            verdicts, hidden_values(ir.parameter_schemas, ir.parameters))
        return masked_verdicts

    def update(self, ctx: RequestContext, name: str, stack_id: str, body: Mapping[str, Any],
               *, patch: bool) -> None:
        """PUT (``patch=False``) or PATCH: checked as a create is, then stored as an UPDATE
        operation carrying the stored definition and the new one."""
        for attempt in self._db.retrying():
            with attempt as session:
                stack, _ = queries.lock_stack(session, ctx.tenant_id, name, stack_id)
                if stack.deleted_at is not None:
                    raise EntityNotFound(entity="Stack", name=name)
                if (stack.action, stack.status) == ("SUSPEND", "COMPLETE"):
                    raise BadRequest(reason="Updating a stack when it is suspended is not "
                                            "supported.")
                stack_requests.check_body(body)
                new = self._propose(ctx, update_body(update_preview.stored_request(stack), body,
                                                     patch=patch), stack.name, stack.id)
                check_immutable(self._ir(stack), new.ir)
                payload = {"previous": _definition(stack), "target": _definition(new.stack),
                           # Heat's "observe reality": resources whose type can read its
                           # backend put back what drifted (specs/aws-resources.rst).
                           "converge": stack_requests.flag(body.get("converge", False),
                                                           "converge")}
                start_operation(session, ctx, name, stack_id, "UPDATE", self._clock(),
                                self._limits.default_timeout_seconds, payload,
                                timeout_seconds=new.timeout_seconds)
                stack.tags, stack.timeout_mins = new.stack.tags, new.stack.timeout_mins
                stack.disable_rollback, stack.files = new.stack.disable_rollback, new.stack.files

    def preview_update(self, ctx: RequestContext, name: str, stack_id: str,
                       body: Mapping[str, Any], *, patch: bool
                       ) -> update_preview.UpdatePreview:
        """What ``update`` with the same request would do to each resource, decided as
        its steps decide (``update_preview``), and each lifecycle plugin's verdict on it.
        Nothing is stored or reserved. Bad input fails as update does; as in Heat, a busy
        or suspended stack may be previewed."""
        with self._db.read() as session:
            stack = self._stack(session, ctx, name, stack_id)
            if stack.deleted_at is not None:
                raise EntityNotFound(entity="Stack", name=name)
            rows = queries.list_resources(session, stack.id)
        stack_requests.check_body(body)
        new = self._propose(ctx, update_body(update_preview.stored_request(stack), body,
                                             patch=patch), stack.name, stack.id)
        stored_ir = self._ir(stack)
        check_immutable(stored_ir, new.ir)
        old_secrets = stored_hidden_values(stack.template, stack.parameters)
        secrets = tuple(sorted({*old_secrets, *hidden_values(new.ir.parameter_schemas,
                                                              new.ir.parameters)},
                               key=len, reverse=True))
        changes = update_preview.resource_changes(
            stack, rows, stored_ir, new.ir, new.stack.template, self._registry, self._clock,
            secrets)
        verdicts: list[dict[str, Any]] = []
        if self._lifecycle is not None:
            previous, target = update_preview.pre_op_stacks(stack, new.stack)
            verdicts = redact(self._lifecycle.dry_run(
                ctx, previous, stored_ir, "UPDATE", current=UpdateTarget(
                    target, new.ir, {row.name: row for row in rows}, old_secrets)), secrets)
        return update_preview.UpdatePreview(
            stack_id=stack.id, stack_name=stack.name, tenant_id=stack.tenant_id,
            changes=changes, lifecycle=verdicts)

    def delete(self, ctx: RequestContext, name: str, stack_id: str) -> None:
        """Delete; a stack busy with another operation has it cancelled first (without
        rollback), as Heat's delete does, and the delete follows it."""
        for attempt in self._db.retrying():
            with attempt as session:
                stack, running = queries.lock_stack(session, ctx.tenant_id, name, stack_id)
                if stack.status != "IN_PROGRESS" or stack.deleted_at is not None:
                    running = None
                if running is None or running.action in ("DELETE", "ABANDON"):
                    start_operation(session, ctx, name, stack_id, "DELETE", self._clock(),
                                    self._limits.default_timeout_seconds)
                    return
                timeout = (stack.timeout_mins or 0) * 60 or self._limits.default_timeout_seconds
                operations.cancel_then_delete(session, stack, running, request_context(ctx),
                                              timeout, self._clock())

    # --- stack reads --------------------------------------------------------------------

    def lookup(self, ctx: RequestContext, name_or_id: str) -> tuple[str, str]:
        """(name, id) of a stack named by id (deleted ones too) or by live name."""
        with self._db.read() as session:
            stack = None
            if _is_uuid(name_or_id):
                stack = queries.find_stack_by_id(session, ctx.tenant_id, name_or_id)
            if stack is None:
                stack = queries.find_live_stack_by_name(session, ctx.tenant_id, name_or_id)
            if stack is None:
                raise EntityNotFound(entity="Stack", name=name_or_id)
            return stack.name, stack.id

    def get(self, ctx: RequestContext, name: str, stack_id: str) -> StackRecord:
        with self._db.read() as session:
            stack = self._stack(session, ctx, name, stack_id)
        # NOTE: built outside the transaction: a large template takes a while.
        return stack_record(self._ir(stack), stack)

    def list_stacks(self, ctx: RequestContext, query: StackQuery) -> tuple[list[StackRecord], int]:
        """One page of the tenant's stacks (every tenant's with ``all_tenants``) and how
        many match in all. Filters follow Heat's names; unknown ones are ignored."""
        tags = queries.TagFilter(all=query.tags, any=query.tags_any, not_all=query.not_tags,
                                 not_any=query.not_tags_any)
        with self._db.read() as session:
            rows, total = queries.list_stacks(
                session, None if query.all_tenants else ctx.tenant_id,
                filters=listing.stack_filters(query.filters), show_deleted=query.show_deleted,
                limit=query.limit, marker=query.marker, sort_keys=query.sort_keys,
                sort_dir=query.sort_dir, tags=tags, show_nested=query.show_nested)
            return [stack_record(None, row) for row in rows], total

    def get_template(self, ctx: RequestContext, name: str, stack_id: str) -> Any:
        with self._db.read() as session:
            return self._stack(session, ctx, name, stack_id).template

    def get_environment(self, ctx: RequestContext, name: str, stack_id: str
                        ) -> dict[str, Any]:
        """The stack's environment as Heat shows it: every section, the parameters the
        user gave, and hidden values masked."""
        with self._db.read() as session:
            stack = self._stack(session, ctx, name, stack_id)
        template = stack.template if isinstance(stack.template, Mapping) else {}
        hidden = hidden_names(template)
        shown = Environment.from_dict(stack.environment).as_dict()
        shown["parameters"] = dict(stack.parameters or {})
        for section in ("parameters", "parameter_defaults"):
            shown[section] = {k: MASK if k in hidden else v for k, v in shown[section].items()}
        return shown

    def get_files(self, ctx: RequestContext, name: str, stack_id: str) -> dict[str, Any]:
        with self._db.read() as session:
            return dict(self._stack(session, ctx, name, stack_id).files or {})

    def list_outputs(self, ctx: RequestContext, name: str, stack_id: str
                     ) -> list[dict[str, Any]]:
        return list(self.get(ctx, name, stack_id).outputs or [])

    def get_output(self, ctx: RequestContext, name: str, stack_id: str, key: str
                   ) -> dict[str, Any]:
        for output in self.list_outputs(ctx, name, stack_id):
            if output["output_key"] == key:
                return output
        raise OutputNotFound(key=key)

    # --- resources and events -----------------------------------------------------------

    def list_resources(self, ctx: RequestContext, name: str, stack_id: str,
                       filters: Mapping[str, list[str]], *, with_attributes: bool = False,
                       nested_depth: int = 0) -> list[ResourceRecord]:
        """The stack's resources; with ``nested_depth`` > 0 those of its child stacks
        too (that many levels down), each naming its stack and parent resource."""
        unknown = sorted(set(filters) - listing.RESOURCE_QUERY_KEYS)
        if unknown:
            raise InvalidFilter(keys=unknown)
        wanted = listing.resource_filter(filters)
        with self._db.read() as session:
            stack = self._stack(session, ctx, name, stack_id)
            rows = queries.list_resources(session, stack.id)
            children = queries.live_children(session, stack.id)
        row_ids = {row.name: row.id for row in rows}
        # Filtered before attributes are read: reading them runs the type's code.
        chosen = {r.name for r in _resource_records(rows, None)
                  if listing.resource_matches(r, row_ids[r.name], wanted)}
        read = (lambda row: read_attributes(stack, row, self._registry, self._clock)
                if row.name in chosen else {}) if with_attributes else None
        records = [dataclasses.replace(r, nested_stack=children.get(r.name))
                   for r in _resource_records(rows, self._ir(stack), read) if r.name in chosen]
        for parent_resource, (child_name, child_id) in sorted(children.items()):
            if nested_depth > 0:
                records += [
                    r if r.stack else dataclasses.replace(
                        r, stack=(child_name, child_id), parent_resource=parent_resource)
                    for r in self.list_resources(ctx, child_name, child_id, filters,
                                                 with_attributes=with_attributes,
                                                 nested_depth=nested_depth - 1)]
        return records

    def get_resource(self, ctx: RequestContext, name: str, stack_id: str, resource: str,
                     with_attr: Sequence[str] = ()) -> ResourceRecord:
        with self._db.read() as session:
            stack = self._stack(session, ctx, name, stack_id)
            rows = queries.list_resources(session, stack.id)
            child = queries.live_child_stack(session, stack.id, resource)
            nested = (child.name, child.id) if child is not None else None
        if resource not in {row.name for row in rows}:
            raise ResourceNotFound(resource_name=resource, stack_name=name)
        records = _resource_records(
            rows, self._ir(stack),
            lambda row: read_attributes(stack, row, self._registry, self._clock, with_attr)
            if row.name == resource else {})
        return dataclasses.replace(next(r for r in records if r.name == resource),
                                   nested_stack=nested)

    def list_events(self, ctx: RequestContext, name: str, stack_id: str, query: EventQuery,
                    resource_name: str | None = None, *, nested_depth: int = 0
                    ) -> list[EventRecord]:
        """One page of the stack's events (of one resource's, with ``resource_name``),
        newest first unless asked otherwise; soft-deleted stacks keep theirs. With
        ``nested_depth`` the events of the stacks nested in it, that many levels down
        (at most the nesting limit), are in the same page, each naming its stack."""
        unknown = sorted(set(query.filters) - EVENT_FILTERS)
        if unknown:
            raise InvalidFilter(keys=unknown)
        filters = {k: v for k, v in query.filters.items() if v}
        if resource_name is not None:
            filters.pop("resource_name", None)  # the path names the resource
        if query.sort_dir is not None:
            ascending = query.sort_dir == "asc"
        elif any(k in queries.EVENT_SORT_KEYS for k in query.sort_keys):
            ascending = True  # Heat: known sort keys without a direction sort ascending
        else:
            ascending = query.ascending
        with self._db.read() as session:
            stack = self._stack(session, ctx, name, stack_id)
            nested = queries.descendants(session, stack.id,
                                         min(max(nested_depth, 0), MAX_NESTED_DEPTH))
            rows = queries.list_events(session, [stack.id, *nested],
                                       resource_name=resource_name,
                                       filters=filters, limit=query.limit,
                                       marker=query.marker, ascending=ascending,
                                       sort_keys=query.sort_keys)
            return [_event(row, (nested[row.stack_id], row.stack_id)
                           if row.stack_id in nested else None) for row in rows]

    def lifecycle_calls(self, ctx: RequestContext, name: str, stack_id: str
                        ) -> list[dict[str, Any]]:
        """Every lifecycle plugin call recorded for the stack, oldest first."""
        with self._db.read() as session:
            stack = self._stack(session, ctx, name, stack_id)
            return [{**(row.lifecycle or {}), "event_id": row.id,
                     "time": row.created_at.isoformat(timespec="seconds")}
                    for row in queries.list_lifecycle_events(session, stack.id)]

    def get_event(self, ctx: RequestContext, name: str, stack_id: str, resource_name: str,
                  event_id: str) -> EventRecord:
        with self._db.read() as session:
            stack = self._stack(session, ctx, name, stack_id)
            row = queries.find_event(session, stack.id, event_id)
            if row is None or row.resource_name != resource_name:
                raise EventNotFound(event_id=event_id)
            return _event(row)

    # --- one resource: metadata, mark unhealthy, signal ---------------------------------

    def resource_metadata(self, ctx: RequestContext, name: str, stack_id: str,
                          resource: str) -> Any:
        """The resource's template metadata, functions of parameters evaluated, hidden
        values masked (see ``resource_requests.static_metadata``)."""
        with self._db.read() as session:
            stack = self._stack(session, ctx, name, stack_id)
            stored = {row.name for row in queries.list_resources(session, stack.id)}
        template = stack.template if isinstance(stack.template, Mapping) else {}
        written = template.get("resources") or {}
        if resource not in written and resource not in stored:
            raise ResourceNotFound(resource_name=resource, stack_name=stack.name)
        metadata = (written.get(resource) or {}).get("metadata") or {}
        ir = self._ir(stack)
        if ir is not None:
            parameters: Mapping[str, Any] = ir.parameters
            secrets = hidden_values(ir.parameter_schemas, ir.parameters)
        else:  # a type uninstalled since: the stored values
            parameters = {**pseudo_parameters(stack.id, stack.name, stack.tenant_id),
                          **(stack.parameters or {})}
            secrets = stored_hidden_values(template, stack.parameters)
        return resource_requests.static_metadata(template, metadata, parameters, secrets)

    def mark_unhealthy(self, ctx: RequestContext, name: str, stack_id: str, resource: str,
                       body: Mapping[str, Any]) -> None:
        """``PATCH .../resources/<name or physical id>``: Heat's mark-unhealthy. Refused
        (409) while the stack has an operation in progress: a worker may be writing the
        same row, and the operation's outcome would overwrite the mark."""
        unhealthy, reason = resource_requests.mark_unhealthy_request(body)
        for attempt in self._db.retrying():
            with attempt as session:
                stack, running = queries.lock_stack(session, ctx.tenant_id, name, stack_id)
                if stack.deleted_at is not None:
                    raise EntityNotFound(entity="Stack", name=name)
                if stack.status == "IN_PROGRESS" or running is not None:
                    raise ActionInProgress(stack_name=stack.name, action=stack.action)
                row = resource_requests.find_resource(queries.list_resources(session, stack.id),
                                                      stack.name, resource)
                resource_requests.mark_unhealthy(session, stack, row, unhealthy, reason,
                                                 self._clock())

    def signal(self, ctx: RequestContext, name: str, stack_id: str, resource: str,
               details: Mapping[str, Any] | None = None) -> None:
        """``POST .../resources/<name>/signal``: Heat's refusals, else the resource's type
        takes the signal (``resource_requests.deliver_signal``). One write transaction:
        it inserts the signal and its event and writes no row a worker writes."""
        with self._db.transaction() as session:
            stack = self._stack(session, ctx, name, stack_id)
            if stack.deleted_at is not None:
                raise EntityNotFound(entity="Stack", name=name)
            rows = queries.list_resources_named(session, stack.id, [resource])
            row = resource_requests.signal_target(stack, rows, resource)
            resource_requests.deliver_signal(session, stack, row, details, self._registry,
                                             self._clock)

    # --- resource types -----------------------------------------------------------------

    def list_resource_types(self, filters: type_catalogue.TypeFilters
                            ) -> list[ResourceTypeRecord]:
        return type_catalogue.list_types(self._registry, filters)

    def installed_resource_types(self) -> list[type_catalogue.InstalledType]:
        return type_catalogue.installed_types(self._registry)

    def get_resource_type(self, type_name: str) -> ResourceTypeRecord:
        return type_catalogue.get_type(self._registry, type_name)

    def generate_template(self, type_name: str, template_type: str) -> dict[str, Any]:
        """``GET /resource_types/<type>/template``: see ``template_info.resource_template``."""
        cls = self._registry.find(type_name)
        if cls is None:
            raise EntityNotFound(entity="Resource Type", name=type_name)
        return template_info.resource_template(type_name, cls, template_type)

    # --- helpers ------------------------------------------------------------------------

    def _stack(self, session: Any, ctx: RequestContext, name: str, stack_id: str) -> Stack:
        if not _is_uuid(stack_id):
            raise EntityNotFound(entity="Stack", name=name)
        return queries.get_stack(session, ctx.tenant_id, name, stack_id)

    def _ir(self, stack: Stack) -> ResolvedStack | None:
        """The stack's IR; cached, because a stack's template and parameters change only
        through an operation, which bumps ``updated_at`` (the cache key includes it)."""
        key = (stack.id, stack.updated_at)
        if key in self._irs:
            return self._irs[key]
        try:
            # The stored object, not the text: it was validated with its lines at create,
            # and parsing JSON is far cheaper than parsing YAML.
            ir = build_from_document(document(stack.template), stack.parameters,
                                     pseudo_parameters(stack.id, stack.name, stack.tenant_id),
                                     self._registry.get, files=stack.files,
                                     constraints=self._registry.constraint,
                                     facade=stack.facade,
                                     environment=stack.environment)
        except StackValidationFailed:
            ir = None  # a type uninstalled since: show the stack without its schema
        if len(self._irs) >= IR_CACHE_SIZE:
            self._irs.clear()
        self._irs[key] = ir
        return ir


def stack_record(ir: ResolvedStack | None, stack: Stack) -> StackRecord:
    """A stack row as a record; without its IR the parameters are left out (lists)."""
    parameters: dict[str, Any] = {}
    if ir is not None:
        shown = masked(ir.parameter_schemas, ir.parameters)
        parameters = {k: _stringify(v) for k, v in shown.items()}
    description = stack.description or "No description"
    return StackRecord(
        id=stack.id, name=stack.name, tenant_id=stack.tenant_id, action=stack.action,
        status=stack.status, status_reason=stack.status_reason, description=description,
        template_description=description, parameters=parameters,
        outputs=None if stack.deleted_at else (stack.outputs or []),
        tags=list(stack.tags or []), disable_rollback=stack.disable_rollback,
        timeout_mins=stack.timeout_mins, owner=stack.owner, created_at=stack.created_at,
        updated_at=stack.updated_at, deleted_at=stack.deleted_at, parent=stack.owner_id)


def _stack_name(body: Mapping[str, Any]) -> str:
    name = body.get("stack_name")
    if not name:
        raise BadRequest(reason="No stack name specified")
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise StackValidationFailed(
            reason=f'Invalid stack name {name} must contain only alphanumeric or "_-." '
                   "characters, must start with alpha and must be 255 characters or less.")
    return name


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


def _stringify(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


def _resource_records(rows: list[Resource], ir: ResolvedStack | None,
                      attributes: Callable[[Resource], dict[str, Any]] | None = None,
                      ) -> list[ResourceRecord]:
    required_by: dict[str, list[str]] = {row.name: [] for row in rows}
    for row in rows:
        for dep in row.requires or []:
            required_by.setdefault(dep, []).append(row.name)
    return [
        ResourceRecord(
            name=row.name, type=row.type, action=row.action, status=row.status,
            status_reason=row.status_reason or "", physical_id=row.physical_id or "",
            required_by=sorted(required_by.get(row.name, [])),
            description=ir.resources[row.name].description
            if ir and row.name in ir.resources else "",
            attributes=attributes(row) if attributes else {},
            created_at=row.created_at, updated_at=row.updated_at, drift=row.drift)
        for row in rows
    ]


def _event(row: Event, stack: tuple[str, str] | None = None) -> EventRecord:
    return EventRecord(id=row.id, resource_name=row.resource_name,
                       physical_resource_id=row.physical_resource_id,
                       resource_type=row.resource_type, action=row.action, status=row.status,
                       reason=row.reason, properties=dict(row.properties or {}),
                       created_at=row.created_at, lifecycle=row.lifecycle, stack=stack)


def _definition(stack: Stack) -> dict[str, Any]:
    """What an update changes and a rollback restores."""
    return {"template": stack.template, "parameters": stack.parameters,
            "environment": stack.environment, "files": stack.files}
