"""The ``policy`` lifecycle plugin: operator rules on what a stack may contain and on
what an operation is planned to do to it.

Rules come from the YAML file named by ``[lifecycle_policy] rules_file`` (see
``loader.py`` and ``etc/kiln/policy.yaml.example``); with no file every operation is
allowed. The plugin keeps no state: a pre-op judges the stack the operation builds and
its planned changes at the clock's time, a post-op has nothing to undo, so repeated calls
after a worker crash give the same answer (a time window may have opened or closed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oslo_config import cfg

from engine.clock import Clock
from engine.lifecycle.base import Denied, LifecyclePlugin, Pending, PluginServices, Warn
from plugins.lifecycle.policy.evaluate import evaluate, render
from plugins.lifecycle.policy.loader import load_rules
from plugins.lifecycle.policy.rules import DENY, SOFT, WARN, Rule

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
    """Denies, holds for approval (soft) or warns about operations that break the
    operator's rules."""

    supports_dry_run = True  # judging reserves nothing, so a dry run is a normal run

    def __init__(self) -> None:
        self.rules: tuple[Rule, ...] = ()
        self.clock: Clock | None = None  # Kiln's, from configure

    def configure(self, services: PluginServices) -> None:
        services.conf.register_opts(OPTS, group=GROUP)
        self.rules = load_rules(str(services.conf[GROUP].rules_file or ""))
        self.clock = services.clock

    def do_pre_op(self, cnxt: RequestContext, stack: StackView,
                  current_stack: StackView | None = None,
                  action: str | None = None) -> Warn | Pending | None:
        assert self.clock is not None, "configure() is called before any pre-op"
        findings = evaluate(self.rules, stack, action or stack.action, self.clock(),
                            current_stack=current_stack)
        by_effect = {effect: [f for f in findings if f.rule.effect == effect]
                     for effect in (DENY, SOFT, WARN)}
        # The strongest verdict wins. A denial names only the deny rules: the tenant must
        # fix those first. A soft failure also names the warnings, since the person who
        # approves it decides for the whole operation.
        if by_effect[DENY]:
            raise Denied(render(by_effect[DENY]))
        if by_effect[SOFT]:
            message = f"approval needed to override {render(by_effect[SOFT])}"
            if by_effect[WARN]:
                message += f" (warnings: {render(by_effect[WARN])})"
            return Pending(message, override=True)
        if by_effect[WARN]:
            return Warn(render(by_effect[WARN]))
        return None

    def do_post_op(self, cnxt: RequestContext, stack: StackView,
                   current_stack: StackView | None = None, action: str | None = None,
                   is_stack_failure: bool = False) -> None:
        return None  # nothing was reserved, so nothing to release

    def get_ordinal(self) -> int:
        return ORDINAL
