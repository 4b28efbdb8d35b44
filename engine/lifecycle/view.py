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

from engine.vocabulary import Status


@dataclasses.dataclass(frozen=True)
class Unresolved:
    """A property value that is only known once other resources exist (``get_attr`` of
    a resource not yet created, for instance)."""

    function: str
    args: tuple[Any, ...]

    def __str__(self) -> str:
        return f"<{self.function} {' '.join(map(str, self.args))}: known at run time>"


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

    @property
    def stack_name(self) -> str:
        return self.name

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
    return value
