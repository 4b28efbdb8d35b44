"""Functions that read something outside the value: parameters, resources, the parent
resource of a nested stack."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from engine.template.functions.core import (
    MISSING,
    Function,
    Reference,
    Scope,
    index_into,
    iter_references,
    resolve,
)


@dataclasses.dataclass(frozen=True)
class GetParam(Function):
    fn_name = "get_param"
    name: str
    path: tuple[Any, ...]

    def resolve(self, scope: Scope) -> Any:
        value = scope.param(self.name)
        found = index_into(value, [resolve(p, scope) for p in self.path], int_keys=True)
        return "" if found is MISSING else found

    def references(self) -> Iterator[Reference]:
        yield Reference("param", self.name, None, self.location)
        yield from iter_references(self.path)


@dataclasses.dataclass(frozen=True)
class GetResource(Function):
    fn_name = "get_resource"
    name: str

    def resolve(self, scope: Scope) -> Any:
        return scope.reference_id(self.name)

    def references(self) -> Iterator[Reference]:
        yield Reference("resource", self.name, None, self.location)


@dataclasses.dataclass(frozen=True)
class GetAttr(Function):
    """``get_attr: [resource, attribute, path…]``; with ``attribute`` None (the
    one-argument form of 2015-10-15 on) every attribute of the resource as a map."""

    fn_name = "get_attr"
    resource: str
    attribute: str | None
    path: tuple[Any, ...]

    def resolve(self, scope: Scope) -> Any:
        if self.attribute is None:
            return scope.attributes(self.resource)
        value = scope.attribute(self.resource, self.attribute)
        found = index_into(value, [resolve(p, scope) for p in self.path], int_keys=False)
        return None if found is MISSING else found

    def references(self) -> Iterator[Reference]:
        yield Reference("resource", self.resource, self.attribute, self.location)
        yield from iter_references(self.path)


@dataclasses.dataclass(frozen=True)
class ResourceFacade(Function):
    """``resource_facade: metadata|deletion_policy|update_policy`` of the resource that
    owns this nested stack."""

    fn_name = "resource_facade"
    key: str

    def resolve(self, scope: Scope) -> Any:
        facade = getattr(scope, "facade", None)
        if facade is None:
            raise self.fail(f'"{self.fn_name}" is only valid in a nested stack')
        return facade(self.key)
