"""Read-side helpers of the worker: the IR of a stored stack and a scope over stored
resources, so properties and outputs evaluate against what really exists."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.db.models import Resource as ResourceRow
from engine.ir.build import build_from_document, pseudo_parameters
from engine.ir.model import ResolvedStack
from engine.lifecycle.snapshot import StackFacts
from engine.resources.base import Resource
from engine.resources.registry import ResourceTypeRegistry
from engine.template.parameters import stored_hidden_values
from engine.template.parse import document

RuntimeFactory = Callable[[str], Any]


def stack_ir(stack: StackFacts, registry: ResourceTypeRegistry) -> ResolvedStack:
    # Lines only matter for errors the tenant can fix; those were reported at create.
    doc = document(stack.template)
    return build_from_document(doc, stack.parameters,
                               pseudo_parameters(stack.id, stack.name, stack.tenant_id),
                               registry.get, files=stack.files,
                               constraints=registry.constraint, facade=stack.facade,
                               environment=stack.environment)


class OperationIrs:
    """The IR of each operation's stack, built once and shared by the threads that plan,
    run and finish the operation: from planning to the end the stack's definition is
    fixed (one operation per stack at a time). Bounded: forgotten wholesale when full."""

    def __init__(self, registry: ResourceTypeRegistry, size: int = 128) -> None:
        self._registry = registry
        self._size = size
        self._irs: dict[str, ResolvedStack] = {}

    def of(self, operation_id: str, stack: StackFacts) -> ResolvedStack:
        ir = self._irs.get(operation_id)
        if ir is None:
            ir = stack_ir(stack, self._registry)
            self.planned(operation_id, ir)
        return ir

    def planned(self, operation_id: str, ir: ResolvedStack) -> None:
        if len(self._irs) >= self._size:
            self._irs.clear()
        self._irs[operation_id] = ir


def stack_secrets(stack: StackFacts) -> tuple[str, ...]:
    """Hidden parameter values of the stored stack (see ``stored_hidden_values``)."""
    return stored_hidden_values(stack.template, stack.parameters)


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


class StoredScope:
    """Answers get_param, get_resource and get_attr from the IR and stored resources."""

    def __init__(self, ir: ResolvedStack, resources: Mapping[str, StoredResource],
                 registry: ResourceTypeRegistry, runtime_for: RuntimeFactory) -> None:
        self._ir = ir
        self._resources = resources
        self._registry = registry
        self._runtime_for = runtime_for

    def param(self, name: str) -> Any:
        return self._ir.parameters[name]

    def reference_id(self, resource: str) -> Any:
        instance = self._instance(resource)
        return instance.get_reference_id() if instance else None

    def attribute(self, resource: str, attribute: str, path: Sequence[Any] = ()) -> Any:
        instance = self._instance(resource)
        return instance.get_attribute_path(attribute, path) if instance else None

    def attributes(self, resource: str) -> Any:
        instance = self._instance(resource)
        return instance.all_attributes() if instance else None

    def _instance(self, name: str) -> Resource | None:
        stored = self._resources.get(name)
        if stored is None or stored.properties is None:
            return None  # never created: Heat resolves such references to null
        cls = self._registry.get(stored.type)
        return cls(name, stored.properties, self._runtime_for(name),
                   physical_id=stored.physical_id, data=dict(stored.data))
