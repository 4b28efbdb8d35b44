"""Judging a stack against the policy rules: a pure function, no Kiln, no state.

``evaluate(rules, stack, action)`` returns one :class:`Finding` per rule that applies to
``action`` and fails on ``stack``; ``render`` turns findings into the short text a tenant
reads as the stack's status reason. Messages name rules, resources, types, property names
and tag patterns, never a property value, so nothing hidden can leak through them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from engine.lifecycle.view import StackView, Unresolved
from plugins.lifecycle.policy.rules import (
    AllowedTypes,
    DeniedTypes,
    MaxCount,
    MaxResources,
    RequiredProperties,
    RequiredTags,
    Rule,
)

#: Resources (or tags) named per failed rule before "and N more".
MAX_ITEMS = 5
#: Failed rules listed in one message before "and N more".
MAX_FINDINGS = 5


@dataclasses.dataclass(frozen=True)
class Finding:
    """One failed rule: what is wrong, and the resources (or tags) concerned."""

    rule: Rule
    summary: str
    items: tuple[str, ...] = ()

    def __str__(self) -> str:
        rule = self.rule
        label = f"{rule.name} ({rule.message})" if rule.message else rule.name
        text = f"{label}: {self.summary}"
        if self.items:
            text += ": " + _capped(self.items, MAX_ITEMS, "more")
        return text


def evaluate(rules: Iterable[Rule], stack: StackView, action: str) -> list[Finding]:
    """The failures of the rules that apply to ``action``, in the rules' order."""
    findings = []
    for rule in rules:
        if action in rule.actions:
            finding = check(rule, stack)
            if finding is not None:
                findings.append(finding)
    return findings


def render(findings: Sequence[Finding]) -> str:
    """Findings as one line: ``rule: what: items; rule: ...``, capped in length."""
    return _capped([str(finding) for finding in findings], MAX_FINDINGS, "more failed rules",
                   separator="; ")


def check(rule: Rule, stack: StackView) -> Finding | None:
    """The finding if ``rule`` fails on ``stack``, else ``None``. Ignores ``actions``."""
    # Resources in name order, so a message does not change between two identical calls.
    resources = sorted(stack.resources.values(), key=lambda resource: resource.name)
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
                p for p in patterns if not any(fnmatchcase(tag, p) for tag in stack.tags)
            )
            if absent:
                return Finding(rule, "missing stack tags", absent)
    return None


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
