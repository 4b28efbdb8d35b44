"""Records -> Heat v1 JSON documents. Keys and formats follow HEAT-API.md section 4."""

from __future__ import annotations

import datetime
from typing import Any

from engine.services.records import EventRecord, ResourceRecord, ResourceTypeRecord, StackRecord


def timestamp(value: datetime.datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
        "parent": None,
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
    if detail:
        doc["attributes"] = res.attributes
        doc["description"] = res.description
    return doc


def event(base: str, stack_name: str, stack_id: str, ev: EventRecord,
          *, detail: bool) -> dict[str, Any]:
    stack_href = stack_url(base, stack_name, stack_id)
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
    if detail:
        doc["resource_type"] = ev.resource_type
        doc["resource_properties"] = ev.properties
    return doc


def resource_type(record: ResourceTypeRecord) -> dict[str, Any]:
    return {
        "resource_type": record.name,
        "description": record.description,
        "properties": record.properties,
        "attributes": {**record.attributes,
                       "show": {"description": "Detailed information about resource.",
                                "type": "map"}},
        "support_status": {"status": "SUPPORTED", "message": None,
                           "version": record.support_version, "previous_status": None},
    }
