"""Frozen read models handed to the API and the CLI; ORM objects never leave services/."""

from __future__ import annotations

import dataclasses
import datetime
import json
from typing import Any

from engine.db.models import PropertyDrift, Stack
from engine.db.stack_list import ListedStack
from engine.ir.model import ResolvedStack
from engine.resources.outputs import StackOutput
from engine.template.parameters import masked


@dataclasses.dataclass(frozen=True)
class TenantRecord:
    id: str
    name: str
    created_at: datetime.datetime


@dataclasses.dataclass(frozen=True)
class TokenRecord:
    id: str
    tenant_id: str
    role: str
    created_at: datetime.datetime
    last_used_at: datetime.datetime | None
    revoked_at: datetime.datetime | None
    expires_at: datetime.datetime | None

    def is_live(self, now: datetime.datetime) -> bool:
        """Whether it still authenticates: neither revoked nor expired."""
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


@dataclasses.dataclass(frozen=True)
class IssuedToken:
    """A new token: ``secret`` is shown once and never stored."""

    token: TokenRecord
    secret: str


@dataclasses.dataclass(frozen=True)
class Principal:
    token_id: str
    tenant_id: str
    role: str


@dataclasses.dataclass(frozen=True)
class StackRecord:
    id: str
    name: str
    tenant_id: str
    action: str
    status: str
    status_reason: str
    description: str
    template_description: str
    parameters: dict[str, Any]  # stringified, hidden ones masked, pseudo ones included
    outputs: list[StackOutput] | None
    tags: list[str]
    disable_rollback: bool
    timeout_mins: int | None
    owner: str
    created_at: datetime.datetime
    updated_at: datetime.datetime | None
    deleted_at: datetime.datetime | None
    parent: str | None = None  # the id of the stack a nested stack belongs to


def stack_record(ir: ResolvedStack | None, stack: Stack | ListedStack, *,
                 outputs: list[StackOutput] | None = None) -> StackRecord:
    """A stack's shown columns as a record; without its IR the parameters are left out.
    The outputs are the ones given: a show's (``StackReads.get``), None elsewhere."""
    parameters: dict[str, Any] = {}
    if ir is not None:
        shown = masked(ir.parameter_schemas, ir.parameters)
        parameters = {k: _stringify(v) for k, v in shown.items()}
    description = stack.description or "No description"
    return StackRecord(
        id=stack.id, name=stack.name, tenant_id=stack.tenant_id, action=stack.action,
        status=stack.status, status_reason=stack.status_reason, description=description,
        template_description=description, parameters=parameters, outputs=outputs,
        tags=list(stack.tags or []), disable_rollback=stack.disable_rollback,
        timeout_mins=stack.timeout_mins, owner=stack.owner, created_at=stack.created_at,
        updated_at=stack.updated_at, deleted_at=stack.deleted_at, parent=stack.owner_id)


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


@dataclasses.dataclass(frozen=True)
class ResourceRecord:
    name: str
    type: str
    action: str
    status: str
    status_reason: str
    physical_id: str
    required_by: list[str]
    description: str
    attributes: dict[str, Any]
    created_at: datetime.datetime
    updated_at: datetime.datetime | None
    # The child stack this resource owns (name, id), and for a resource listed from a
    # child stack (``nested_depth``) the stack it is in and the parent's resource.
    nested_stack: tuple[str, str] | None = None
    stack: tuple[str, str] | None = None
    parent_resource: str | None = None
    # What the last check saw differ from the template (masked); None: never observed.
    drift: dict[str, PropertyDrift] | None = None
    # False when the stack's current template no longer has it: an update is deleting it.
    in_template: bool = True
    # The physical resource an update replaced with this one and has not deleted yet.
    replaced_physical_id: str | None = None


@dataclasses.dataclass(frozen=True)
class EventRecord:
    id: str
    resource_name: str
    physical_resource_id: str
    resource_type: str
    action: str
    status: str
    reason: str
    properties: dict[str, Any]
    created_at: datetime.datetime
    lifecycle: dict[str, Any] | None = None  # a lifecycle plugin call, when it is one
    # (name, id) of the nested stack the event is of, when listed from an ancestor.
    stack: tuple[str, str] | None = None


@dataclasses.dataclass(frozen=True)
class ResourceTypeRecord:
    name: str
    description: str
    properties: dict[str, Any]  # Heat's wire form of each schema, by name
    attributes: dict[str, Any]  # the same, without ``show`` (the view adds it)
    support_status: dict[str, Any]  # Heat's wire form


@dataclasses.dataclass(frozen=True)
class SnapshotRecord:
    """A stack snapshot as Heat shows it; ``data`` with hidden values masked."""

    id: str
    name: str | None
    status: str
    status_reason: str | None
    data: dict[str, Any] | None
    created_at: datetime.datetime
