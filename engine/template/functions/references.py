"""Functions that read something outside the value: parameters, resources, the parent
resource of a nested stack."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator, Mapping
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
    one-argument form of 2015-10-15 on) every attribute of the resource as a map.

    From 2014-10-16 the resource reads the path itself (``path_to_resource``), as in
    Heat; HOT 2013-05-23 reads the attribute, then indexes into it."""

    fn_name = "get_attr"
    resource: str
    attribute: str | None
    path: tuple[Any, ...]
    path_to_resource: bool = True

    def resolve(self, scope: Scope) -> Any:
        if self.attribute is None:
            return scope.attributes(self.resource)
        path = tuple(resolve(p, scope) for p in self.path)
        if self.path_to_resource:
            return scope.attribute(self.resource, self.attribute, path)
        found = index_into(scope.attribute(self.resource, self.attribute), path,
                           int_keys=False)
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
        # engine.ir.build replaces every one with its value (substitute_facade); one
        # left is in a stack that is not nested.
        raise self.fail(f'"{self.fn_name}" is only valid in a nested stack')


def substitute_facade(value: Any, facade: Mapping[str, Any] | None) -> Any:
    """``value`` with every ``resource_facade`` replaced by what the owning resource
    gives; outside a nested stack (``facade`` None) one is refused where it is written."""
    if isinstance(value, ResourceFacade):
        if facade is None:
            raise value.fail(f'"{value.fn_name}" is only valid in a nested stack')
        return copy.deepcopy(facade.get(value.key, "Delete" if value.key == "deletion_policy"
                                        else {}))
    if isinstance(value, Function):
        fields = {f.name: substitute_facade(getattr(value, f.name), facade)
                  for f in dataclasses.fields(value)[1:]}
        return dataclasses.replace(value, **fields)
    if isinstance(value, Mapping):
        return {k: substitute_facade(v, facade) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [substitute_facade(v, facade) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    return value
