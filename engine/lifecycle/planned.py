"""The planned changes of an operation as lifecycle plugins see them
(``StackView.changes``): frozen, hidden values masked.

The forecast itself (``engine.resources.update_forecast``) is made by the worker and the
dry runs, which know the resource types; this turns it into the view's values.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any, Protocol

from engine.ir.update_decision import UNKNOWN
from engine.lifecycle.runner import Call
from engine.lifecycle.view import PropertyChange, ResourceChange, Unresolved, freeze
from engine.template.parameters import redact
from engine.vocabulary import Change

# What a plugin sees for a value known only once the operation runs (it comes from a
# resource the operation creates, replaces or changes).
NOT_KNOWN = Unresolved("unknown", ())
NO_CHANGES: Mapping[str, ResourceChange] = types.MappingProxyType({})


class PlannedFacts(Protocol):
    """One resource's planned change (an ``update_forecast.PlannedChange``)."""

    @property
    def action(self) -> Change: ...
    @property
    def differences(self) -> Mapping[str, tuple[Any, Any]]: ...
    @property
    def retained(self) -> bool: ...


def view_changes(planned: Mapping[str, PlannedFacts], secrets: tuple[str, ...]
                 ) -> Mapping[str, ResourceChange]:
    """``planned`` as the view's ``changes``, by name, with every hidden value masked."""
    return types.MappingProxyType({
        name: ResourceChange(action=change.action, properties=types.MappingProxyType({
            key: PropertyChange(old=_shown(old, secrets), new=_shown(new, secrets))
            for key, (old, new) in sorted(change.differences.items())}),
            retained=change.retained)
        for name, change in sorted(planned.items())})


def _shown(value: Any, secrets: tuple[str, ...]) -> Any:
    return freeze(redact(_known(value), secrets))


def _known(value: Any) -> Any:
    """``value`` with :data:`NOT_KNOWN` for any part of it not known yet."""
    if value is UNKNOWN:
        return NOT_KNOWN
    if isinstance(value, Mapping):
        return {key: _known(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_known(item) for item in value]
    return value


def with_changes(call: Call, changes: Mapping[str, ResourceChange] | None) -> Call:
    """``call`` whose views (both sides of an update) carry ``changes``, the plan; None
    when there is none (the views say ``changes_known`` false)."""
    if changes is None:
        return call
    current = (None if call.current_stack is None
               else dataclasses.replace(call.current_stack, changes=changes,
                                        changes_known=True))
    return dataclasses.replace(
        call, stack=dataclasses.replace(call.stack, changes=changes, changes_known=True),
        current_stack=current)
