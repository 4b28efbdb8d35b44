"""Judging a stack against rules: a pure function, no Kiln, no state.

``evaluate(rules, stack, action, now)`` returns one :class:`Finding` per rule that applies
to ``action`` at ``now`` and fails; ``render`` turns findings into the short text a tenant
reads as the stack's status reason. Messages name rules, resources, types, property names,
tag patterns, planned changes and time windows, never a property value, so nothing hidden
can leak through them. The policy and the approval plugins both judge with it.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any, Generic, TypeVar

from engine.lifecycle.base import ROOT_STACK
from engine.lifecycle.view import ResourceView, StackView, Unresolved
from engine.vocabulary import Change
from plugins.lifecycle.policy.matching import Selector, selects
from plugins.lifecycle.policy.rules import (
    AllowedTypes,
    AnyOperation,
    Condition,
    DeniedTypes,
    MaxChanges,
    MaxCount,
    MaxResources,
    Protect,
    RequiredProperties,
    RequiredTags,
)
from plugins.lifecycle.policy.windows import open_window

#: Resources (or tags) named per failed rule before "and N more".
MAX_ITEMS = 5
#: Failed rules listed in one message before "and N more".
MAX_FINDINGS = 5

R = TypeVar("R", bound=Condition)


@dataclasses.dataclass(frozen=True)
class Finding(Generic[R]):
    """One failed rule: what is wrong, the resources (or tags) concerned, and the time
    window the rule was checked in, if it has any."""

    rule: R
    summary: str
    items: tuple[str, ...] = ()
    window: str = ""

    def __str__(self) -> str:
        rule = self.rule
        label = f"{rule.name} ({rule.message})" if rule.message else rule.name
        text = f"{label}: {self.summary}"
        if self.window:
            text += f" during {self.window}"
        if self.items:
            text += ": " + _capped(self.items, MAX_ITEMS, "more")
        return text


def evaluate(rules: Iterable[R], stack: StackView, action: str, now: datetime.datetime,
             current_stack: StackView | None = None) -> list[Finding[R]]:
    """The failures of the rules that apply to ``action`` at ``now`` and to the stack's
    place in its tree, in the rules' order.

    ``stack`` and ``current_stack`` are the pre-op's: on UPDATE (and its ROLLBACK) the
    stored stack and the stack the operation builds, which is the one judged; otherwise
    ``stack`` alone."""
    findings = []
    for rule in rules:
        if action not in rule.actions:
            continue
        if rule.tree_scope == ROOT_STACK and stack.nested_depth > 0:
            continue
        window = open_window(rule.during, now) if rule.during else None
        if rule.during and window is None:
            continue
        finding = check(rule, stack, action, current_stack)
        if finding is not None:
            findings.append(dataclasses.replace(finding, window=str(window or "")))
    return findings


def render(findings: Sequence[Finding[Any]]) -> str:
    """Findings as one line: ``rule: what: items; rule: ...``, capped in length."""
    return _capped([str(finding) for finding in findings], MAX_FINDINGS, "more failed rules",
                   separator="; ")


def check(rule: R, stack: StackView, action: str,
          current_stack: StackView | None = None) -> Finding[R] | None:
    """The finding if ``rule`` fails, else ``None``. Ignores ``actions`` and ``during``."""
    subject = current_stack if current_stack is not None else stack
    # Resources in name order, so a message does not change between two identical calls.
    resources = sorted(subject.resources.values(), key=lambda resource: resource.name)
    match rule.check:
        case MaxResources(limit=limit):
            count = len(resources)
            if count > limit:
                return Finding(rule, f"{_resources(count)}, more than the limit of {limit}")
        case MaxCount(type=pattern, limit=limit):
            count = sum(1 for r in resources if fnmatchcase(r.type, pattern))
            if count > limit:
                return Finding(
                    rule, f"{_resources(count)} of type {pattern}, more than the limit of {limit}"
                )
        case AllowedTypes(patterns=patterns):
            outside = tuple(
                f"{r.name} ({r.type})" for r in resources
                if not any(fnmatchcase(r.type, p) for p in patterns)
            )
            if outside:
                return Finding(rule, "types not allowed", outside)
        case DeniedTypes(patterns=patterns):
            denied = tuple(
                f"{r.name} ({r.type})" for r in resources
                if any(fnmatchcase(r.type, p) for p in patterns)
            )
            if denied:
                return Finding(rule, "types denied", denied)
        case RequiredProperties(type=pattern, properties=required):
            lacking = []
            for r in resources:
                if fnmatchcase(r.type, pattern):
                    missing = [name for name in required if not _is_set(r.properties, name)]
                    if missing:
                        lacking.append(f"{r.name} ({', '.join(missing)})")
            if lacking:
                return Finding(rule, f"{pattern} resources missing required properties",
                               tuple(lacking))
        case RequiredTags(tags=patterns):
            absent = tuple(
                p for p in patterns if not any(fnmatchcase(tag, p) for tag in subject.tags)
            )
            if absent:
                return Finding(rule, "missing stack tags", absent)
        case Protect(changes=changes, resources=selector):
            planned = _planned(stack, subject, changes, selector)
            if planned is None:
                return Finding(rule, _unknown(changes, selector))
            if planned:
                return Finding(rule, f"{_either(changes)} of {selector}", planned)
        case MaxChanges(limit=limit, changes=changes, resources=selector):
            planned = _planned(stack, subject, changes, selector)
            if planned is None:
                return Finding(rule, _unknown(changes, selector))
            if len(planned) > limit:
                return Finding(rule, f"{len(planned)} {_either(changes)} of {selector}, "
                               f"more than the limit of {limit}", planned)
        case AnyOperation():
            return Finding(rule, f"{action} of the stack")
    return None


def _planned(stack: StackView, subject: StackView, changes: tuple[Change, ...],
             selector: Selector) -> tuple[str, ...] | None:
    """``<change> <name> (<type>)`` for each resource planned for one of ``changes`` that
    ``selector`` picks, by name; None when the operation's plan is not known.

    A resource is seen on both sides of the operation: as stored (``stack``: the only
    side of a resource an update removes) and as the operation leaves it (``subject``:
    the only side of one it creates). Both views carry the same plan; either is read in
    case a caller filled in only one."""
    known = next((view for view in (subject, stack) if view.changes_known), None)
    if known is None:
        return None
    planned = []
    for name, change in sorted(known.changes.items()):
        if change.action not in changes:
            continue
        sides = [side for side in (stack.resources.get(name), subject.resources.get(name))
                 if side is not None]
        if selects(selector, name, sides):
            planned.append(f"{change.action} {name}{_type_of(sides)}")
    return tuple(planned)


def _unknown(changes: Sequence[str], selector: Selector) -> str:
    # No plan (the forecast failed, or Kiln makes none for this action): a rule on
    # changes fails closed rather than read "nothing changes" into the silence.
    return (f"the planned changes are not known, so no {_either(changes)} of {selector} "
            f"can be ruled out")


def _type_of(sides: Sequence[ResourceView]) -> str:
    return f" ({sides[-1].type})" if sides else ""


def _either(changes: Sequence[str]) -> str:
    """``CREATE, UPDATE or DELETE``."""
    if len(changes) == 1:
        return changes[0]
    return f"{', '.join(changes[:-1])} or {changes[-1]}"


def _is_set(properties: Mapping[str, Any], name: str) -> bool:
    """Whether a property is given a value.

    A value known only at run time (``get_attr`` of a resource not yet created) counts:
    the template does set it. ``null`` and an empty string, list or map do not: the
    engine fills unset properties with ``null``, and ``security_groups: []`` sets no group.
    """
    value = properties.get(name)
    if value is None:
        return False
    if isinstance(value, Unresolved):
        return True
    if isinstance(value, str | Sequence | Mapping):
        return len(value) > 0
    return True


def _resources(count: int) -> str:
    return f"{count} resource" if count == 1 else f"{count} resources"


def _capped(items: Sequence[str], limit: int, more: str, separator: str = ", ") -> str:
    if len(items) <= limit:
        return separator.join(items)
    return separator.join(items[:limit]) + f"{separator}and {len(items) - limit} {more}"
