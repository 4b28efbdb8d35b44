"""Reading the policy rules file: the shared format (``rules_file.py``) plus ``effect``.

The format, in short (``etc/kiln/policy.yaml.example`` shows every kind)::

    rules:
      - name: server-cap          # optional; default rules[<index>]
        effect: deny              # required: deny | soft | warn
        message: Ask for more     # optional; shown to the tenant with the rule name
        actions: [CREATE, UPDATE] # optional; default by check
        during: [{days: [Fri], from: "16:00", to: "23:59"}]  # optional; default always
        tree_scope: root          # optional; default every (stack of a nested tree)
        max_count: {type: "OS::Nova::Server", limit: 100}   # exactly one check
"""

from __future__ import annotations

from typing import Any

from plugins.lifecycle.policy.rules import EFFECTS, Effect, Rule
from plugins.lifecycle.policy.rules_file import (
    CHECKS,
    Invalid,
    RulesFileError,
    parse_head,
    parse_rule_list,
    read_rules_file,
)

__all__ = ["RulesFileError", "load_rules", "parse_rules"]

KIND = "Policy"
OWN_KEYS = ("effect",)


def load_rules(path: str) -> tuple[Rule, ...]:
    """The rules in the YAML file at ``path``; no rules when ``path`` is empty. Raises
    ``RulesFileError`` naming the file, the rule and the key."""
    return read_rules_file(path, KIND, parse_rules)


def parse_rules(document: Any) -> tuple[Rule, ...]:
    """Rules from a loaded document: ``{"rules": [...]}``. Raises ``Invalid``."""
    return parse_rule_list(document, _parse_rule, lambda rule: rule.name)


def _parse_rule(raw: Any, index: int) -> Rule:
    head = parse_head(raw, index, OWN_KEYS, tuple(CHECKS))
    if "effect" not in raw:
        raise Invalid(f"{head.where}: 'effect' is missing; expected one of "
                      f"{', '.join(EFFECTS)}")
    return Rule(name=head.name, effect=_effect(raw["effect"], head.where), check=head.check,
                actions=head.actions, message=head.message, during=head.during,
                tree_scope=head.tree_scope)


def _effect(value: Any, where: str) -> Effect:
    for effect in EFFECTS:
        if value == effect:
            return effect
    raise Invalid(f"{where}: unknown effect {value!r}; expected one of {', '.join(EFFECTS)}")
