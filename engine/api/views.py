"""Records -> Heat v1 JSON documents. Keys and formats follow HEAT-API.md section 4."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from engine.clock import isotime
from engine.context import RequestContext
from engine.schema import AllowedPattern, AllowedValues, Custom, Length, Modulo, Range
from engine.services.lifecycle import PluginRecord
from engine.services.operator import OperationRecord
from engine.services.records import (
    EventRecord,
    ResourceRecord,
    ResourceTypeRecord,
    SnapshotRecord,
    StackRecord,
    TenantRecord,
)
from engine.services.stack_dry_runs import PreviewResource, StackPreview, TemplateValidation
from engine.services.stack_graph import StackGraph
from engine.services.template_info import TemplateFunctionInfo, TemplateVersionInfo
from engine.services.update_preview import UpdatePreview
from engine.services.workers import WorkerRecord
from engine.template.parameters import ParameterSchema
from engine.vocabulary import Action, Status

#: A time in a document (one owner of the format: ``engine.clock.isotime``).
timestamp = isotime


def stack_url(base: str, stack_name: str, stack_id: str) -> str:
    return f"{base}/stacks/{stack_name}/{stack_id}"


def _stack_common(base: str, stack: StackRecord) -> dict[str, Any]:
    return {
        "id": stack.id,
        "stack_name": stack.name,
        "stack_status": f"{stack.action}_{stack.status}",
        "stack_status_reason": stack.status_reason,
        "creation_time": timestamp(stack.created_at),
        "updated_time": timestamp(stack.updated_at),
        "deletion_time": timestamp(stack.deleted_at),
        "links": [{"href": stack_url(base, stack.name, stack.id), "rel": "self"}],
        "parent": stack.parent,
        "stack_owner": stack.owner,
        "stack_user_project_id": stack.tenant_id,
    }


def stack_summary(base: str, stack: StackRecord, *, with_project: bool) -> dict[str, Any]:
    doc = _stack_common(base, stack)
    doc["description"] = ""
    doc["tags"] = stack.tags or None
    if with_project:
        doc["project"] = stack.tenant_id
    return doc


def stack_detail(base: str, stack: StackRecord, *, resolve_outputs: bool) -> dict[str, Any]:
    doc = _stack_common(base, stack)
    doc.update({
        "description": stack.description,
        "template_description": stack.template_description,
        "disable_rollback": stack.disable_rollback,
        "timeout_mins": stack.timeout_mins,
        "parameters": stack.parameters,
        "capabilities": [],
        "notification_topics": [],
        "tags": stack.tags,
    })
    if resolve_outputs and stack.outputs is not None:
        doc["outputs"] = stack.outputs
    return doc


def resource(base: str, stack_name: str, stack_id: str, res: ResourceRecord,
             *, detail: bool) -> dict[str, Any]:
    if res.stack is not None:  # listed from a child stack (nested_depth)
        stack_name, stack_id = res.stack
    stack_href = stack_url(base, stack_name, stack_id)
    doc: dict[str, Any] = {
        "resource_name": res.name,
        "logical_resource_id": res.name,
        "physical_resource_id": res.physical_id,
        "resource_type": res.type,
        "resource_status": f"{res.action}_{res.status}",
        "resource_status_reason": res.status_reason,
        "creation_time": timestamp(res.created_at),
        "updated_time": timestamp(res.updated_at or res.created_at),
        "required_by": res.required_by,
        "links": [{"href": f"{stack_href}/resources/{res.name}", "rel": "self"},
                  {"href": stack_href, "rel": "stack"}],
    }
    if res.nested_stack is not None:
        doc["links"].append({"href": stack_url(base, *res.nested_stack), "rel": "nested"})
    if res.parent_resource is not None:
        doc["parent_resource"] = res.parent_resource
    if detail:
        doc["attributes"] = res.attributes
        doc["description"] = res.description
        if res.drift is not None:
            # Kiln's own key (heatclient shows any key): {property: {expected, actual}}.
            doc["drift"] = res.drift
    return doc


def event(base: str, stack_name: str, stack_id: str, ev: EventRecord,
          *, detail: bool, root_stack: bool = False) -> dict[str, Any]:
    root_href = stack_url(base, stack_name, stack_id)
    # An event of a nested stack (listed with nested_depth) links to that stack.
    stack_href = stack_url(base, *ev.stack) if ev.stack is not None else root_href
    resource_href = f"{stack_href}/resources/{ev.resource_name}"
    doc: dict[str, Any] = {
        "id": ev.id,
        "event_time": timestamp(ev.created_at),
        "resource_name": ev.resource_name,
        "logical_resource_id": ev.resource_name,
        "physical_resource_id": ev.physical_resource_id,
        "resource_status": f"{ev.action}_{ev.status}",
        "resource_status_reason": ev.reason,
        "links": [{"href": f"{resource_href}/events/{ev.id}", "rel": "self"},
                  {"href": resource_href, "rel": "resource"},
                  {"href": stack_href, "rel": "stack"}],
    }
    if root_stack:
        # Asked with nested_depth: the stack asked about is the root of every event.
        doc["links"].append({"href": root_href, "rel": "root_stack"})
    if ev.lifecycle is not None:
        doc["lifecycle"] = ev.lifecycle  # Kiln's addition: the plugin call in structured form
    if detail:
        doc["resource_type"] = ev.resource_type
        doc["resource_properties"] = ev.properties
    return doc


def resource_type(record: ResourceTypeRecord, *, with_description: bool) -> dict[str, Any]:
    """Heat's resource schema; ``description`` only when asked for (see the spec: Heat 27
    never sends it, heatclient asks with ``with_description``)."""
    doc = {
        "resource_type": record.name,
        "properties": record.properties,
        # Heat adds its base attribute ``show`` to every type, after the type's own.
        "attributes": {**record.attributes,
                       "show": {"description": "Detailed information about resource.",
                                "type": "map"}},
        "support_status": record.support_status,
    }
    if with_description:
        doc["description"] = record.description
    return doc


def resource_type_summary(record: ResourceTypeRecord, *, with_description: bool) -> Any:
    """An item of ``GET /resource_types``: the name, or the name and description."""
    if with_description:
        return {"resource_type": record.name, "description": record.description}
    return record.name


def template_version(info: TemplateVersionInfo) -> dict[str, Any]:
    return {"version": info.version, "type": info.type, "aliases": list(info.aliases)}


def template_function(info: TemplateFunctionInfo) -> dict[str, Any]:
    return {"functions": info.name, "description": info.description}


# --- dry runs: stack preview and template validate -----------------------------------

# HOT parameter types as validate names them (the CFN names, as in Heat).
VALIDATE_TYPES = {"string": "String", "number": "Number",
                  "comma_delimited_list": "CommaDelimitedList", "json": "Json",
                  "boolean": "Boolean"}


def stack_preview(base: str, preview: StackPreview) -> dict[str, Any]:
    """Heat's preview: the show shape without a status, ``"id": "None"``, output values
    null, the resources in the engine's raw format, a resource that makes a nested stack
    replaced by the list of that stack's resources (Heat's ``preview_resources``); plus
    Kiln's ``lifecycle`` verdicts."""
    record = preview.stack
    doc = stack_detail(base, record, resolve_outputs=False)
    del doc["stack_status"], doc["stack_status_reason"]
    doc["stack_user_project_id"] = None
    doc["outputs"] = preview.outputs
    doc["resources"] = _preview_resources(record.tenant_id, record.name, record.id,
                                          preview.resources)
    doc["lifecycle"] = preview.lifecycle  # Kiln's addition
    return doc


def _preview_resources(tenant_id: str, stack_name: str, stack_id: str,
                       resources: list[PreviewResource]) -> list[Any]:
    identity = {"tenant": tenant_id, "stack_name": stack_name, "stack_id": stack_id}
    return [_preview_resources(tenant_id, res.nested.stack_name, stack_id,
                               res.nested.resources) if res.nested is not None else {
        "resource_name": res.name,
        "resource_type": res.type,
        "resource_action": Action.INIT,
        "resource_status": Status.COMPLETE,
        "resource_status_reason": "",
        "physical_resource_id": "",
        "creation_time": None,
        "updated_time": None,
        "required_by": res.required_by,
        "description": res.description,
        "metadata": res.metadata,
        "attributes": dict.fromkeys(res.attributes),
        "properties": res.properties,
        "resource_identity": {**identity, "path": f"/resources/{res.name}"},
        "stack_identity": {**identity, "path": ""},
        "stack_name": stack_name,
    } for res in resources]


def update_preview(preview: UpdatePreview) -> dict[str, Any]:
    """Heat's ``resource_changes``, each item in the engine's raw resource format (no
    ``properties``, unlike stack preview); plus Kiln's ``lifecycle`` verdicts."""
    identity = {"tenant": preview.tenant_id, "stack_name": preview.stack_name,
                "stack_id": preview.stack_id}
    changes = {category: [{
        "resource_name": res.name,
        "resource_type": res.type,
        "resource_action": res.action,
        "resource_status": res.status,
        "resource_status_reason": res.status_reason,
        "physical_resource_id": res.physical_id,
        "creation_time": timestamp(res.created_at),
        "updated_time": timestamp(res.updated_at),
        "required_by": res.required_by,
        "description": res.description,
        "metadata": res.metadata,
        "attributes": res.attributes,
        "resource_identity": {**identity, "path": f"/resources/{res.name}"},
        "stack_identity": {**identity, "path": ""},
        "stack_name": preview.stack_name,
    } for res in items] for category, items in preview.changes.items()}
    return {"resource_changes": changes, "lifecycle": preview.lifecycle}  # Kiln's addition


def template_validation(result: TemplateValidation) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "Description": result.description,
        "Parameters": {schema.name: _validate_parameter(schema, result.values)
                       for schema in result.parameters},
    }
    if result.parameter_groups:
        doc["ParameterGroups"] = result.parameter_groups
    # Heat's user environment, as the request gave it (hidden values masked).
    doc["Environment"] = {**result.environment, "parameter_merge_strategies": {}}
    doc["lifecycle"] = result.lifecycle  # Kiln's addition
    return doc


def _validate_parameter(schema: ParameterSchema, values: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "Type": VALIDATE_TYPES.get(schema.type, schema.type),
        "Description": schema.description,
        "NoEcho": "true" if schema.hidden else "false",
        "Label": schema.label or schema.name,
    }
    if schema.has_default and schema.default is not None:
        doc["Default"] = schema.default  # the service already masked a hidden one
    if schema.name in values:
        doc["Value"] = values[schema.name]
    descriptions = []
    for constraint, description in schema.constraints:
        if isinstance(constraint, Length):
            doc.update(_bounds("Length", constraint.min, constraint.max))
        elif isinstance(constraint, Range):
            doc.update(_bounds("Value", constraint.min, constraint.max))
        elif isinstance(constraint, AllowedValues):
            doc["AllowedValues"] = list(constraint.values)
        elif isinstance(constraint, AllowedPattern):
            doc["AllowedPattern"] = constraint.pattern
        elif isinstance(constraint, Modulo):
            doc.update({"Step": constraint.step, "Offset": constraint.offset})
        elif isinstance(constraint, Custom):
            doc["CustomConstraint"] = constraint.name
        if description:
            descriptions.append(description)
    if descriptions:
        doc["ConstraintDescription"] = " ".join(descriptions)
    if schema.tags:
        doc["Tags"] = list(schema.tags)
    return doc


def _bounds(noun: str, low: float | None, high: float | None) -> dict[str, Any]:
    return {f"{edge}{noun}": value for edge, value in (("Min", low), ("Max", high))
            if value is not None}


def service(worker: WorkerRecord) -> dict[str, Any]:
    """Heat's service document for a worker (``openstack orchestration service list``),
    plus Kiln's ``pid`` and ``steps_held``. ``status`` is ``up`` while the worker's
    liveness lasts and it is neither stopped nor fenced. Times are as Heat writes them here:
    ISO 8601 in UTC with microseconds and no zone."""

    def iso(value: datetime.datetime | None) -> str | None:
        return None if value is None else (
            value.astimezone(datetime.UTC).replace(tzinfo=None).isoformat())

    return {
        "id": worker.id, "engine_id": worker.id, "host": worker.host,
        "hostname": worker.host, "binary": "kiln-engine", "topic": "engine",
        "created_at": iso(worker.started_at), "updated_at": iso(worker.heartbeat_at),
        "deleted_at": iso(worker.stopped_at), "status": "up" if worker.alive else "down",
        "pid": worker.pid, "steps_held": worker.steps_held,
    }


def session(ctx: RequestContext, tenant: TenantRecord) -> dict[str, Any]:
    """``GET /v1/session``: the token's tenant and role (the token's id, never its
    secret)."""
    return {"tenant_id": tenant.id, "tenant_name": tenant.name, "role": ctx.role,
            "token_id": ctx.username, "is_admin": ctx.is_admin}


def graph(found: StackGraph) -> dict[str, Any]:
    """``GET .../graph``: the stack, its resources as nodes (statuses and reasons as the
    resource list shows them), and an edge from each prerequisite to each dependent."""
    stack = found.stack
    return {
        "stack": {"id": stack.id, "name": stack.name, "action": stack.action,
                  "status": stack.status, "status_reason": stack.status_reason},
        "nodes": [{
            "key": node.key, "name": node.resource.name, "type": node.resource.type,
            "action": node.resource.action, "status": node.resource.status,
            "status_reason": node.resource.status_reason,
            "physical_resource_id": node.resource.physical_id, "stack_id": node.stack_id,
            "parent": node.parent,
            "nested_stack_id": node.resource.nested_stack[1]
            if node.resource.nested_stack is not None else None,
            "in_template": node.resource.in_template,
            "replaced": {"physical_resource_id": node.resource.replaced_physical_id}
            if node.resource.replaced_physical_id is not None else None,
            "line": node.line,
        } for node in found.nodes],
        "edges": [{"from": first, "to": then} for first, then in found.edges],
    }


def operation(op: OperationRecord) -> dict[str, Any]:
    """``GET /operations``: an operation as ``kiln-manage operation show`` shows it."""
    return {
        "id": op.id, "stack_id": op.stack_id, "stack_name": op.stack_name,
        "tenant_id": op.tenant_id, "action": op.action, "state": op.state,
        "attempt": op.attempt, "created_at": timestamp(op.created_at),
        "updated_at": timestamp(op.updated_at), "finished_at": timestamp(op.finished_at),
        "deadline_at": timestamp(op.deadline_at), "held_by": list(op.held_by),
        "lease_expires_at": timestamp(op.lease_expires_at),
        "holder_alive": op.holder_alive, "failure_reason": op.failure_reason,
        "cancelled": op.cancelled, "steps": dataclasses.asdict(op.steps),
        "step_holders": op.step_holders, "awaiting_approval": op.awaiting_approval,
    }


def worker(record: WorkerRecord) -> dict[str, Any]:
    """``GET /workers``: a worker as ``kiln-manage worker list`` shows it."""
    return {
        "id": record.id, "host": record.host, "pid": record.pid,
        "started_at": timestamp(record.started_at),
        "heartbeat_at": timestamp(record.heartbeat_at),
        "stopped_at": timestamp(record.stopped_at), "steps_held": record.steps_held,
        "alive": record.alive,
    }


def lifecycle_plugin(plugin: PluginRecord, settings: list[dict[str, Any]],
                     recent: list[dict[str, Any]]) -> dict[str, Any]:
    """``GET /lifecycle_plugins``: a plugin as ``kiln-manage plugins list`` shows it, with
    its settings (secret ones masked already) and its recent calls."""
    return {
        "name": plugin.name, "enabled": plugin.enabled, "reason": plugin.reason,
        "position": plugin.position, "entry_point": plugin.entry_point,
        "distribution": plugin.distribution, "version": plugin.version,
        "timeout_seconds": plugin.timeout_seconds, "on_timeout": plugin.on_timeout,
        "supports_dry_run": plugin.supports_dry_run, "tree_scope": plugin.tree_scope,
        "settings": settings, "recent": recent,
    }


def snapshot(record: SnapshotRecord) -> dict[str, Any]:
    """Heat's ``format_snapshot``: its keys, no stack id."""
    return {"id": record.id, "name": record.name, "status": record.status,
            "status_reason": record.status_reason, "data": record.data,
            "creation_time": timestamp(record.created_at)}
