"""The approval lifecycle plugin: rules that make an operation wait for a person, who and
how long, its place after the policy, and its rules file."""

from __future__ import annotations

import dataclasses
import datetime
import textwrap
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from oslo_config import cfg

from engine.context import RequestContext
from engine.lifecycle.base import Pending, PluginServices
from engine.vocabulary import Change
from plugins.lifecycle.approval import plugin as approval_plugin
from plugins.lifecycle.approval.loader import load_rules
from plugins.lifecycle.approval.plugin import ApprovalPlugin
from plugins.lifecycle.approval.rules import ApprovalRule
from plugins.lifecycle.policy.evaluate import evaluate
from plugins.lifecycle.policy.matching import Selector
from plugins.lifecycle.policy.plugin import PolicyPlugin
from plugins.lifecycle.policy.rules import (
    CHANGE_ACTIONS,
    DEFAULT_ACTIONS,
    AnyOperation,
    MaxChanges,
    MaxCount,
    MaxResources,
    Protect,
)
from plugins.lifecycle.policy.rules_file import RulesFileError
from plugins.lifecycle.policy.windows import Weekly
from plugins.lifecycle.quota.plugin import QuotaPlugin
from tests.unit.plugins.lifecycle.views import NOON, fixed_clock, resource, stack

EXAMPLE = Path(__file__).resolve().parents[4] / "etc" / "kiln" / "approval.yaml.example"
CONTEXT = RequestContext(tenant_id="tenant-1", token_tenant_id="tenant-1", role="member")
DB, SERVER = "OS::Trove::Instance", "OS::Nova::Server"
REPLACE, DELETE = Change.REPLACE, Change.DELETE
SATURDAY = datetime.datetime(2025, 6, 7, 10, 0, tzinfo=datetime.UTC)


class NoDatabase:
    """The approval plugin keeps no state; any use of the database is a bug."""

    def transaction(self) -> AbstractContextManager[Any]:
        raise AssertionError("the approval plugin must not use the database")

    def read(self) -> AbstractContextManager[Any]:
        raise AssertionError("the approval plugin must not use the database")


@pytest.fixture
def conf() -> Iterator[cfg.ConfigOpts]:
    opts = cfg.ConfigOpts()
    opts([], project="kiln")
    yield opts
    opts.reset()


def configured(conf: cfg.ConfigOpts, text: str | None, tmp_path: Path,
               now: datetime.datetime = NOON) -> ApprovalPlugin:
    conf.register_opts(approval_plugin.OPTS, group=approval_plugin.GROUP)
    if text is not None:
        conf.set_override("rules_file", str(write(tmp_path, text)), group=approval_plugin.GROUP)
    plugin = ApprovalPlugin()
    plugin.configure(PluginServices(conf=conf, database=NoDatabase(), clock=fixed_clock(now)))
    return plugin


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "approval.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


RULES = """\
rules:
  - name: protected
    approvers: the service owner
    protect: {resources: {tags: [protected]}}
  - name: databases
    approvers: the DBA team
    window_seconds: 3600
    message: check the backup
    protect: {resources: {types: ["OS::Trove::*"]}}
  - name: big
    approvers: the DBA team
    window_seconds: 600
    max_resources: 3
  - name: weekend
    actions: [UPDATE]
    during: [{days: [Sat, Sun]}]
    protect: {changes: [CREATE, UPDATE, REPLACE, DELETE]}
"""


def test_without_a_rules_file_nothing_waits(conf: cfg.ConfigOpts, tmp_path: Path) -> None:
    plugin = configured(conf, None, tmp_path)

    assert conf.lifecycle_approval.rules_file == ""
    assert plugin.rules == ()
    doomed = stack(resource("db", DB), action="DELETE", changes={"db": DELETE})
    assert plugin.do_pre_op(CONTEXT, doomed, action="DELETE") is None


def test_a_rule_that_picks_the_operation_asks_its_approvers(
    conf: cfg.ConfigOpts, tmp_path: Path
) -> None:
    plugin = configured(conf, RULES, tmp_path)
    old = [resource("web", SERVER, tags=["protected"]), resource("api", SERVER)]
    changes = {"web": REPLACE, "api": REPLACE}
    stored = stack(*old, action="UPDATE", changes=changes)
    target = stack(resource("web", SERVER), resource("api", SERVER), action="UPDATE",
                   changes=changes)

    assert plugin.do_pre_op(CONTEXT, stored, current_stack=target, action="UPDATE") == Pending(
        "approval needed from the service owner: protected: REPLACE or DELETE of resources "
        "tagged protected: REPLACE web (OS::Nova::Server)")
    # Nothing protected is replaced: no one is asked.
    quiet = {"web": Change.UPDATE, "api": REPLACE}
    assert plugin.do_pre_op(CONTEXT, stack(*old, action="UPDATE", changes=quiet),
                            current_stack=stack(*old, action="UPDATE", changes=quiet),
                            action="UPDATE") is None


def test_every_rule_that_asks_is_named_and_the_shortest_window_applies(
    conf: cfg.ConfigOpts, tmp_path: Path
) -> None:
    plugin = configured(conf, RULES, tmp_path)
    doomed = stack(resource("db", DB), resource("web", SERVER, tags=["protected"]),
                   *(resource(f"n{i}", "OS::Heat::None") for i in range(2)),
                   action="DELETE", changes={"db": DELETE, "web": DELETE})
    target = dataclasses.replace(doomed, action="UPDATE")

    assert plugin.do_pre_op(CONTEXT, doomed, action="DELETE") == Pending(
        "approval needed from the service owner, the DBA team: protected: REPLACE or DELETE "
        "of resources tagged protected: DELETE web (OS::Nova::Server); databases (check the "
        "backup): REPLACE or DELETE of resources of type OS::Trove::*: DELETE db "
        "(OS::Trove::Instance)", window_seconds=3600)
    # max_resources applies to UPDATE, and its 600 seconds are the shorter window.
    verdict = plugin.do_pre_op(CONTEXT, target, current_stack=target, action="UPDATE")
    assert isinstance(verdict, Pending) and verdict.window_seconds == 600
    assert "big: 4 resources, more than the limit of 3" in verdict.message
    assert not verdict.override  # an approval gate, not a policy to override


def test_a_rule_with_a_window_asks_only_while_it_is_open(
    conf: cfg.ConfigOpts, tmp_path: Path
) -> None:
    changes = {"web": Change.UPDATE}
    view = stack(resource("web", SERVER), action="UPDATE", changes=changes)

    assert configured(conf, RULES, tmp_path).do_pre_op(
        CONTEXT, view, current_stack=view, action="UPDATE") is None
    conf.reset()
    assert configured(conf, RULES, tmp_path, now=SATURDAY).do_pre_op(
        CONTEXT, view, current_stack=view, action="UPDATE") == Pending(
        "approval needed: weekend: CREATE, UPDATE, REPLACE or DELETE of resources during "
        "Sat, Sun 00:00-23:59 UTC: UPDATE web (OS::Nova::Server)")


def test_any_operation_asks_for_every_operation_of_its_actions(
    conf: cfg.ConfigOpts, tmp_path: Path
) -> None:
    plugin = configured(conf, """\
        rules:
          - {name: deletes, approvers: ops, actions: [DELETE, ABANDON], any_operation: true}
        """, tmp_path)

    assert plugin.do_pre_op(CONTEXT, stack(action="ABANDON"), action="ABANDON") == Pending(
        "approval needed from ops: deletes: ABANDON of the stack")
    assert plugin.do_pre_op(CONTEXT, stack(), action="CREATE") is None


def test_a_root_rule_asks_once_for_a_whole_tree(conf: cfg.ConfigOpts, tmp_path: Path) -> None:
    plugin = configured(conf, """\
        rules:
          - {name: deletes, actions: [DELETE], any_operation: true, tree_scope: root}
        """, tmp_path)

    assert plugin.do_pre_op(CONTEXT, stack(action="DELETE"), action="DELETE") == Pending(
        "approval needed: deletes: DELETE of the stack")
    child = stack(action="DELETE", nested_depth=1)
    assert plugin.do_pre_op(CONTEXT, child, action="DELETE") is None


def test_a_dry_run_gets_the_same_verdict(conf: cfg.ConfigOpts, tmp_path: Path) -> None:
    plugin = configured(conf, RULES, tmp_path)
    doomed = stack(resource("db", DB), action="DELETE", changes={"db": DELETE})

    assert ApprovalPlugin.supports_dry_run is True
    assert plugin.do_pre_op(CONTEXT, dataclasses.replace(doomed, dry_run=True),
                            action="DELETE") == plugin.do_pre_op(CONTEXT, doomed,
                                                                 action="DELETE")


def test_calls_are_repeatable_and_leave_nothing_behind(
    conf: cfg.ConfigOpts, tmp_path: Path
) -> None:
    plugin = configured(conf, RULES, tmp_path)
    doomed = stack(resource("db", DB), action="DELETE", changes={"db": DELETE})

    first = plugin.do_pre_op(CONTEXT, doomed, action="DELETE")
    assert first is not None and plugin.do_pre_op(CONTEXT, doomed, action="DELETE") == first
    for failed in (False, True):
        plugin.do_post_op(CONTEXT, doomed, action="DELETE", is_stack_failure=failed)
    assert plugin.describe_stack(doomed.id) is None


def test_approval_runs_after_the_policy_and_before_the_reservations() -> None:
    approval = ApprovalPlugin()

    assert ApprovalPlugin.after == ("policy",)
    assert PolicyPlugin().get_ordinal() < approval.get_ordinal() < QuotaPlugin().get_ordinal()


def test_list_opts_gives_the_group_for_the_sample_config() -> None:
    [(group, opts)] = approval_plugin.list_opts()

    assert group == "lifecycle_approval"
    assert [opt.name for opt in opts] == ["rules_file"]


# --- the rules file -------------------------------------------------------------------


def test_every_key_and_kind_loads(tmp_path: Path) -> None:
    rules = load_rules(str(write(tmp_path, """\
        rules:
          - {name: a, approvers: ops, window_seconds: 90, message: why, max_resources: 5}
          - {max_count: {type: "OS::Nova::Server", limit: 10}, window_seconds: 0.5}
          - {protect: {resources: {names: [db]}}, during: [{days: [Mon]}]}
          - {max_changes: {limit: 2}}
          - {actions: [DELETE], any_operation: true, tree_scope: root}
        """)))

    assert rules == (
        ApprovalRule("a", MaxResources(5), DEFAULT_ACTIONS, "why", approvers="ops",
                     window_seconds=90.0),
        ApprovalRule("rules[1]", MaxCount(SERVER, 10), window_seconds=0.5),
        ApprovalRule("rules[2]", Protect(resources=Selector(names=("db",))), CHANGE_ACTIONS,
                     during=(Weekly(days=(0,)),)),
        ApprovalRule("rules[3]", MaxChanges(2)),
        ApprovalRule("rules[4]", AnyOperation(), frozenset({"DELETE"}), tree_scope="root"),
    )


@pytest.mark.parametrize(("rule_text", "problem"), [
    ("{effect: deny, max_resources: 1}",
     "rules[1]: unknown key 'effect'; expected name, approvers, window_seconds, message, "
     "actions, during, tree_scope, max_resources, max_count, protect, max_changes, "
     "any_operation"),
    ("{required_tags: [owner]}",
     "rules[1]: unknown key 'required_tags'; expected name, approvers, window_seconds, "
     "message, actions, during, tree_scope, max_resources, max_count, protect, "
     "max_changes, any_operation"),
    ("{name: x}",
     "rules[1] (x): no check given; add exactly one of max_resources, max_count, protect, "
     "max_changes, any_operation"),
    ("{approvers: [ops], max_resources: 1}",
     "rules[1]: 'approvers': must be a non-empty string, not a list (['ops'])"),
    ("{window_seconds: 0, max_resources: 1}",
     "rules[1]: 'window_seconds': must be a number of seconds above 0, not an integer (0)"),
    ("{window_seconds: yes, max_resources: 1}",
     "rules[1]: 'window_seconds': must be a number of seconds above 0, not a boolean (True)"),
    ("{window_seconds: .inf, max_resources: 1}",
     "rules[1]: 'window_seconds': must be a number of seconds above 0, not a number (inf)"),
    ("{name: first, max_resources: 2}", "rules[1] (first): the name is already used by rules[0]"),
])
def test_each_rule_is_checked_strictly(tmp_path: Path, rule_text: str, problem: str) -> None:
    path = write(tmp_path, f"rules:\n  - {{name: first, max_resources: 1}}\n  - {rule_text}\n")

    with pytest.raises(RulesFileError) as raised:
        load_rules(str(path))
    assert str(raised.value) == f"Approval rules file {path}: {problem}"


def test_a_bad_rules_file_stops_configure(conf: cfg.ConfigOpts, tmp_path: Path) -> None:
    with pytest.raises(RulesFileError, match="^Approval rules file .*: the file is empty"):
        configured(conf, "", tmp_path)


def test_the_example_file_loads_and_judges() -> None:
    rules = load_rules(str(EXAMPLE))

    assert {type(r.check) for r in rules} == {MaxResources, Protect, MaxChanges, AnyOperation}
    assert all(r.approvers for r in rules)
    changes = {"db": REPLACE, "web": Change.UPDATE}
    stored = stack(resource("db", DB), resource("web", SERVER), action="UPDATE",
                   changes=changes)
    assert [f.rule.name for f in evaluate(rules, stored, "UPDATE", NOON, stored)] == [
        "databases"]
    christmas_night = datetime.datetime(2025, 12, 24, 23, 0, tzinfo=datetime.UTC)
    doomed = stack(resource("db", DB), action="DELETE", changes={"db": Change.DELETE})
    assert [f.rule.name for f in evaluate(rules, doomed, "DELETE", christmas_night)] == [
        "databases", "year-end-freeze", "night-deletes"]
