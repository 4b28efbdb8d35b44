"""The ``policy`` lifecycle plugin: operator rules on what a stack may contain.

Rules come from the YAML file named by ``[lifecycle_policy] rules_file`` (see
``loader.py`` and ``etc/kiln/policy.yaml.example``); with no file every operation is
allowed. The plugin keeps no state: a pre-op judges the stack the operation builds, a
post-op has nothing to undo, so repeated calls after a worker crash give the same answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oslo_config import cfg

from engine.lifecycle.base import Denied, LifecyclePlugin, PluginServices, Warn
from plugins.lifecycle.policy.evaluate import evaluate, render
from plugins.lifecycle.policy.loader import load_rules
from plugins.lifecycle.policy.rules import DENY, Rule

if TYPE_CHECKING:
    from engine.context import RequestContext
    from engine.lifecycle.view import StackView

GROUP = "lifecycle_policy"

OPTS: Sequence[cfg.Opt] = (
    cfg.StrOpt(
        "rules_file",
        default="",
        help="YAML file of policy rules checked before stack operations (see "
        "etc/kiln/policy.yaml.example). Empty: no rules, every operation is allowed. "
        "Read once at start; an invalid file stops the process.",
    ),
)

#: Cheap, stateless checks run before plugins that reserve anything, so a stack the
#: policy refuses never holds a reservation, even briefly.
ORDINAL = 10


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """Entry point ``oslo.config.opts: kiln.lifecycle.policy`` for the sample config."""
    return [(GROUP, list(OPTS))]


class PolicyPlugin(LifecyclePlugin):
    """Denies or warns about stacks that break the operator's rules."""

    supports_dry_run = True  # judging reserves nothing, so a dry run is a normal run

    def __init__(self) -> None:
        self.rules: tuple[Rule, ...] = ()

    def configure(self, services: PluginServices) -> None:
        services.conf.register_opts(OPTS, group=GROUP)
        self.rules = load_rules(str(services.conf[GROUP].rules_file or ""))

    def do_pre_op(self, cnxt: RequestContext, stack: StackView,
                  current_stack: StackView | None = None,
                  action: str | None = None) -> Warn | None:
        # On UPDATE (and its ROLLBACK) the stack being built is current_stack; on every
        # other action the stored stack is the one the operation acts on.
        subject = current_stack if current_stack is not None else stack
        findings = evaluate(self.rules, subject, action or stack.action)
        denials = [finding for finding in findings if finding.rule.effect == DENY]
        if denials:
            raise Denied(render(denials))
        if findings:
            return Warn(render(findings))
        return None

    def do_post_op(self, cnxt: RequestContext, stack: StackView,
                   current_stack: StackView | None = None, action: str | None = None,
                   is_stack_failure: bool = False) -> None:
        return None  # nothing was reserved, so nothing to release

    def get_ordinal(self) -> int:
        return ORDINAL
