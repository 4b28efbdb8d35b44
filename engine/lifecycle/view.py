"""Read-only views of a stack, as lifecycle plugins see it.

Everything a plugin receives is frozen: mappings are ``MappingProxyType``, sequences are
tuples, the views are frozen dataclasses. Assigning to any of them raises, so a plugin
cannot change the stack it examines (Heat only asks plugins not to). :func:`thaw` gives a
plain, mutable deep copy for plugins that want to keep or serialise what they saw.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any

from engine.vocabulary import Change, Status


@dataclasses.dataclass(frozen=True)
class Unresolved:
    """A property value that is only known once other resources exist (``get_attr`` of
    a resource not yet created, for instance)."""

    function: str
    args: tuple[Any, ...]

    def __str__(self) -> str:
        return f"<{' '.join(map(str, (self.function, *self.args)))}: known at run time>"


@dataclasses.dataclass(frozen=True)
class ResourceView:
    name: str
    type: str
    properties: Mapping[str, Any]  # resolved where static; Unresolved where not
    metadata: Mapping[str, Any]
    depends_on: tuple[str, ...]  # explicit and implicit, sorted
    #: Heat's ``<ACTION>_<STATUS>`` of the stored resource; "" for one not created yet.
    status: str = ""
    physical_resource_id: str = ""

    @property
    def exists(self) -> bool:
        """True if the resource is really there: it has a physical id or completed an
        action (what a failed create leaves behind, for instance)."""
        return bool(self.physical_resource_id) or self.status.endswith(f"_{Status.COMPLETE}")


@dataclasses.dataclass(frozen=True)
class PropertyChange:
    """One property an operation is planned to change. A side the property has not is
    None (a resource created has no old values); a new value only known once the
    operation runs is an :class:`Unresolved`. Hidden parameter values are masked."""

    old: Any
    new: Any


@dataclasses.dataclass(frozen=True)
class ResourceChange:
    """What the operation is planned to do to one resource, decided as the operation
    itself decides it (``engine.resources.update_forecast``)."""

    action: Change
    #: The properties that differ, by name: every known one of a resource created or
    #: deleted; none when ``action`` is NONE.
    properties: Mapping[str, PropertyChange]
    #: Kiln's addition: True for a DELETE whose deletion policy (Retain) keeps the
    #: physical resource: it leaves the stack, and nothing is destroyed.
    retained: bool = False


@dataclasses.dataclass(frozen=True)
class ResourceOutcome:
    """Kiln's addition: what an operation left one resource as, for the post-ops, read
    from its stored row as they are called (Heat's resource action and status)."""

    action: str  # the resource's last action: CREATE, UPDATE, DELETE, INIT, ...
    status: str  # COMPLETE, FAILED, IN_PROGRESS
    status_reason: str  # hidden values masked


@dataclasses.dataclass(frozen=True)
class StackView:
    id: str
    name: str
    tenant_id: str
    action: str  # the operation being checked: CREATE, UPDATE, DELETE, ...
    status: str  # Heat's stack_status, e.g. CREATE_IN_PROGRESS, CREATE_FAILED
    status_reason: str
    template: Mapping[str, Any]
    parameters: Mapping[str, Any]  # hidden values masked
    environment: Mapping[str, Any]
    resources: Mapping[str, ResourceView]
    tags: tuple[str, ...] = ()
    timeout_mins: int | None = None
    disable_rollback: bool = True
    #: True in preview and validate: decide, report, reserve nothing.
    dry_run: bool = False
    #: The planned change of each resource, by name (``ResourceChange``): filled in for the
    #: pre-ops of a create, an update, a delete, a rollback, an adopt and an abandon, real
    #: and dry-run, and for their post-ops (the actions only: ``properties`` empty).
    changes: Mapping[str, ResourceChange] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({}))
    #: Kiln's addition: True when ``changes`` is the operation's plan (empty for a plan
    #: that changes no resource); False when it was not made (other actions) or could not
    #: be made, so a policy on changes can fail closed rather than read "nothing changes"
    #: into a missing plan.
    changes_known: bool = False
    #: Kiln's addition, for the post-ops: what became of each resource, by name
    #: (``ResourceOutcome``), every stored one and each planned DELETE whose row is gone
    #: (DELETE COMPLETE); empty for the pre-ops.
    outcomes: Mapping[str, ResourceOutcome] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({}))
    # Where the stack sits in its tree of nested stacks, under Heat's names, so a Heat
    # plugin that tells a child from a top-level stack works unchanged.
    #: The parent stack's id; None for a top-level stack.
    owner_id: str | None = None
    #: The root stack's id; the stack's own id for a top-level stack ("" fills it in).
    root_stack_id: str = ""
    #: 0 for a top-level stack, 1 for its children, ...
    nested_depth: int = 0
    #: Heat's ``path_in_stack()``: from the root down to this stack, each stack as (the
    #: resource of its parent that made it, its name); the root's resource is None.
    #: () fills in ``((None, name),)``, a top-level stack's.
    path: tuple[tuple[str | None, str], ...] = ()

    def __post_init__(self) -> None:
        if not self.root_stack_id:
            object.__setattr__(self, "root_stack_id", self.id)
        if not self.path:
            object.__setattr__(self, "path", ((None, self.name),))

    @property
    def stack_name(self) -> str:
        return self.name

    @property
    def parent_resource_name(self) -> str | None:
        """The resource of the parent stack that made this one (Heat's name); None for
        a top-level stack."""
        return self.path[-1][0]

    def path_in_stack(self) -> list[tuple[str | None, str]]:
        """Heat's method of the same name: :attr:`path` as a list."""
        return list(self.path)

    def count_of(self, type_name: str) -> int:
        return sum(1 for resource in self.resources.values() if resource.type == type_name)


def freeze(value: Any) -> Any:
    """A deep, immutable copy of plain data (dicts, lists, scalars)."""
    if isinstance(value, Mapping):
        return types.MappingProxyType({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    return value


def thaw(value: Any) -> Any:
    """A deep, mutable copy of frozen data: dicts and lists again."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [thaw(item) for item in value]
    if isinstance(value, Unresolved):
        return str(value)
    if isinstance(value, ResourceChange):
        return {"action": str(value.action), "properties": thaw(value.properties)}
    if isinstance(value, ResourceOutcome):
        return dataclasses.asdict(value)
    if isinstance(value, PropertyChange):
        return {"old": thaw(value.old), "new": thaw(value.new)}
    return value
