"""Update preview (``PUT|PATCH .../preview``): what an update would do to each resource,
decided the way the update itself decides it (``engine.resources.update_forecast``, which
the lifecycle plugins' views of the update read too), shown as Heat's
``resource_changes``.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from engine import reasons
from engine.clock import Clock
from engine.db.models import Resource as ResourceRow
from engine.db.models import Stack
from engine.ir.build import pseudo_parameters
from engine.ir.model import ResolvedStack
from engine.lifecycle.snapshot import Redefined
from engine.resources.read_only import ReadOnlyRuntime
from engine.resources.registry import ResourceTypeRegistry
from engine.resources.update_forecast import PlannedChange, StoredFacts, forecast_update
from engine.services.attributes import read_attributes
from engine.services.resource_requests import static_metadata
from engine.template.parameters import redact
from engine.template.stored_parameters import stored_values
from engine.vocabulary import Action, Change, Status

# The keys of Heat's ``resource_changes``, in the order Heat's clients list them.
ADDED, DELETED, REPLACED, UNCHANGED, UPDATED = (
    "added", "deleted", "replaced", "unchanged", "updated")
CATEGORIES = (ADDED, DELETED, REPLACED, UNCHANGED, UPDATED)
CATEGORY = {Change.NONE: UNCHANGED, Change.UPDATE: UPDATED, Change.REPLACE: REPLACED,
            Change.CREATE: ADDED, Change.DELETE: DELETED}
# As in Heat: what goes away is shown as it is stored, the rest as the new stack has it.
FROM_STORED = (UPDATED, DELETED)


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


def forecast(stack: Stack, rows: Sequence[ResourceRow], target: ResolvedStack,
             types: ResourceTypeRegistry, clock: Clock) -> dict[str, PlannedChange]:
    """The update's forecast, reading the stored resources as the worker will."""
    by_name = {row.name: row for row in rows}
    return forecast_update(target, {row.name: StoredFacts.of(row) for row in rows}, types,
                           lambda name: ReadOnlyRuntime(stack, by_name[name], clock))


def resource_changes(stack: Stack, rows: Sequence[ResourceRow], stored_ir: ResolvedStack | None,
                     target: ResolvedStack, target_template: Mapping[str, Any],
                     planned: Mapping[str, PlannedChange], types: ResourceTypeRegistry,
                     clock: Clock, secrets: tuple[str, ...]
                     ) -> dict[str, list[ChangedResource]]:
    """Heat's ``resource_changes`` of the ``planned`` changes (``forecast``): every
    resource in one category, sorted by name; updated and deleted ones as stored, the
    others as the new stack has them."""
    by_name = {row.name: row for row in rows}
    found = {name: CATEGORY[change.action] for name, change in planned.items()}
    changes: dict[str, list[ChangedResource]] = {category: [] for category in CATEGORIES}
    users: dict[str, set[str]] = {row.name: set() for row in rows}
    for row in rows:
        for dep in row.requires or ():
            users.setdefault(dep, set()).add(row.name)
    new_users = target.dependents()
    template = stack.template if isinstance(stack.template, Mapping) else {}
    parameters = stored_ir.parameters if stored_ir is not None else {
        **pseudo_parameters(stack.id, stack.name, stack.tenant_id),
        **stored_values(template, stack.parameters, stack.environment)}
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
