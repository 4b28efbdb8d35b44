"""The resolved stack (IR): frozen, validated, and carrying each object's template location."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol

from engine.errors import Location
from engine.schema import Attribute, Property
from engine.template.parameters import ParameterSchema


class TypeSchema(Protocol):
    """What the IR needs to know of a resource type, read from the type's *class object*.

    A Resource subclass itself (not an instance) satisfies it: its class attributes are
    the read-only members below, and its ``validate_properties`` classmethod, accessed on
    the class, is the method. The members are read-only properties so that a class
    attribute (``ClassVar``) matches them.
    """

    @property
    def properties_schema(self) -> Mapping[str, Property]: ...

    @property
    def attributes_schema(self) -> Mapping[str, Attribute]: ...

    @property
    def update_policy_schema(self) -> Mapping[str, Property]: ...

    @property
    def allow_unknown_properties(self) -> bool: ...

    @property
    def allow_unknown_attributes(self) -> bool: ...

    def validate_properties(self, properties: Mapping[str, Any]) -> None: ...


@dataclasses.dataclass(frozen=True)
class ResourceNode:
    name: str
    type_name: str
    properties: Any  # plain data with Function nodes, evaluated in the worker
    requires: frozenset[str]  # explicit depends_on plus implicit references
    metadata: Any
    description: str
    location: Location
    deletion_policy: str = "Delete"  # Delete | Retain | Snapshot
    # The physical id of an existing thing the resource takes over instead of creating
    # (HOT's external_id); never deleted with the stack.
    external_id: str | None = None
    # The update policy, typed against the type's ``update_policy_schema`` (defaults
    # filled); empty when the resource has none or its values are not known yet.
    update_policy: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class OutputNode:
    name: str
    value: Any
    description: str
    location: Location


@dataclasses.dataclass(frozen=True)
class ResolvedStack:
    description: str
    parameter_schemas: Mapping[str, ParameterSchema]
    parameters: Mapping[str, Any]  # typed values, pseudo parameters included
    resources: Mapping[str, ResourceNode]
    outputs: Mapping[str, OutputNode]

    def dependents(self) -> dict[str, frozenset[str]]:
        """For each resource, the resources that require it (Heat's ``required_by``)."""
        result: dict[str, set[str]] = {name: set() for name in self.resources}
        for node in self.resources.values():
            for required in node.requires:
                result[required].add(node.name)
        return {name: frozenset(users) for name, users in result.items()}
