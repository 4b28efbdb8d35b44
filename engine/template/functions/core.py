"""The expression tree every template value is parsed into, and its evaluation.

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
from typing import Any, ClassVar, Protocol

from engine.errors import InvalidTemplateReference, Location, StackValidationFailed


class Deferred(Exception):
    """A value depends on something not known yet (control flow, not an error)."""


class Scope(Protocol):
    def param(self, name: str) -> Any: ...

    def reference_id(self, resource: str) -> Any: ...

    def attribute(self, resource: str, attribute: str, path: Sequence[Any] = ()) -> Any:
        """Attribute ``attribute`` of ``resource``, then ``path`` into it, None where
        that leads nowhere. The resource reads the path (Heat's ``FnGetAtt(key,
        *path)``), so a group can answer ``resource.0`` then the member's attribute."""
        ...

    def attributes(self, resource: str) -> Any:
        """Every attribute of ``resource`` as a map (``get_attr: [name]``)."""
        ...


@dataclasses.dataclass(frozen=True)
class Reference:
    """Something a function names: a parameter, a resource (with an attribute), or a
    condition."""

    kind: str  # "param" | "resource" | "condition"
    name: str
    attribute: str | None
    location: Location


@dataclasses.dataclass(frozen=True)
class Function:
    """A call in a template. ``fn_name`` is the name as written, for messages and views."""

    fn_name: ClassVar[str] = ""
    location: Location

    def resolve(self, scope: Scope) -> Any:
        raise NotImplementedError

    def references(self) -> Iterator[Reference]:
        for field in dataclasses.fields(self)[1:]:
            yield from iter_references(getattr(self, field.name))

    def fail(self, reason: str) -> StackValidationFailed:
        return StackValidationFailed(self.location, reason=reason)

    def args(self) -> tuple[Any, ...]:
        """The arguments as stored, for views that show an unresolved call."""
        return tuple(getattr(self, f.name) for f in dataclasses.fields(self)[1:])


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


def iter_functions(value: Any) -> Iterator[Function]:
    """Every call in ``value``, outermost first."""
    if isinstance(value, Function):
        yield value
        for arg in value.args():
            yield from iter_functions(arg)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from iter_functions(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from iter_functions(item)


def resource_dependencies(value: Any) -> frozenset[str]:
    return frozenset(r.name for r in iter_references(value) if r.kind == "resource")


def invalid_reference(ref: Reference, referenced_from: str) -> InvalidTemplateReference:
    return InvalidTemplateReference(ref.location, name=ref.name, referenced_from=referenced_from)


def as_text(value: Any) -> str:
    """How a value reads when a function puts it into a string: Heat's rule, where maps
    and lists are JSON with sorted keys and a boolean is Python's ``True``/``False``."""
    if value is None:
        return ""
    if isinstance(value, (Mapping, list, tuple)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def index_into(value: Any, path: Sequence[Any], *, int_keys: bool) -> Any:
    """``value[path[0]][path[1]]…``, or :data:`MISSING` where a step does not exist.

    Heat answers a path that leads nowhere with a blank rather than an error (``''`` for
    get_param, None for get_attr), and only get_param turns ``"1"`` into a list index
    (``int_keys``); a string counts as a sequence of characters, as in Heat."""
    for key in path:
        try:
            if isinstance(value, Mapping):
                value = value[key]
            elif isinstance(value, (list, tuple, str)):
                value = value[int(key) if int_keys and isinstance(key, str) else key]
            else:
                return MISSING
        except (KeyError, IndexError, ValueError, TypeError):
            return MISSING
    return value


MISSING = object()


def is_sequence(value: Any) -> bool:
    return isinstance(value, (list, tuple))
