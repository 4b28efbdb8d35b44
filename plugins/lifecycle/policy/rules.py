"""The policy rules, as the loader builds them and the evaluator reads them.

A rule is one check (what to look at) plus what to do when it fails (``effect``), when it
applies (``actions``) and how to name it to the tenant (``name``, ``message``). Rules are
frozen: they are built once, at configure time, and shared by every call.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from engine.vocabulary import Action

Effect = Literal["deny", "warn"]
DENY: Effect = "deny"
WARN: Effect = "warn"
EFFECTS: tuple[Effect, ...] = (DENY, WARN)

#: Every action a rule may name: those a lifecycle plugin can be called for, and Heat's
#: CANCEL, which Kiln calls no plugin for but a rule written for Heat may name.
ACTIONS = (
    Action.CREATE, Action.UPDATE, Action.DELETE, Action.ABANDON, Action.ADOPT,
    Action.SUSPEND, Action.RESUME, Action.CHECK, "CANCEL", Action.ROLLBACK,
)
#: The actions that bring resources into a stack; a rule without ``actions`` checks these.
DEFAULT_ACTIONS = frozenset({Action.CREATE, Action.UPDATE, Action.ADOPT})


@dataclasses.dataclass(frozen=True)
class MaxResources:
    """The stack holds at most ``limit`` resources."""

    limit: int


@dataclasses.dataclass(frozen=True)
class MaxCount:
    """At most ``limit`` resources whose type matches ``type`` (a glob pattern)."""

    type: str
    limit: int


@dataclasses.dataclass(frozen=True)
class AllowedTypes:
    """Every resource's type matches at least one of ``patterns``."""

    patterns: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class DeniedTypes:
    """No resource's type matches any of ``patterns``."""

    patterns: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class RequiredProperties:
    """Every resource whose type matches ``type`` sets each of ``properties``."""

    type: str
    properties: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class RequiredTags:
    """For each pattern in ``tags``, at least one stack tag matches it."""

    tags: tuple[str, ...]


Check = MaxResources | MaxCount | AllowedTypes | DeniedTypes | RequiredProperties | RequiredTags


@dataclasses.dataclass(frozen=True)
class Rule:
    name: str
    effect: Effect
    check: Check
    actions: frozenset[str] = DEFAULT_ACTIONS
    #: The operator's explanation, shown to the tenant next to the rule name.
    message: str = ""
