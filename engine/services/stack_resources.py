"""A stack's resources: the list, one resource (its attributes with the stack's hidden
values masked), its metadata, mark-unhealthy and signals (the rules of the last three are
``resource_requests``'s)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.clock import Clock
from engine.context import SIGNAL_ROLE, RequestContext
from engine.db import resource_rows, stack_rows, stack_trees
from engine.db.models import Resource, Stack
from engine.db.session import Database
from engine.errors import ActionInProgress, EntityNotFound, InvalidFilter, ResourceNotFound
from engine.ir.build import pseudo_parameters
from engine.ir.model import ResolvedStack
from engine.ir.stored import StoredIrs
from engine.resources.registry import ResourceTypeRegistry
from engine.services import listing, resource_requests
from engine.services.attributes import read_attributes
from engine.services.records import ResourceRecord
from engine.services.stack_lookup import named_stack
from engine.template.parameters import hidden_values, redact
from engine.template.stored_parameters import stored_hidden_values, stored_values
from engine.template.versions import is_cfn
from engine.vocabulary import Status


class StackResources:
    def __init__(self, db: Database, registry: ResourceTypeRegistry, clock: Clock,
                 irs: StoredIrs) -> None:
        self._db = db
        self._registry = registry
        self._clock = clock
        self._irs = irs

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
            stack = named_stack(session, ctx, name, stack_id)
            rows = resource_rows.list_resources(session, stack.id)
            children = stack_trees.live_children(session, stack.id)
        row_ids = {row.name: row.id for row in rows}
        # Filtered before attributes are read: reading them runs the type's code.
        chosen = {r.name for r in _resource_records(rows, None)
                  if listing.resource_matches(r, row_ids[r.name], wanted)}
        attributes = self._attributes(stack)
        read = (lambda row: attributes(row) if row.name in chosen else {}
                ) if with_attributes else None
        records = [dataclasses.replace(r, nested_stack=children.get(r.name))
                   for r in _resource_records(rows, self._irs.if_valid(stack), read,
                                              stack.template)
                   if r.name in chosen]
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
            stack = named_stack(session, ctx, name, stack_id)
            rows = resource_rows.list_resources(session, stack.id)
            child = stack_trees.live_child_stack(session, stack.id, resource)
            nested = (child.name, child.id) if child is not None else None
        if resource not in {row.name for row in rows}:
            raise ResourceNotFound(resource_name=resource, stack_name=name)
        attributes = self._attributes(stack, with_attr)
        records = _resource_records(
            rows, self._irs.if_valid(stack),
            lambda row: attributes(row) if row.name == resource else {}, stack.template)
        return dataclasses.replace(next(r for r in records if r.name == resource),
                                   nested_stack=nested)

    def _attributes(self, stack: Stack, extra: Sequence[str] = ()
                    ) -> Callable[[Resource], dict[str, Any]]:
        """Reads a row's attributes with the stack's hidden values masked: a type may
        hand a property on as an attribute (``OS::Heat::Value``'s ``value``)."""
        secrets = stored_hidden_values(stack.template, stack.parameters, stack.environment)

        def read(row: Resource) -> dict[str, Any]:
            shown: dict[str, Any] = redact(
                read_attributes(stack, row, self._registry, self._clock, extra), secrets)
            return shown

        return read

    def resource_metadata(self, ctx: RequestContext, name: str, stack_id: str,
                          resource: str) -> Any:
        """The resource's template metadata, functions of parameters evaluated, hidden
        values masked (see ``resource_requests.static_metadata``)."""
        with self._db.read() as session:
            stack = named_stack(session, ctx, name, stack_id)
            stored = {row.name for row in resource_rows.list_resources(session, stack.id)}
        template = stack.template if isinstance(stack.template, Mapping) else {}
        written = template.get("resources") or {}
        if resource not in written and resource not in stored:
            raise ResourceNotFound(resource_name=resource, stack_name=stack.name)
        metadata = (written.get(resource) or {}).get("metadata") or {}
        ir = self._irs.if_valid(stack)
        if ir is not None:
            parameters: Mapping[str, Any] = ir.parameters
            secrets = hidden_values(ir.parameter_schemas, ir.parameters)
        else:  # a type uninstalled since: the stored values
            parameters = {**pseudo_parameters(stack.id, stack.name, stack.tenant_id),
                          **stored_values(template, stack.parameters, stack.environment)}
            secrets = stored_hidden_values(template, stack.parameters, stack.environment)
        return resource_requests.static_metadata(template, metadata, parameters, secrets)

    def mark_unhealthy(self, ctx: RequestContext, name: str, stack_id: str, resource: str,
                       body: Mapping[str, Any]) -> None:
        """``PATCH .../resources/<name or physical id>``: Heat's mark-unhealthy. Refused
        (409) while the stack has an operation in progress: a worker may be writing the
        same row, and the operation's outcome would overwrite the mark."""
        unhealthy, reason = resource_requests.mark_unhealthy_request(body)
        for attempt in self._db.retrying():
            with attempt as session:
                stack, running = stack_rows.lock_stack(session, ctx.tenant_id, name, stack_id)
                if stack.deleted_at is not None:
                    raise EntityNotFound(entity="Stack", name=name)
                if stack.status == Status.IN_PROGRESS or running is not None:
                    raise ActionInProgress(stack_name=stack.name, action=stack.action)
                rows = resource_rows.list_resources(session, stack.id)
                row = resource_requests.find_resource(rows, stack.name, resource)
                resource_requests.mark_unhealthy(session, stack, row, unhealthy, reason,
                                                 self._clock())

    def signal(self, ctx: RequestContext, name: str, stack_id: str, resource: str,
               details: Mapping[str, Any] | None = None) -> None:
        """``POST .../resources/<name>/signal``: Heat's refusals, else the resource's type
        takes the signal (``resource_requests.deliver_signal``), or, for a body with
        ``unset_hook``, a breakpoint is cleared (``resource_requests.unset_hook``). One
        write transaction: it inserts the signal and its event and writes no row a
        worker writes."""
        with self._db.transaction() as session:
            stack = named_stack(session, ctx, name, stack_id)
            if stack.deleted_at is not None:
                raise EntityNotFound(entity="Stack", name=name)
            rows = resource_rows.list_resources_named(session, stack.id, [resource])
            if details is not None and resource_requests.clears_hook(details):
                resource_requests.unset_hook(session, stack, rows, resource,
                                             details[resource_requests.UNSET_HOOK],
                                             self._registry, self._clock)
                return
            row = resource_requests.signal_target(stack, rows, resource, self._registry)
            resource_requests.deliver_signal(
                session, stack, row, details, self._registry, self._clock,
                token_id=ctx.username if ctx.role == SIGNAL_ROLE else None)


def _resource_records(rows: list[Resource], ir: ResolvedStack | None,
                      attributes: Callable[[Resource], dict[str, Any]] | None = None,
                      template: Any = None) -> list[ResourceRecord]:
    """The rows as records; ``template`` (the stored one) tells which the template still
    has when there is no IR (a type uninstalled since)."""
    required_by: dict[str, list[str]] = {row.name: [] for row in rows}
    for row in rows:
        for dep in row.requires or []:
            required_by.setdefault(dep, []).append(row.name)
    # The IR's resources: those a false condition leaves out are being deleted too.
    declared = set(ir.resources) if ir is not None else _written_resources(template)
    return [
        ResourceRecord(
            name=row.name, type=row.type, action=row.action, status=row.status,
            status_reason=row.status_reason or "", physical_id=row.physical_id or "",
            required_by=sorted(required_by.get(row.name, [])),
            description=ir.resources[row.name].description
            if ir and row.name in ir.resources else "",
            attributes=attributes(row) if attributes else {},
            created_at=row.created_at, updated_at=row.updated_at, drift=row.drift,
            in_template=row.name in declared,
            replaced_physical_id=row.replaced.get("physical_id") if row.replaced else None)
        for row in rows
    ]


def _written_resources(template: Any) -> set[str]:
    if not isinstance(template, Mapping):
        return set()
    section = template.get("Resources" if is_cfn(template) else "resources")
    return set(section) if isinstance(section, Mapping) else set()
