"""The policy rules, as the loader builds them and the evaluator reads them.

A rule is one check (what to look at) plus what to do when it fails (``effect``), when it
applies (``actions``, ``during``) and how to name it to the tenant (``name``,
``message``). Rules are frozen: they are built once, at configure time, and shared by
every call. The checks serve the approval plugin's rules too (:class:`Condition`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Set
from typing import Literal, Protocol

from engine.lifecycle.base import EVERY_STACK
from engine.vocabulary import Action, Change
from plugins.lifecycle.policy.matching import EVERY_RESOURCE, Selector
from plugins.lifecycle.policy.windows import Window

Effect = Literal["deny", "soft", "warn"]
DENY: Effect = "deny"
#: Sentinel's soft-mandatory: the operation waits for a person, whose approval overrides.
SOFT: Effect = "soft"
WARN: Effect = "warn"
EFFECTS: tuple[Effect, ...] = (DENY, SOFT, WARN)

#: Every action a rule may name: those a lifecycle plugin can be called for, and Heat's
#: CANCEL, which Kiln calls no plugin for but a rule written for Heat may name.
ACTIONS = (
    Action.CREATE, Action.UPDATE, Action.DELETE, Action.ABANDON, Action.ADOPT,
    Action.SUSPEND, Action.RESUME, Action.CHECK, "CANCEL", Action.ROLLBACK,
    Action.SNAPSHOT, Action.RESTORE,
)
#: The actions that bring resources into a stack; a rule on what a stack holds checks
#: these when it names no ``actions``.
DEFAULT_ACTIONS = frozenset({Action.CREATE, Action.UPDATE, Action.ADOPT, Action.RESTORE})
#: The actions that change or remove existing resources; a rule on planned changes
#: checks these when it names no ``actions``. DELETE is the whole stack's: deleting a
#: stack deletes the resources a rule protects.
CHANGE_ACTIONS = frozenset({Action.UPDATE, Action.DELETE, Action.RESTORE})

#: The planned changes a rule may name (``NONE`` is no change).
CHANGES = (Change.CREATE, Change.UPDATE, Change.REPLACE, Change.DELETE)
#: The changes that lose a physical resource; what a rule on changes names by default.
DEFAULT_CHANGES = (Change.REPLACE, Change.DELETE)


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


@dataclasses.dataclass(frozen=True)
class Protect:
    """No resource that ``resources`` selects is planned for one of ``changes``."""

    changes: tuple[Change, ...] = DEFAULT_CHANGES
    resources: Selector = EVERY_RESOURCE


@dataclasses.dataclass(frozen=True)
class MaxChanges:
    """At most ``limit`` resources that ``resources`` selects are planned for one of
    ``changes`` in one operation."""

    limit: int
    changes: tuple[Change, ...] = DEFAULT_CHANGES
    resources: Selector = EVERY_RESOURCE


@dataclasses.dataclass(frozen=True)
class AnyOperation:
    """Fails on every operation of the rule's ``actions`` (which it has no default for)."""


Check = (MaxResources | MaxCount | AllowedTypes | DeniedTypes | RequiredProperties
         | RequiredTags | Protect | MaxChanges | AnyOperation)


def default_actions(check: Check) -> frozenset[str]:
    """The actions a rule with ``check`` and no ``actions`` of its own applies to."""
    if isinstance(check, Protect | MaxChanges):
        return CHANGE_ACTIONS
    if isinstance(check, AnyOperation):
        return frozenset()
    return DEFAULT_ACTIONS


class Condition(Protocol):
    """What the evaluator reads of a rule: a policy :class:`Rule` or an approval rule."""

    @property
    def name(self) -> str: ...
    @property
    def check(self) -> Check: ...
    @property
    def actions(self) -> Set[str]: ...
    @property
    def message(self) -> str: ...
    @property
    def during(self) -> tuple[Window, ...]: ...
    @property
    def tree_scope(self) -> str: ...


@dataclasses.dataclass(frozen=True)
class Rule:
    name: str
    effect: Effect
    check: Check
    #: The stack actions the rule applies to; empty: its check's (``default_actions``).
    actions: frozenset[str] = frozenset()
    #: The operator's explanation, shown to the tenant next to the rule name.
    message: str = ""
    #: The rule applies only while one of these windows is open; empty: always.
    during: tuple[Window, ...] = ()
    #: ``"every"`` stack of a nested tree, or only its ``"root"`` (the plugin contract's
    #: words): a rule on the whole operation need not be judged again for each child.
    tree_scope: str = EVERY_STACK

    def __post_init__(self) -> None:
        if not self.actions:
            object.__setattr__(self, "actions", default_actions(self.check))
