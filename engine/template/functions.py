"""Intrinsic functions as an expression tree, and its evaluation.

A template value is parsed once into plain data whose function calls are replaced by
:class:`Function` nodes. The tree is pure: evaluating it needs a :class:`Scope` that answers
parameters, reference ids and attributes, so the same tree serves validation at the API
(where resources do not exist yet and :class:`Deferred` is raised) and evaluation in the
worker.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from engine.errors import InvalidTemplateReference, Location, StackValidationFailed
from engine.template.parse import Path, SourceDocument
from engine.template.versions import IMPLEMENTED, HotVersion


class Deferred(Exception):
    """A value depends on a resource that does not exist yet (control flow, not an error)."""


class Scope(Protocol):
    def param(self, name: str) -> Any: ...

    def reference_id(self, resource: str) -> Any: ...

    def attribute(self, resource: str, attribute: str) -> Any: ...


@dataclasses.dataclass(frozen=True)
class Reference:
    """Something a function names: a parameter or a resource (with an attribute)."""

    kind: str  # "param" | "resource"
    name: str
    attribute: str | None
    location: Location


@dataclasses.dataclass(frozen=True)
class Function:
    location: Location

    def resolve(self, scope: Scope) -> Any:
        raise NotImplementedError

    def references(self) -> Iterator[Reference]:
        for field in dataclasses.fields(self)[1:]:
            yield from iter_references(getattr(self, field.name))

    def fail(self, reason: str) -> StackValidationFailed:
        return StackValidationFailed(self.location, reason=reason)


@dataclasses.dataclass(frozen=True)
class GetParam(Function):
    name: str
    path: tuple[Any, ...]

    def resolve(self, scope: Scope) -> Any:
        value = scope.param(self.name)
        return _index(value, [resolve(p, scope) for p in self.path], self)

    def references(self) -> Iterator[Reference]:
        yield Reference("param", self.name, None, self.location)
        yield from iter_references(self.path)


@dataclasses.dataclass(frozen=True)
class GetResource(Function):
    name: str

    def resolve(self, scope: Scope) -> Any:
        return scope.reference_id(self.name)

    def references(self) -> Iterator[Reference]:
        yield Reference("resource", self.name, None, self.location)


@dataclasses.dataclass(frozen=True)
class GetAttr(Function):
    resource: str
    attribute: str
    path: tuple[Any, ...]

    def resolve(self, scope: Scope) -> Any:
        value = scope.attribute(self.resource, self.attribute)
        return _index(value, [resolve(p, scope) for p in self.path], self)

    def references(self) -> Iterator[Reference]:
        yield Reference("resource", self.resource, self.attribute, self.location)
        yield from iter_references(self.path)


@dataclasses.dataclass(frozen=True)
class StrReplace(Function):
    template: Any
    params: Any

    def resolve(self, scope: Scope) -> Any:
        text = resolve(self.template, scope)
        params = resolve(self.params, scope)
        if not isinstance(text, str):
            raise self.fail('"str_replace" template must be a string')
        if not isinstance(params, Mapping):
            raise self.fail('"str_replace" params must be a map')
        # NOTE: longest keys first, so that a key that is a prefix of another cannot
        # clobber it; this is the order Heat applies. Like Heat, split on each key and
        # join the pieces with its value, so text inserted by one key is never searched
        # for the next one.
        keys = sorted(params, key=lambda k: (-len(str(k)), str(k)))
        if keys and not str(keys[-1]):
            raise self.fail('"str_replace" param placeholders must not be empty')

        def replace(piece: str, remaining: list[Any]) -> str:
            if not remaining:
                return piece
            key, rest = remaining[0], remaining[1:]
            return _as_text(params[key]).join(replace(p, rest) for p in piece.split(str(key)))

        return replace(text, keys)


@dataclasses.dataclass(frozen=True)
class ListJoin(Function):
    delimiter: Any
    lists: tuple[Any, ...]

    def resolve(self, scope: Scope) -> Any:
        delimiter = resolve(self.delimiter, scope)
        if not isinstance(delimiter, str):
            raise self.fail('"list_join" delimiter must be a string')
        items: list[str] = []
        for value in (resolve(v, scope) for v in self.lists):
            if isinstance(value, str):
                value = [value] if value else []
            if not isinstance(value, Sequence):
                raise self.fail('"list_join" must join lists')
            items.extend(_as_text(item) for item in value)
        return delimiter.join(items)


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (Mapping, list)):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _index(value: Any, path: Sequence[Any], function: Function) -> Any:
    for key in path:
        try:
            if isinstance(value, Mapping):
                value = value[key]
            elif isinstance(value, Sequence) and not isinstance(value, str):
                value = value[int(key)]
            else:
                raise KeyError(key)
        except (KeyError, IndexError, ValueError, TypeError):
            raise function.fail(f'path component "{key}" not found') from None
    return value


# --- parsing -----------------------------------------------------------------------------


def parse_value(doc: SourceDocument, data: Any, path: Path, version: HotVersion) -> Any:
    """Replace every function call in ``data`` by a Function node."""
    if isinstance(data, Mapping):
        if len(data) == 1:
            (key, arg), = data.items()
            if key in version.functions:
                return _parse_call(doc, key, arg, (*path, key), version)
        return {k: parse_value(doc, v, (*path, k), version) for k, v in data.items()}
    if isinstance(data, list):
        return [parse_value(doc, v, (*path, i), version) for i, v in enumerate(data)]
    return data


def _parse_call(doc: SourceDocument, name: str, arg: Any, path: Path,
                version: HotVersion) -> Function:
    loc = doc.location(path)

    def bad(reason: str) -> StackValidationFailed:
        return StackValidationFailed(loc, reason=reason)

    if name not in IMPLEMENTED:
        raise bad(f'The function "{name}" is not supported by Kiln yet.')
    parsed = parse_value(doc, arg, path, version)
    if name == "get_param":
        items = parsed if isinstance(parsed, list) else [parsed]
        if not items or not isinstance(items[0], str):
            raise bad('Arguments to "get_param" must be a parameter name or a list '
                      'starting with one')
        return GetParam(loc, items[0], tuple(items[1:]))
    if name == "get_resource":
        if not isinstance(parsed, str):
            raise bad('Argument to "get_resource" must be a resource name')
        return GetResource(loc, parsed)
    if name == "get_attr":
        if (not isinstance(parsed, list) or len(parsed) < 2
                or not isinstance(parsed[0], str) or not isinstance(parsed[1], str)):
            raise bad('Arguments to "get_attr" must be of the form '
                      '[resource_name, attribute, (path), ...]')
        return GetAttr(loc, parsed[0], parsed[1], tuple(parsed[2:]))
    if name == "str_replace":
        if not isinstance(parsed, Mapping) or set(parsed) != {"template", "params"}:
            raise bad('Arguments to "str_replace" must be a map with the keys '
                      '"template" and "params"')
        return StrReplace(loc, parsed["template"], parsed["params"])
    if name == "list_join":
        if not isinstance(parsed, list) or len(parsed) < 2:
            raise bad('Arguments to "list_join" must be of the form [delimiter, list, ...]')
        return ListJoin(loc, parsed[0], tuple(parsed[1:]))
    raise bad(f'The function "{name}" is not supported by Kiln yet.')  # pragma: no cover


# --- walking -----------------------------------------------------------------------------


def resolve(value: Any, scope: Scope) -> Any:
    if isinstance(value, Function):
        return value.resolve(scope)
    if isinstance(value, Mapping):
        return {k: resolve(v, scope) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [resolve(v, scope) for v in value]
    return value


def iter_references(value: Any) -> Iterator[Reference]:
    if isinstance(value, Function):
        yield from value.references()
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from iter_references(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from iter_references(item)


def resource_dependencies(value: Any) -> frozenset[str]:
    return frozenset(r.name for r in iter_references(value) if r.kind == "resource")


def invalid_reference(ref: Reference, referenced_from: str) -> InvalidTemplateReference:
    return InvalidTemplateReference(ref.location, name=ref.name, referenced_from=referenced_from)
