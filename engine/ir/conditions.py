"""Deciding a template's conditions from its parameter values.

A condition may name another condition, so names are decided on demand and remembered;
a name met again while it is being decided is a cycle and an error. A condition that needs
a parameter with no value yet (template validate without values) is undecided (None):
resources under it are kept and ``if`` stays unevaluated, so nothing is refused for a
value the tenant has not given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.errors import KilnError, Location, StackValidationFailed
from engine.ir.graph import find_cycle, topological_order
from engine.template.functions import Deferred, Function, Scope, iter_references, resolve


class ConditionDecider:
    def __init__(self, definitions: Mapping[str, Any], scope: Scope,
                 where: Mapping[str, Location]) -> None:
        self._definitions = definitions
        self._base = scope
        self._where = where
        self._decided: dict[str, bool | None] = {}
        self._deciding: list[str] = []

    def __call__(self, condition: Any, name: str | None = None) -> bool | None:
        """True/False for a parsed condition, or None when it cannot be decided yet.
        ``name`` is the condition's, when it is a definition of the conditions section."""
        if isinstance(condition, bool):
            return condition
        try:
            value = resolve(condition, _Scope(self))
        except Deferred:
            return None
        if not isinstance(value, bool):
            where = condition.location if isinstance(condition, Function) else None
            if name is not None:
                where = self._where.get(name, where)
                raise StackValidationFailed(where, reason=f'The definition of condition '
                                                          f'"{name}" is invalid: {value}')
            raise StackValidationFailed(where, reason=f'Invalid condition "{value}"')
        return value

    def param(self, name: str) -> Any:
        return self._base.param(name)

    def named(self, name: str) -> bool:
        """Raise Deferred when undecidable, so that the caller's resolve stops too."""
        if name not in self._decided:
            if name in self._deciding:
                cycle = " -> ".join([*self._deciding[self._deciding.index(name):], name])
                raise StackValidationFailed(self._where.get(name),
                                            reason=f'Circular definition for condition '
                                                   f'"{name}": {cycle}')
            self._deciding.append(name)
            try:
                self._decided[name] = self(self._definitions[name], name)
            finally:
                self._deciding.pop()
        decided = self._decided[name]
        if decided is None:
            raise Deferred(name)
        return decided

    def decide_all(self) -> dict[str, bool | None]:
        """Every named condition, so that a broken one is reported even when unused (the
        first in template order). Decided in dependency order, each after the conditions
        it names, so that deciding one never has to decide another first: a chain of
        conditions naming conditions is as long as a template likes, and deciding it
        must not recurse that deep."""
        requires = {name: {ref.name for ref in iter_references(definition)
                           if ref.kind == "condition" and ref.name in self._definitions}
                    for name, definition in self._definitions.items()}
        cycle = find_cycle(requires)
        if cycle:
            raise StackValidationFailed(self._where.get(cycle[0]), reason=(
                f'Circular definition for condition "{cycle[0]}": {" -> ".join(cycle)}'))
        errors: dict[str, KilnError] = {}
        for name in topological_order(requires):
            try:
                self.named(name)
            except Deferred:
                pass
            except KilnError as exc:
                errors[name] = exc
        for name in self._definitions:
            if name in errors:
                raise errors[name]
        return dict(self._decided)


class _Scope:
    """The decider's view: parameters from the base scope, conditions by name."""

    def __init__(self, decider: ConditionDecider) -> None:
        self._decider = decider

    def param(self, name: str) -> Any:
        return self._decider.param(name)

    def reference_id(self, resource: str) -> Any:
        raise Deferred(resource)  # conditions cannot name resources (refused at parse)

    def attribute(self, resource: str, attribute: str, path: Sequence[Any] = ()) -> Any:
        raise Deferred(resource)

    def attributes(self, resource: str) -> Any:
        raise Deferred(resource)

    def condition(self, name: str) -> bool:
        return self._decider.named(name)
