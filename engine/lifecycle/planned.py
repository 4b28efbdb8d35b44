"""The planned changes of an operation as lifecycle plugins see them
(``StackView.changes``): frozen, hidden values masked; and what became of each resource
(``StackView.outcomes``), for the post-ops.

The forecast itself (``engine.resources.update_forecast``) is made by the worker and the
dry runs, which know the resource types; this turns it into the view's values. The
worker keeps the plan's actions with the operation (:func:`plan_record`, no property
values, so no secret is stored) for the post-ops (:func:`recalled`).
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any, Protocol

from engine.ir.update_decision import UNKNOWN
from engine.lifecycle.runner import Call
from engine.lifecycle.view import (
    PropertyChange,
    ResourceChange,
    ResourceOutcome,
    StackView,
    Unresolved,
    freeze,
)
from engine.template.parameters import redact
from engine.vocabulary import Action, Change, Status

# What a plugin sees for a value known only once the operation runs (it comes from a
# resource the operation creates, replaces or changes).
NOT_KNOWN = Unresolved("unknown", ())
NO_OUTCOMES: Mapping[str, ResourceOutcome] = types.MappingProxyType({})


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


def plan_record(changes: Mapping[str, ResourceChange]) -> dict[str, dict[str, Any]]:
    """The plan as kept with the operation (``operations.lifecycle["planned"]``): each
    resource's action, and ``retained`` where true; no property values."""
    return {name: {"action": str(change.action), **({"retained": True} if change.retained
                                                     else {})}
            for name, change in changes.items()}


def recalled(record: Mapping[str, Mapping[str, Any]]) -> Mapping[str, ResourceChange]:
    """The changes of a :func:`plan_record`, for the post-ops: actions, no properties."""
    return types.MappingProxyType({
        name: ResourceChange(action=Change(item["action"]),
                             properties=types.MappingProxyType({}),
                             retained=bool(item.get("retained")))
        for name, item in sorted(record.items())})


class OutcomeFacts(Protocol):
    """A stored resource's state (a ``Resource`` row satisfies it)."""

    @property
    def action(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def status_reason(self) -> str | None: ...


def outcomes(stored: Mapping[str, OutcomeFacts], changes: Mapping[str, ResourceChange],
             secrets: tuple[str, ...]) -> Mapping[str, ResourceOutcome]:
    """What became of each resource: every stored one as its row says, and each one
    planned DELETE whose row is gone, which it was (DELETE COMPLETE)."""
    found = {name: ResourceOutcome(action=row.action, status=row.status,
                                   status_reason=redact(row.status_reason or "", secrets))
             for name, row in stored.items()}
    for name, change in changes.items():
        if change.action == Change.DELETE and name not in found:
            found[name] = ResourceOutcome(Action.DELETE, Status.COMPLETE, "")
    return types.MappingProxyType(dict(sorted(found.items())))


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


def with_changes(call: Call, changes: Mapping[str, ResourceChange] | None,
                 outcomes: Mapping[str, ResourceOutcome] = NO_OUTCOMES) -> Call:
    """``call`` whose views (both sides of an update) carry ``changes``, the plan (None
    when there is none: the views say ``changes_known`` false), and ``outcomes``."""
    if changes is None and not outcomes:
        return call

    def carrying(view: StackView) -> StackView:
        if changes is None:
            return dataclasses.replace(view, outcomes=outcomes)
        return dataclasses.replace(view, changes=changes, changes_known=True,
                                   outcomes=outcomes)

    current = None if call.current_stack is None else carrying(call.current_stack)
    return dataclasses.replace(call, stack=carrying(call.stack), current_stack=current)
