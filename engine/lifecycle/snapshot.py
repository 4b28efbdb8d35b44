"""Build the frozen :class:`~engine.lifecycle.view.StackView` plugins receive.

Pure: the caller hands in the stack's stored facts, its IR when it can be built, and the
stored resources; nothing here touches the database. Hidden parameter values are masked
wherever they appear (parameters, the template's defaults, by name, and any property or
metadata they were substituted into), before a plugin ever sees them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from engine.errors import KilnError
from engine.ir.build import StaticScope
from engine.ir.model import ResolvedStack
from engine.ir.stored import StoredStack, redefinition
from engine.lifecycle.view import ResourceView, StackView, Unresolved, freeze
from engine.template.functions import Deferred, Function, GetAttr, GetResource
from engine.template.parameters import MASK, redact
from engine.template.stored_parameters import (
    hidden_names,
    masked_environment,
    masked_template,
)
from engine.vocabulary import Action


class StackFacts(StoredStack, Protocol):
    """The stored stack: what its IR is built from, and its state (a ``Stack`` row
    satisfies it)."""

    @property
    def action(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def status_reason(self) -> str: ...
    @property
    def tags(self) -> Any: ...
    @property
    def timeout_mins(self) -> int | None: ...
    @property
    def disable_rollback(self) -> bool: ...


class ResourceFacts(Protocol):
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
    def physical_id(self) -> str | None: ...
    @property
    def properties(self) -> Any: ...
    @property
    def requires(self) -> Any: ...


class TreeMemberFacts(Protocol):
    """A stack of a tree of nested stacks (a ``Stack`` row, or a
    ``stack_trees.TreeMember``)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def parent_resource(self) -> str | None: ...


@dataclasses.dataclass(frozen=True)
class Redefined:
    """A stack with another template, parameters and environment: the two sides of an
    update (the stored definition and the new one) for the plugins' views."""

    id: str
    name: str
    tenant_id: str
    action: str
    status: str
    status_reason: str
    template: Any
    parameters: Any
    environment: Any
    files: Any
    tags: Any
    timeout_mins: int | None
    disable_rollback: bool
    facade: Any = None

    @classmethod
    def of(cls, stack: StackFacts, definition: Mapping[str, Any]) -> Redefined:
        """``stack`` with ``definition`` (an update payload's ``target`` or
        ``previous``), taken as the worker's plan takes it."""
        template, parameters, environment, files = redefinition(definition, stack.files)
        return cls(id=stack.id, name=stack.name, tenant_id=stack.tenant_id,
                   action=stack.action, status=stack.status,
                   status_reason=stack.status_reason, template=template,
                   parameters=parameters, environment=environment, files=files,
                   tags=stack.tags, facade=stack.facade,
                   timeout_mins=stack.timeout_mins, disable_rollback=stack.disable_rollback)


def stack_view(stack: StackFacts, *, action: str, ir: ResolvedStack | None,
               stored: Mapping[str, ResourceFacts], secrets: tuple[str, ...],
               dry_run: bool = False, target: bool = False,
               lineage: Sequence[TreeMemberFacts] = ()) -> StackView:
    """The stack as a plugin sees it: resources of the IR (the stack as it is to be) and
    of the stored rows (as it is), the stored state winning where both know one.

    With ``target`` (the new side of an update) the IR decides: only its resources, with
    its properties; stored rows add only their status and physical id.

    ``lineage`` is the stacks from the root of the stack's tree down to the stack
    (``stack_trees.lineage``); () for a stack that is not stored, which is not nested."""
    template = stack.template if isinstance(stack.template, Mapping) else {}
    hidden = hidden_names(template)
    parameters = {name: MASK if name in hidden else redact(value, secrets)
                  for name, value in dict(stack.parameters or {}).items()}
    resources: dict[str, ResourceView] = {}
    if ir is not None:
        scope = StaticScope(ir.parameters)
        for name, node in ir.resources.items():
            resources[name] = ResourceView(
                name=name, type=node.type_name,
                properties=freeze(redact(_static(node.properties or {}, scope), secrets)),
                metadata=freeze(redact(_static(node.metadata or {}, scope), secrets)),
                depends_on=tuple(sorted(node.requires)))
    raw_resources = template.get("resources") or {}
    for name, row in stored.items():
        known = resources.get(name)
        if target:
            if known is not None and row.action != Action.INIT:
                resources[name] = dataclasses.replace(
                    known, status=f"{row.action}_{row.status}",
                    physical_resource_id=row.physical_id or "")
            continue
        properties = (freeze(redact(row.properties, secrets)) if row.properties is not None
                      else known.properties if known else freeze({}))
        metadata = known.metadata if known else freeze(
            redact((raw_resources.get(name) or {}).get("metadata") or {}, secrets))
        created = row.action != Action.INIT
        resources[name] = ResourceView(
            name=name, type=row.type, properties=properties, metadata=metadata,
            depends_on=tuple(sorted(row.requires or ())),
            status=f"{row.action}_{row.status}" if created else "",
            physical_resource_id=row.physical_id or "")
    return StackView(
        id=stack.id, name=stack.name, tenant_id=stack.tenant_id, action=action,
        status=f"{stack.action}_{stack.status}", status_reason=redact(
            stack.status_reason or "", secrets),
        template=freeze(redact(masked_template(template), secrets)),
        parameters=freeze(parameters),
        environment=freeze(redact(masked_environment(template, stack.environment or {}),
                                  secrets)),
        resources=freeze(resources), tags=tuple(stack.tags or ()),
        timeout_mins=stack.timeout_mins, disable_rollback=bool(stack.disable_rollback),
        dry_run=dry_run, **_tree_position(lineage))


def _tree_position(lineage: Sequence[TreeMemberFacts]) -> dict[str, Any]:
    """The view's fields that place it in its tree; none (a top-level stack's defaults)
    without a lineage."""
    if not lineage:
        return {}
    return {"owner_id": lineage[-2].id if len(lineage) > 1 else None,
            "root_stack_id": lineage[0].id, "nested_depth": len(lineage) - 1,
            "path": tuple((member.parent_resource if index else None, member.name)
                          for index, member in enumerate(lineage))}


def _static(value: Any, scope: StaticScope) -> Any:
    """Resolve what can be resolved now; leave an :class:`Unresolved` marker elsewhere."""
    if isinstance(value, Function):
        try:
            return value.resolve(scope)
        except Deferred:
            return Unresolved(_function_name(value), _function_args(value))
        except KilnError:
            # A value that cannot be evaluated (a str_split index out of range) fails its
            # resource's step with the reason; the view must not fail the operation (and
            # every later one, the delete included) on it.
            return Unresolved(_function_name(value), _function_args(value))
    if isinstance(value, Mapping):
        return {key: _static(item, scope) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_static(item, scope) for item in value]
    return value


def _function_name(function: Function) -> str:
    return function.fn_name


def _function_args(function: Function) -> tuple[Any, ...]:
    if isinstance(function, GetAttr):
        return tuple(a for a in (function.resource, function.attribute, *function.path)
                     if a is not None)
    if isinstance(function, GetResource):
        return (function.name,)
    return ()
