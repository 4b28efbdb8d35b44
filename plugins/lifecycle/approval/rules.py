"""The approval rules, as the loader builds them and the plugin reads them.

An approval rule is a policy check (``plugins.lifecycle.policy.rules``: what to look at,
when it applies) whose failure asks a person to approve the operation instead of denying
or warning: who (``approvers``) and within how long (``window_seconds``).
"""

from __future__ import annotations

import dataclasses

from engine.lifecycle.base import EVERY_STACK
from plugins.lifecycle.policy.rules import Check, default_actions
from plugins.lifecycle.policy.windows import Window


@dataclasses.dataclass(frozen=True)
class ApprovalRule:
    name: str
    check: Check
    #: The stack actions the rule applies to; empty: its check's (``default_actions``).
    actions: frozenset[str] = frozenset()
    #: The operator's explanation, shown next to the rule name.
    message: str = ""
    #: The rule applies only while one of these windows is open; empty: always.
    during: tuple[Window, ...] = ()
    #: ``"every"`` stack of a nested tree, or only its ``"root"``.
    tree_scope: str = EVERY_STACK
    #: Who should decide, as people read it ("the database team"); "" says no one.
    approvers: str = ""
    #: How long the operation waits for a decision; None: Kiln's default
    #: (``[lifecycle_plugins] approval_window_seconds``).
    window_seconds: float | None = None

    def __post_init__(self) -> None:
        if not self.actions:
            object.__setattr__(self, "actions", default_actions(self.check))
