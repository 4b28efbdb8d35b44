"""The ``approval`` lifecycle plugin: operator rules that make an operation wait for a
person (an approval gate).

Rules come from the YAML file named by ``[lifecycle_approval] rules_file`` (see
``loader.py`` and ``etc/kiln/approval.yaml.example``); with no file nothing waits. When a
rule fails, the pre-op returns :class:`~engine.lifecycle.base.Pending`: Kiln parks the
operation until someone approves it, rejects it or lets its window pass. The rules are
the policy's (``plugins.lifecycle.policy``), judged by the same evaluator, so a rule on
replacing ``protected`` resources selects exactly what the same rule in the policy would.

The plugin keeps no state, so repeated calls give the same answer (a time window may
have opened or closed) and a post-op has nothing to undo.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oslo_config import cfg

from engine.lifecycle.base import LifecyclePlugin, Pending, PluginServices
from plugins.lifecycle.approval.loader import load_rules
from plugins.lifecycle.approval.rules import ApprovalRule
from plugins.lifecycle.policy.evaluate import evaluate, render

if TYPE_CHECKING:
    from engine.clock import Clock
    from engine.context import RequestContext
    from engine.lifecycle.view import StackView

GROUP = "lifecycle_approval"

OPTS: Sequence[cfg.Opt] = (
    cfg.StrOpt(
        "rules_file",
        default="",
        help="YAML file of approval rules checked before stack operations (see "
        "etc/kiln/approval.yaml.example): an operation a rule picks waits for a person "
        "to approve it. Empty: no rules, nothing waits. Read once at start; an invalid "
        "file stops the process.",
    ),
)

#: Just after the policy (10), whose denial must not wait for a person, and before the
#: plugins that reserve (quota 20, placement 50), so that a parked operation holds no
#: reservation for as long as it waits.
ORDINAL = 15


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """Entry point ``oslo.config.opts: kiln.lifecycle.approval`` for the sample config."""
    return [(GROUP, list(OPTS))]


class ApprovalPlugin(LifecyclePlugin):
    """Asks a person to approve the operations the operator's rules pick."""

    after = ("policy",)
    supports_dry_run = True  # asking reserves nothing: a dry run reports the same verdict

    def __init__(self) -> None:
        self.rules: tuple[ApprovalRule, ...] = ()
        self.clock: Clock | None = None  # Kiln's, from configure

    def configure(self, services: PluginServices) -> None:
        services.conf.register_opts(OPTS, group=GROUP)
        self.rules = load_rules(str(services.conf[GROUP].rules_file or ""))
        self.clock = services.clock

    def do_pre_op(self, cnxt: RequestContext, stack: StackView,
                  current_stack: StackView | None = None,
                  action: str | None = None) -> Pending | None:
        assert self.clock is not None, "configure() is called before any pre-op"
        findings = evaluate(self.rules, stack, action or stack.action, self.clock(),
                            current_stack=current_stack)
        if not findings:
            return None
        approvers = list(dict.fromkeys(f.rule.approvers for f in findings if f.rule.approvers))
        asked = (f"approval needed from {', '.join(approvers)}" if approvers
                 else "approval needed")
        # One decision covers every rule that asked, so the strictest window applies.
        windows = [f.rule.window_seconds for f in findings if f.rule.window_seconds is not None]
        return Pending(f"{asked}: {render(findings)}",
                       window_seconds=min(windows) if windows else None)

    def do_post_op(self, cnxt: RequestContext, stack: StackView,
                   current_stack: StackView | None = None, action: str | None = None,
                   is_stack_failure: bool = False) -> None:
        return None  # nothing was reserved, so nothing to release

    def get_ordinal(self) -> int:
        return ORDINAL
