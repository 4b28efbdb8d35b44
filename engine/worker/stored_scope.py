"""A scope over a stack's stored resources, so properties and outputs evaluate against
what really exists, and the hidden values of the stored stack.

The IR such a scope evaluates is the stored stack's (``engine.ir.stored``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from engine.db.models import Resource as ResourceRow
from engine.ir.model import ResolvedStack
from engine.lifecycle.snapshot import Redefined, StackFacts
from engine.resources.base import Resource
from engine.resources.registry import ResourceTypeRegistry
from engine.resources.scope import InstanceScope
from engine.template.stored_parameters import stored_hidden_values

RuntimeFactory = Callable[[str], Any]


def stack_secrets(stack: StackFacts) -> tuple[str, ...]:
    """Hidden parameter values of the stored stack (see ``stored_hidden_values``)."""
    return stored_hidden_values(stack.template, stack.parameters, stack.environment)


def operation_secrets(stack: StackFacts, payload: Mapping[str, Any] | None
                      ) -> tuple[str, ...]:
    """Hidden values an operation on ``stack`` may handle: the stored definition's and,
    for an update or its rollback, those of the definitions it goes from and to; longest
    first, so a value containing another is masked whole."""
    found = set(stack_secrets(stack))
    for side in ("previous", "target"):
        if payload and side in payload:
            found.update(stack_secrets(Redefined.of(stack, payload[side])))
    return tuple(sorted(found, key=len, reverse=True))


@dataclasses.dataclass(frozen=True)
class StoredResource:
    """A snapshot of a resource row, safe to keep after its transaction ends."""

    id: int
    name: str
    type: str
    physical_id: str | None
    properties: Mapping[str, Any] | None
    data: Mapping[str, Any]

    @classmethod
    def of(cls, row: ResourceRow) -> StoredResource:
        return cls(row.id, row.name, row.type, row.physical_id, row.properties,
                   dict(row.data or {}))


class StoredScope(InstanceScope):
    """Answers get_param, get_resource and get_attr from the IR and stored resources."""

    def __init__(self, ir: ResolvedStack, resources: Mapping[str, StoredResource],
                 registry: ResourceTypeRegistry, runtime_for: RuntimeFactory) -> None:
        self._ir = ir
        self._resources = resources
        self._registry = registry
        self._runtime_for = runtime_for

    def param(self, name: str) -> Any:
        return self._ir.parameters[name]

    def _instance(self, name: str) -> Resource | None:
        stored = self._resources.get(name)
        if stored is None or stored.properties is None:
            return None  # never created: Heat resolves such references to null
        cls = self._registry.get(stored.type)
        return cls(name, stored.properties, self._runtime_for(name),
                   physical_id=stored.physical_id, data=dict(stored.data))
