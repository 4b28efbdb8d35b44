"""Condition functions and ``if``.

Conditions depend on parameters only, so they are decided when the IR is built:
``select_branches`` replaces every ``if`` by the branch its condition chose, which is also
why a reference in the branch not taken is no dependency (as in Heat, where ``if`` is a
macro). An ``if`` whose condition cannot be decided yet (template validate without
parameter values) stays in the tree and evaluates as :class:`Deferred`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from engine.template.functions.core import (
    Deferred,
    Function,
    Reference,
    Scope,
    is_sequence,
    iter_references,
    resolve,
)

# What an ``if`` without a false branch (2021-04-16 on) gives when its condition is false:
# the map entry or list item holding it is left out.
ELIDED = type("Elided", (), {"__repr__": lambda self: "<elided>"})()


class ConditionScope(Scope, Protocol):
    """A scope that can also decide named conditions."""

    def condition(self, name: str) -> bool: ...


@dataclasses.dataclass(frozen=True)
class ConditionRef(Function):
    """The name of a condition where a boolean is expected."""

    fn_name = "condition"
    name: str

    def resolve(self, scope: Scope) -> Any:
        decide = getattr(scope, "condition", None)
        if decide is None:
            raise Deferred(self.name)
        return decide(self.name)

    def references(self) -> Iterator[Reference]:
        yield Reference("condition", self.name, None, self.location)


def _boolean(function: Function, value: Any) -> bool:
    if not isinstance(value, bool):
        raise function.fail(f'The condition value should be boolean, got {value!r} '
                            f'in "{function.fn_name}"')
    return value


@dataclasses.dataclass(frozen=True)
class Equals(Function):
    fn_name = "equals"
    left: Any
    right: Any

    def resolve(self, scope: Scope) -> Any:
        return resolve(self.left, scope) == resolve(self.right, scope)


@dataclasses.dataclass(frozen=True)
class Not(Function):
    fn_name = "not"
    condition: Any

    def resolve(self, scope: Scope) -> Any:
        return not _boolean(self, resolve(self.condition, scope))


@dataclasses.dataclass(frozen=True)
class And(Function):
    fn_name = "and"
    conditions: tuple[Any, ...]

    def resolve(self, scope: Scope) -> Any:
        return all(_boolean(self, resolve(c, scope)) for c in self.conditions)


@dataclasses.dataclass(frozen=True)
class Or(Function):
    fn_name = "or"
    conditions: tuple[Any, ...]

    def resolve(self, scope: Scope) -> Any:
        return any(_boolean(self, resolve(c, scope)) for c in self.conditions)


@dataclasses.dataclass(frozen=True)
class If(Function):
    """``if: [condition, value_if_true, value_if_false]``; ``value_if_false`` may be
    ELIDED (two arguments, 2021-04-16 on)."""

    fn_name = "if"
    condition: Any
    when_true: Any
    when_false: Any

    def resolve(self, scope: Scope) -> Any:
        raise Deferred("if")  # decided by select_branches, or not decidable yet

    def references(self) -> Iterator[Reference]:
        # The condition's own references (its name) are checked; the branches' are only
        # the taken one's, after select_branches, so both are reported until then.
        yield from iter_references(self.condition)
        yield from iter_references(self.when_true)
        yield from iter_references(self.when_false)


Decide = Callable[[Any], bool | None]


def select_branches(value: Any, decide: Decide) -> Any:
    """``value`` with every decidable ``if`` replaced by its chosen branch, and ELIDED
    items dropped from their map or list. ``decide`` gives None when it cannot tell.

    ``value`` itself may come back ELIDED: the caller decides what a value left out
    means where it stands (a property not given, an output null: :func:`or_null`). A
    function's argument that is left out is null, as Heat resolves an argument it reads
    on its own (``list_join``'s delimiter, ``str_replace``'s template); one inside a
    list or map argument is dropped like any other item."""
    if isinstance(value, If):
        chosen = decide(value.condition)
        if chosen is None:
            return If(value.location, value.condition,
                      select_branches(value.when_true, decide),
                      select_branches(value.when_false, decide))
        return select_branches(value.when_true if chosen else value.when_false, decide)
    if isinstance(value, Function):
        fields = {f.name: or_null(select_branches(getattr(value, f.name), decide))
                  for f in dataclasses.fields(value)[1:]}
        return dataclasses.replace(value, **fields)
    if isinstance(value, Mapping):
        items = {k: select_branches(v, decide) for k, v in value.items()}
        return {k: v for k, v in items.items() if v is not ELIDED}
    if is_sequence(value):
        selected = [select_branches(v, decide) for v in value]
        kept = [v for v in selected if v is not ELIDED]
        return tuple(kept) if isinstance(value, tuple) else kept
    return value


def or_null(value: Any) -> Any:
    """``value``, or None where an ``if`` left it out: what Heat gives for a value that
    stands alone (an output, a function's argument, an ``external_id``)."""
    return None if value is ELIDED else value
