"""Reading the approval rules file: the policy's format (``plugins/lifecycle/policy/
rules_file.py``) with ``approvers`` and ``window_seconds`` instead of ``effect``, and the
checks that make sense as a reason to ask a person.

The format, in short (``etc/kiln/approval.yaml.example`` shows every kind)::

    rules:
      - name: protected           # optional; default rules[<index>]
        approvers: the ops team   # optional; who should decide, in the stack's reason
        window_seconds: 86400     # optional; default [lifecycle_plugins]
        message: protected data   # optional; shown with the rule name
        actions: [UPDATE, DELETE] # optional; default by check
        during: [...]             # optional; default always
        tree_scope: root          # optional; default every (stack of a nested tree)
        protect: {changes: [REPLACE, DELETE], resources: {tags: [protected]}}
"""

from __future__ import annotations

import math
from typing import Any

from plugins.lifecycle.approval.rules import ApprovalRule
from plugins.lifecycle.policy.rules_file import (
    Invalid,
    kind_of,
    parse_head,
    parse_rule_list,
    read_rules_file,
    string,
)

KIND = "Approval"
OWN_KEYS = ("approvers", "window_seconds")
#: The checks an approval rule may use: those on the stack's size and on what the
#: operation does. The type and property checks are the policy's, which refuses.
CHECKS = ("max_resources", "max_count", "protect", "max_changes", "any_operation")


def load_rules(path: str) -> tuple[ApprovalRule, ...]:
    """The rules in the YAML file at ``path``; no rules when ``path`` is empty. Raises
    ``RulesFileError`` naming the file, the rule and the key."""
    return read_rules_file(path, KIND, parse_rules)


def parse_rules(document: Any) -> tuple[ApprovalRule, ...]:
    """Rules from a loaded document: ``{"rules": [...]}``. Raises ``Invalid``."""
    return parse_rule_list(document, _parse_rule, lambda rule: rule.name)


def _parse_rule(raw: Any, index: int) -> ApprovalRule:
    head = parse_head(raw, index, OWN_KEYS, CHECKS)
    approvers = (string(raw["approvers"], f"{head.where}: 'approvers'")
                 if "approvers" in raw else "")
    window = (_seconds(raw["window_seconds"], f"{head.where}: 'window_seconds'")
              if "window_seconds" in raw else None)
    return ApprovalRule(name=head.name, check=head.check, actions=head.actions,
                        message=head.message, during=head.during,
                        tree_scope=head.tree_scope, approvers=approvers,
                        window_seconds=window)


def _seconds(value: Any, where: str) -> float:
    # bool is an int in Python; "window_seconds: yes" is a slip.
    if (isinstance(value, bool) or not isinstance(value, int | float) or not value > 0
            or not math.isfinite(value)):
        raise Invalid(f"{where}: must be a number of seconds above 0, not {kind_of(value)}")
    return float(value)
