"""The policy lifecycle plugin: each rule kind, deny, soft and warn, actions, time windows,
planned changes, and the rules file."""

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
from engine.errors import StartupFailed
from engine.lifecycle.base import Denied, Pending, PluginServices, Warn
from engine.lifecycle.view import ResourceView, StackView, Unresolved
from engine.vocabulary import Change
from plugins.lifecycle.policy import plugin as policy_plugin
from plugins.lifecycle.policy.evaluate import Finding, evaluate, render
from plugins.lifecycle.policy.loader import RulesFileError, load_rules
from plugins.lifecycle.policy.matching import Selector
from plugins.lifecycle.policy.plugin import PolicyPlugin
from plugins.lifecycle.policy.rules import (
    CHANGE_ACTIONS,
    CHANGES,
    DEFAULT_ACTIONS,
    AllowedTypes,
    AnyOperation,
    Check,
    DeniedTypes,
    MaxChanges,
    MaxCount,
    MaxResources,
    Protect,
    RequiredProperties,
    RequiredTags,
    Rule,
)
from plugins.lifecycle.policy.windows import Period, Weekly
from tests.unit.plugins.lifecycle.views import NOON, fixed_clock, resource, stack

EXAMPLE = Path(__file__).resolve().parents[4] / "etc" / "kiln" / "policy.yaml.example"
CONTEXT = RequestContext(tenant_id="tenant-1", token_tenant_id="tenant-1", role="member")
SERVER = "OS::Nova::Server"
DB = "OS::Trove::Instance"


def servers(count: int, **properties: Any) -> list[ResourceView]:
    return [resource(f"server{i}", SERVER, **properties) for i in range(count)]


def rule(check: Check, effect: str = "deny", name: str = "r", **fields: Any) -> Rule:
    return Rule(name=name, effect=effect, check=check, **fields)  # type: ignore[arg-type]


def failures(check: Check, view: StackView) -> list[str]:
    return [str(finding) for finding in evaluate([rule(check)], view, "CREATE", NOON)]


# --- each rule kind, passing and failing ----------------------------------------------


def test_max_resources_allows_the_limit_and_refuses_one_more() -> None:
    assert failures(MaxResources(3), stack(*servers(3))) == []
    assert failures(MaxResources(3), stack(*servers(4))) == [
        "r: 4 resources, more than the limit of 3"
    ]
    assert failures(MaxResources(0), stack(*servers(1))) == [
        "r: 1 resource, more than the limit of 0"
    ]


def test_max_count_counts_only_matching_types() -> None:
    view = stack(*servers(2), resource("port", "OS::Neutron::Port"),
                 resource("vol", "OS::Cinder::Volume"))

    assert failures(MaxCount(SERVER, 2), view) == []
    assert failures(MaxCount(SERVER, 1), view) == [
        "r: 2 resources of type OS::Nova::Server, more than the limit of 1"
    ]
    # A pattern counts every type it matches.
    assert failures(MaxCount("OS::N*", 2), view) == [
        "r: 3 resources of type OS::N*, more than the limit of 2"
    ]


def test_allowed_types_name_each_resource_outside_the_list() -> None:
    view = stack(resource("web", SERVER), resource("db", "OS::Trove::Instance"),
                 resource("net", "OS::Neutron::Net"))

    assert failures(AllowedTypes(("OS::Nova::*", "OS::Trove::*", "OS::Neutron::Net")),
                    view) == []
    assert failures(AllowedTypes(("OS::Nova::*",)), view) == [
        "r: types not allowed: db (OS::Trove::Instance), net (OS::Neutron::Net)"
    ]


def test_denied_types_name_each_matching_resource() -> None:
    view = stack(resource("web", SERVER), resource("fip", "OS::Neutron::FloatingIP"),
                 resource("assoc", "OS::Neutron::FloatingIPAssociation"))

    assert failures(DeniedTypes(("OS::Trove::*",)), view) == []
    assert failures(DeniedTypes(("OS::Neutron::FloatingIP*",)), view) == [
        "r: types denied: assoc (OS::Neutron::FloatingIPAssociation), "
        "fip (OS::Neutron::FloatingIP)"
    ]


def test_type_patterns_are_case_sensitive_and_whole() -> None:
    view = stack(resource("web", SERVER))

    assert failures(DeniedTypes(("os::nova::server",)), view) == []
    assert failures(DeniedTypes(("OS::Nova",)), view) == []


def test_required_properties_count_run_time_values_as_set() -> None:
    check = RequiredProperties(SERVER, ("security_groups",))
    view = stack(
        resource("given", SERVER, security_groups=["default"]),
        resource("later", SERVER, security_groups=Unresolved("get_resource", ("sg",))),
        resource("port", "OS::Neutron::Port"),  # other types are not concerned
    )

    assert failures(check, view) == []


def test_required_properties_fail_when_absent_null_or_empty() -> None:
    check = RequiredProperties(SERVER, ("security_groups", "key_name"))
    view = stack(
        resource("absent", SERVER, key_name="k"),
        resource("null", SERVER, security_groups=None, key_name="k"),
        resource("empty", SERVER, security_groups=[], key_name=""),
        resource("fine", SERVER, security_groups=["default"], key_name="k"),
    )

    assert failures(check, view) == [
        "r: OS::Nova::Server resources missing required properties: "
        "absent (security_groups), empty (security_groups, key_name), null (security_groups)"
    ]


def test_required_properties_match_types_by_pattern() -> None:
    check = RequiredProperties("OS::Nova::*", ("name",))
    view = stack(resource("web", SERVER), resource("flavor", "OS::Nova::Flavor", name="f"),
                 resource("vol", "OS::Cinder::Volume"))

    assert failures(check, view) == [
        "r: OS::Nova::* resources missing required properties: web (name)"
    ]


def test_required_tags_match_patterns_against_stack_tags() -> None:
    check = RequiredTags(("owner=*", "prod"))

    assert failures(check, stack(tags=("owner=web-team", "prod"))) == []
    assert failures(check, stack(tags=("owner=", "staging"))) == ["r: missing stack tags: prod"]
    assert failures(check, stack()) == ["r: missing stack tags: owner=*, prod"]


# --- rules on planned changes --------------------------------------------------------

REPLACE, DELETE, UPDATE = Change.REPLACE, Change.DELETE, Change.UPDATE
FRIDAY_EVENING = datetime.datetime(2025, 6, 6, 17, 0, tzinfo=datetime.UTC)


def update(old: list[ResourceView], new: list[ResourceView],
           changes: dict[str, Change]) -> tuple[StackView, StackView]:
    """The two views of an update's pre-op: the stored stack and the one it builds."""
    return (stack(*old, action="UPDATE", changes=changes),
            stack(*new, action="UPDATE", changes=changes))


def judged(check: Check, stored: StackView, action: str,
           target: StackView | None = None) -> list[str]:
    return [str(f) for f in evaluate([rule(check)], stored, action, NOON, current_stack=target)]


def test_protect_names_each_planned_change_of_the_resources_selected() -> None:
    old = [resource("db", DB, tags=["protected"]), resource("cache", DB),
           resource("web", SERVER, tags=["protected"])]
    new = [resource("db", DB, tags=["protected"]), resource("web", SERVER, tags=["protected"])]
    stored, target = update(old, new, {"db": REPLACE, "cache": DELETE, "web": UPDATE})

    assert judged(Protect(), stored, "UPDATE", target) == [
        "r: REPLACE or DELETE of resources: DELETE cache (OS::Trove::Instance), "
        "REPLACE db (OS::Trove::Instance)"
    ]
    assert judged(Protect(resources=Selector(tags=("protected",))), stored, "UPDATE",
                  target) == [
        "r: REPLACE or DELETE of resources tagged protected: REPLACE db (OS::Trove::Instance)"
    ]
    # An update in place counts only where a rule names it.
    assert judged(Protect(changes=(UPDATE,), resources=Selector(types=("OS::Nova::*",))),
                  stored, "UPDATE", target) == [
        "r: UPDATE of resources of type OS::Nova::*: UPDATE web (OS::Nova::Server)"
    ]


def test_a_resource_an_update_removes_is_matched_as_it_was_stored() -> None:
    stored, target = update([resource("cache", DB, metadata={"protected": True})], [],
                            {"cache": DELETE})

    assert judged(Protect(resources=Selector(metadata=("protected",))), stored, "UPDATE",
                  target) == [
        "r: REPLACE or DELETE of resources with metadata flag protected: "
        "DELETE cache (OS::Trove::Instance)"
    ]


def test_dropping_the_tag_in_the_update_that_replaces_does_not_escape_the_rule() -> None:
    stored, target = update([resource("db", DB, tags=["protected"], flavor="small")],
                            [resource("db", DB, flavor="big")], {"db": REPLACE})

    assert judged(Protect(resources=Selector(tags=("protected",))), stored, "UPDATE",
                  target) == [
        "r: REPLACE or DELETE of resources tagged protected: REPLACE db (OS::Trove::Instance)"
    ]


def test_deleting_the_stack_deletes_what_a_rule_protects() -> None:
    protect = rule(Protect(resources=Selector(tags=("protected",))))
    doomed = stack(resource("db", DB, tags=["protected"]), resource("web", SERVER),
                   action="DELETE", changes={"db": DELETE, "web": DELETE})

    assert protect.actions == CHANGE_ACTIONS == {"UPDATE", "DELETE", "RESTORE"}
    assert [str(f) for f in evaluate([protect], doomed, "DELETE", NOON)] == [
        "r: REPLACE or DELETE of resources tagged protected: DELETE db (OS::Trove::Instance)"
    ]
    assert evaluate([protect], doomed, "ABANDON", NOON) == []  # the resources stay


def test_max_changes_counts_the_selected_changes_of_one_operation() -> None:
    changes = {"server0": REPLACE, "server1": REPLACE, "server2": REPLACE, "db": DELETE,
               "port": UPDATE}
    stored, target = update([*servers(3), resource("db", DB), resource("port", "OS::Port")],
                            [*servers(3), resource("port", "OS::Port")], changes)

    assert judged(MaxChanges(limit=4), stored, "UPDATE", target) == []
    assert judged(MaxChanges(limit=3), stored, "UPDATE", target) == [
        "r: 4 REPLACE or DELETE of resources, more than the limit of 3: "
        "DELETE db (OS::Trove::Instance), REPLACE server0 (OS::Nova::Server), "
        "REPLACE server1 (OS::Nova::Server), REPLACE server2 (OS::Nova::Server)"
    ]
    assert judged(MaxChanges(limit=2, changes=(REPLACE,),
                             resources=Selector(types=(SERVER,))), stored, "UPDATE", target) == [
        "r: 3 REPLACE of resources of type OS::Nova::Server, more than the limit of 2: "
        "REPLACE server0 (OS::Nova::Server), REPLACE server1 (OS::Nova::Server), "
        "REPLACE server2 (OS::Nova::Server)"
    ]


def test_an_operation_that_changes_nothing_meets_no_change_rule() -> None:
    unchanged = stack(resource("db", DB), action="UPDATE", changes={"db": Change.NONE})

    assert judged(Protect(changes=CHANGES), unchanged, "UPDATE", unchanged) == []
    assert judged(MaxChanges(limit=0, changes=CHANGES), unchanged, "UPDATE", unchanged) == []
    empty_plan = stack(action="UPDATE", changes={})
    assert judged(Protect(changes=CHANGES), empty_plan, "UPDATE", empty_plan) == []


def test_without_a_plan_a_change_rule_fails_closed() -> None:
    # The forecast failed, or Kiln makes none for the action (SUSPEND, CHECK, ...).
    no_plan = stack(resource("db", DB), action="UPDATE")
    unknown = ("the planned changes are not known, so no REPLACE or DELETE of resources of "
               "type OS::Trove::* can be ruled out")

    assert no_plan.changes_known is False
    assert judged(Protect(resources=Selector(types=("OS::Trove::*",))), no_plan, "UPDATE",
                  no_plan) == [f"r: {unknown}"]
    assert judged(MaxChanges(limit=5, resources=Selector(types=("OS::Trove::*",))), no_plan,
                  "UPDATE", no_plan) == [f"r: {unknown}"]
    suspends = rule(Protect(resources=Selector(types=("OS::Trove::*",))),
                    actions=frozenset({"SUSPEND"}))
    assert [str(f) for f in evaluate([suspends], stack(action="SUSPEND"), "SUSPEND", NOON)
            ] == [f"r: {unknown}"]


def test_any_operation_fails_every_operation_of_its_actions() -> None:
    deletes = rule(AnyOperation(), actions=frozenset({"DELETE"}))

    assert [str(f) for f in evaluate([deletes], stack(action="DELETE"), "DELETE", NOON)] == [
        "r: DELETE of the stack"
    ]
    assert evaluate([deletes], stack(), "CREATE", NOON) == []
    assert rule(AnyOperation()).actions == frozenset()  # no default: it applies to nothing


def test_a_rule_with_windows_applies_only_while_one_is_open() -> None:
    freeze = rule(Protect(changes=CHANGES), name="freeze", message="weekend freeze",
                  during=(Weekly(days=(4,), start=16 * 60, end=23 * 60 + 59),))
    view = stack(resource("web", SERVER), action="UPDATE", changes={"web": UPDATE})

    assert [str(f) for f in evaluate([freeze], view, "UPDATE", FRIDAY_EVENING, view)] == [
        "freeze (weekend freeze): CREATE, UPDATE, REPLACE or DELETE of resources during "
        "Fri 16:00-23:59 UTC: UPDATE web (OS::Nova::Server)"
    ]
    assert evaluate([freeze], view, "UPDATE", NOON, view) == []  # a Wednesday


def test_a_root_rule_is_not_judged_again_for_each_nested_stack() -> None:
    deletes = rule(AnyOperation(), actions=frozenset({"DELETE"}), tree_scope="root")
    everywhere = rule(AnyOperation(), name="every", actions=frozenset({"DELETE"}))

    assert [f.rule.name for f in evaluate([deletes, everywhere], stack(action="DELETE"),
                                          "DELETE", NOON)] == ["r", "every"]
    child = stack(action="DELETE", nested_depth=1)
    assert [f.rule.name for f in evaluate([deletes, everywhere], child, "DELETE", NOON)] == [
        "every"]


# --- messages -------------------------------------------------------------------------


def test_the_operators_message_follows_the_rule_name() -> None:
    finding = evaluate([rule(MaxResources(0), name="tiny", message="ask the cloud team")],
                       stack(*servers(1)), "CREATE", NOON)

    assert [str(f) for f in finding] == [
        "tiny (ask the cloud team): 1 resource, more than the limit of 0"
    ]


def test_long_lists_are_capped() -> None:
    findings = evaluate([rule(DeniedTypes((SERVER,)))], stack(*servers(8)), "CREATE", NOON)

    assert render(findings) == (
        "r: types denied: server0 (OS::Nova::Server), server1 (OS::Nova::Server), "
        "server2 (OS::Nova::Server), server3 (OS::Nova::Server), "
        "server4 (OS::Nova::Server), and 3 more"
    )
    many = [Finding(rule(MaxResources(0), name=f"rule{i}"), "bad") for i in range(7)]
    assert render(many) == (
        "rule0: bad; rule1: bad; rule2: bad; rule3: bad; rule4: bad; and 2 more failed rules"
    )


def test_findings_keep_the_rules_order() -> None:
    rules = [rule(MaxResources(0), name="b"), rule(RequiredTags(("x",)), name="a")]

    assert [f.rule.name for f in evaluate(rules, stack(*servers(1)), "CREATE", NOON)] == ["b", "a"]


# --- the plugin -----------------------------------------------------------------------


class NoDatabase:
    """The policy keeps no state; any use of the database is a bug."""

    def transaction(self) -> AbstractContextManager[Any]:
        raise AssertionError("the policy plugin must not use the database")

    def read(self) -> AbstractContextManager[Any]:
        raise AssertionError("the policy plugin must not use the database")


@pytest.fixture
def conf() -> Iterator[cfg.ConfigOpts]:
    opts = cfg.ConfigOpts()
    opts([], project="kiln")
    yield opts
    opts.reset()


def configured(conf: cfg.ConfigOpts, rules_file: Path | str | None = None,
               now: datetime.datetime = NOON) -> PolicyPlugin:
    plugin = PolicyPlugin()
    # configure registers the group; register first so the override has a target.
    conf.register_opts(policy_plugin.OPTS, group=policy_plugin.GROUP)
    if rules_file is not None:
        conf.set_override("rules_file", str(rules_file), group=policy_plugin.GROUP)
    plugin.configure(PluginServices(conf=conf, database=NoDatabase(), clock=fixed_clock(now)))
    return plugin


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


RULES = """\
rules:
  - name: cap
    effect: deny
    max_count: {type: "OS::Nova::Server", limit: 2}
  - name: owner
    effect: warn
    required_tags: ["owner=*"]
"""


def test_without_a_rules_file_everything_is_allowed(conf: cfg.ConfigOpts) -> None:
    plugin = configured(conf)

    assert conf.lifecycle_policy.rules_file == ""
    assert plugin.rules == ()
    assert plugin.do_pre_op(CONTEXT, stack(*servers(500)), action="CREATE") is None


def test_a_failed_deny_rule_raises_denied_naming_it(
    conf: cfg.ConfigOpts, tmp_path: Path
) -> None:
    plugin = configured(conf, write(tmp_path, RULES))

    # The warn rule fails too, but a denial reports only what must be fixed.
    with pytest.raises(Denied) as raised:
        plugin.do_pre_op(CONTEXT, stack(*servers(3)), action="CREATE")
    assert str(raised.value) == (
        "cap: 3 resources of type OS::Nova::Server, more than the limit of 2"
    )


def test_failed_warn_rules_only_warn(conf: cfg.ConfigOpts, tmp_path: Path) -> None:
    plugin = configured(conf, write(tmp_path, RULES))

    assert plugin.do_pre_op(CONTEXT, stack(*servers(2)), action="CREATE") == Warn(
        "owner: missing stack tags: owner=*"
    )
    assert plugin.do_pre_op(CONTEXT, stack(*servers(2), tags=("owner=me",)),
                            action="CREATE") is None


def test_every_failed_deny_rule_is_listed(conf: cfg.ConfigOpts, tmp_path: Path) -> None:
    plugin = configured(conf, write(tmp_path, """\
        rules:
          - {name: small, effect: deny, max_resources: 1}
          - {name: no-servers, effect: deny, denied_types: ["OS::Nova::*"]}
        """))

    with pytest.raises(Denied, match=r"^small: 2 resources, more than the limit of 1; "
                       r"no-servers: types denied: server0 \(OS::Nova::Server\), server1 "):
        plugin.do_pre_op(CONTEXT, stack(*servers(2)), action="CREATE")


def test_rules_check_create_update_and_adopt_by_default(
    conf: cfg.ConfigOpts, tmp_path: Path
) -> None:
    plugin = configured(conf, write(tmp_path, RULES))
    big = stack(*servers(3))

    for action in ("CREATE", "UPDATE", "ADOPT"):
        with pytest.raises(Denied):
            plugin.do_pre_op(CONTEXT, big, current_stack=big, action=action)
    for action in ("DELETE", "ABANDON", "SUSPEND", "RESUME", "CHECK", "CANCEL", "ROLLBACK"):
        assert plugin.do_pre_op(CONTEXT, big, action=action) is None


def test_actions_limit_a_rule_to_the_actions_listed(
    conf: cfg.ConfigOpts, tmp_path: Path
) -> None:
    plugin = configured(conf, write(tmp_path, """\
        rules:
          - {name: keep-owner, effect: deny, actions: [DELETE], required_tags: [owner]}
        """))

    assert plugin.do_pre_op(CONTEXT, stack(), action="CREATE") is None
    with pytest.raises(Denied, match="keep-owner"):
        plugin.do_pre_op(CONTEXT, stack(), action="DELETE")


def test_without_an_action_argument_the_stacks_action_is_used(
    conf: cfg.ConfigOpts, tmp_path: Path
) -> None:
    plugin = configured(conf, write(tmp_path, RULES))

    with pytest.raises(Denied):
        plugin.do_pre_op(CONTEXT, stack(*servers(3), action="CREATE"))
    assert plugin.do_pre_op(CONTEXT, stack(*servers(3), action="DELETE")) is None


def test_update_judges_the_new_stack(conf: cfg.ConfigOpts, tmp_path: Path) -> None:
    plugin = configured(conf, write(tmp_path, RULES))
    small = stack(*servers(1), tags=("owner=me",), action="UPDATE")
    big = stack(*servers(3), tags=("owner=me",), action="UPDATE")

    # Growing past the cap is refused; shrinking an old, too-big stack is allowed.
    with pytest.raises(Denied, match="cap: 3 resources"):
        plugin.do_pre_op(CONTEXT, small, current_stack=big, action="UPDATE")
    assert plugin.do_pre_op(CONTEXT, big, current_stack=small, action="UPDATE") is None


def test_a_dry_run_gets_the_same_verdict(conf: cfg.ConfigOpts, tmp_path: Path) -> None:
    plugin = configured(conf, write(tmp_path, RULES))

    assert PolicyPlugin.supports_dry_run is True
    with pytest.raises(Denied, match="cap"):
        plugin.do_pre_op(CONTEXT, stack(*servers(3), dry_run=True), action="CREATE")


def test_calls_are_repeatable_and_leave_nothing_behind(
    conf: cfg.ConfigOpts, tmp_path: Path
) -> None:
    plugin = configured(conf, write(tmp_path, RULES))
    view = stack(*servers(2))

    first = plugin.do_pre_op(CONTEXT, view, action="CREATE")
    assert plugin.do_pre_op(CONTEXT, view, action="CREATE") == first
    for failed in (False, True):
        plugin.do_post_op(CONTEXT, view, action="CREATE", is_stack_failure=failed)
    assert plugin.describe_stack(view.id) is None


CHANGE_RULES = """\
rules:
  - name: keep-db
    effect: deny
    protect: {resources: {types: ["OS::Trove::*"]}}
  - name: few-replacements
    effect: soft
    max_changes: {limit: 1}
    message: ask the service owner
  - name: servers-in-place
    effect: warn
    protect: {changes: [UPDATE], resources: {types: ["OS::Nova::*"]}}
  - name: friday-freeze
    effect: deny
    during: [{days: [Fri], from: "16:00", to: "23:59"}]
    protect: {changes: [CREATE, UPDATE, REPLACE, DELETE]}
"""


def test_an_update_replacing_a_protected_resource_is_denied(
    conf: cfg.ConfigOpts, tmp_path: Path
) -> None:
    plugin = configured(conf, write(tmp_path, CHANGE_RULES))
    stored, target = update([resource("db", DB)], [resource("db", DB)], {"db": REPLACE})

    with pytest.raises(Denied) as raised:
        plugin.do_pre_op(CONTEXT, stored, current_stack=target, action="UPDATE")
    assert str(raised.value) == (
        "keep-db: REPLACE or DELETE of resources of type OS::Trove::*: "
        "REPLACE db (OS::Trove::Instance)"
    )


def test_a_failed_soft_rule_asks_for_an_approval_that_overrides_it(
    conf: cfg.ConfigOpts, tmp_path: Path
) -> None:
    plugin = configured(conf, write(tmp_path, CHANGE_RULES))
    stored, target = update(servers(2), servers(2), {"server0": REPLACE, "server1": REPLACE})

    assert plugin.do_pre_op(CONTEXT, stored, current_stack=target, action="UPDATE") == Pending(
        "approval needed to override few-replacements (ask the service owner): 2 REPLACE "
        "or DELETE of resources, more than the limit of 1: REPLACE server0 (OS::Nova::Server),"
        " REPLACE server1 (OS::Nova::Server)", window_seconds=None, override=True)
    # A dry run gets the same verdict: Kiln reports it as pending and refuses nothing.
    dry = dataclasses.replace(target, dry_run=True)
    verdict = plugin.do_pre_op(CONTEXT, stored, current_stack=dry, action="UPDATE")
    assert isinstance(verdict, Pending) and verdict.override


def test_a_soft_failure_names_the_warnings_for_the_approver(
    conf: cfg.ConfigOpts, tmp_path: Path
) -> None:
    plugin = configured(conf, write(tmp_path, CHANGE_RULES))
    stored, target = update(servers(2), servers(2), {"server0": REPLACE, "server1": UPDATE})

    assert plugin.do_pre_op(CONTEXT, stored, current_stack=target, action="UPDATE") == Warn(
        "servers-in-place: UPDATE of resources of type OS::Nova::*: "
        "UPDATE server1 (OS::Nova::Server)")
    stored, target = update(servers(3), servers(3), {
        "server0": REPLACE, "server1": REPLACE, "server2": UPDATE})
    verdict = plugin.do_pre_op(CONTEXT, stored, current_stack=target, action="UPDATE")
    assert isinstance(verdict, Pending) and verdict.override
    assert verdict.message.startswith("approval needed to override few-replacements ")
    assert verdict.message.endswith(
        " (warnings: servers-in-place: UPDATE of resources of type OS::Nova::*: "
        "UPDATE server2 (OS::Nova::Server))")


def test_deny_beats_soft(conf: cfg.ConfigOpts, tmp_path: Path) -> None:
    plugin = configured(conf, write(tmp_path, CHANGE_RULES))
    stored, target = update([resource("db", DB), *servers(1)], servers(1),
                            {"db": DELETE, "server0": REPLACE})

    # Only the denial is reported: the soft rule failed too, but no approval can help.
    with pytest.raises(Denied, match=r"^keep-db: [^;]*$"):
        plugin.do_pre_op(CONTEXT, stored, current_stack=target, action="UPDATE")


def test_a_freeze_reads_the_clock_kiln_gives(conf: cfg.ConfigOpts, tmp_path: Path) -> None:
    path = write(tmp_path, CHANGE_RULES)
    stored, target = update(servers(1), [*servers(1), resource("new", SERVER)],
                            {"server0": Change.NONE, "new": Change.CREATE})

    assert configured(conf, path).do_pre_op(
        CONTEXT, stored, current_stack=target, action="UPDATE") is None
    conf.reset()
    with pytest.raises(Denied) as raised:
        configured(conf, path, now=FRIDAY_EVENING).do_pre_op(
            CONTEXT, stored, current_stack=target, action="UPDATE")
    assert str(raised.value) == (
        "friday-freeze: CREATE, UPDATE, REPLACE or DELETE of resources during "
        "Fri 16:00-23:59 UTC: CREATE new (OS::Nova::Server)"
    )


def test_policy_runs_early() -> None:
    assert PolicyPlugin().get_ordinal() == 10


def test_list_opts_gives_the_group_for_the_sample_config() -> None:
    [(group, opts)] = policy_plugin.list_opts()

    assert group == "lifecycle_policy"
    assert [opt.name for opt in opts] == ["rules_file"]


def test_a_bad_rules_file_stops_configure(conf: cfg.ConfigOpts, tmp_path: Path) -> None:
    path = write(tmp_path, "rules:\n  - {effect: block, max_resources: 1}\n")

    with pytest.raises(StartupFailed, match=f"^Policy rules file {path}: rules\\[0\\]: "
                       "unknown effect 'block'; expected one of deny, soft, warn$"):
        configured(conf, path)


# --- the rules file -------------------------------------------------------------------


def load_text(tmp_path: Path, text: str) -> tuple[Rule, ...]:
    return load_rules(str(write(tmp_path, text)))


def load_error(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(RulesFileError) as raised:
        load_rules(str(path))
    prefix = f"Policy rules file {path}: "
    message = str(raised.value)
    assert message.startswith(prefix)
    return message[len(prefix):]


def test_every_kind_and_field_loads(tmp_path: Path) -> None:
    rules = load_text(tmp_path, """\
        rules:
          - {name: a, effect: deny, max_resources: 10, message: too big}
          - {effect: warn, max_count: {type: "OS::Nova::Server", limit: 0}}
          - {effect: deny, allowed_types: ["OS::*"], actions: [CREATE]}
          - {effect: deny, denied_types: ["OS::Trove::*"], actions: [DELETE, ROLLBACK]}
          - {effect: deny, required_properties: {type: "OS::Nova::Server",
                                                 properties: [security_groups]}}
          - {effect: deny, required_tags: [owner]}
        """)

    assert rules == (
        Rule("a", "deny", MaxResources(10), DEFAULT_ACTIONS, "too big"),
        Rule("rules[1]", "warn", MaxCount(SERVER, 0)),
        Rule("rules[2]", "deny", AllowedTypes(("OS::*",)), frozenset({"CREATE"})),
        Rule("rules[3]", "deny", DeniedTypes(("OS::Trove::*",)),
             frozenset({"DELETE", "ROLLBACK"})),
        Rule("rules[4]", "deny", RequiredProperties(SERVER, ("security_groups",))),
        Rule("rules[5]", "deny", RequiredTags(("owner",))),
    )


def test_an_empty_rule_list_is_no_rules(tmp_path: Path) -> None:
    assert load_text(tmp_path, "rules: []\n") == ()


def test_an_empty_path_is_no_rules() -> None:
    assert load_rules("") == ()


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.yaml"

    with pytest.raises(RulesFileError) as raised:
        load_rules(str(path))
    assert str(raised.value) == (
        f"Policy rules file {path}: cannot be read: No such file or directory"
    )


def test_bad_yaml_gives_the_line_and_column(tmp_path: Path) -> None:
    assert load_error(tmp_path, "rules:\n  - {effect: deny\n") == (
        "not valid YAML: line 3, column 1: expected ',' or '}', but got '<stream end>'"
    )


def test_a_key_given_twice_is_refused(tmp_path: Path) -> None:
    text = "rules:\n  - effect: warn\n    max_resources: 1\n    effect: deny\n"

    assert load_error(tmp_path, text) == (
        "not valid YAML: line 4, column 5: key 'effect' is given twice"
    )


@pytest.mark.parametrize(("text", "problem"), [
    ("", "the file is empty; write 'rules: []' for no rules"),
    ("- {effect: deny, max_resources: 1}\n",
     "must be a mapping with the key 'rules', not a list "
     "([{'effect': 'deny', 'max_resources': 1}])"),
    ("rule: []\n", "the top level: unknown key 'rule'; did you mean 'rules'?"),
    ("{}\n", "the key 'rules' is missing; write 'rules: []' for no rules"),
    ("rules: {effect: deny}\n", "'rules' must be a list, not a mapping ({'effect': 'deny'})"),
    ("rules: [deny]\n", "rules[0]: a rule must be a mapping, not a string ('deny')"),
])
def test_the_document_shape_is_checked(tmp_path: Path, text: str, problem: str) -> None:
    assert load_error(tmp_path, text) == problem


@pytest.mark.parametrize(("rule_text", "problem"), [
    # Unknown keys, with a hint when one is close.
    ("{name: cap, effect: deny, max_cout: {type: x, limit: 1}}",
     "rules[1] (cap): unknown key 'max_cout'; did you mean 'max_count'?"),
    ("{effect: deny, max_resources: 1, severity: high}",
     "rules[1]: unknown key 'severity'; expected name, effect, message, actions, during, "
     "tree_scope, max_resources, max_count, allowed_types, denied_types, "
     "required_properties, required_tags, protect, max_changes, any_operation"),
    ("{effect: deny, max_count: {type: x, limit: 1, per: stack}}",
     "rules[1]: 'max_count': unknown key 'per'; expected type, limit"),
    # Effect.
    ("{name: cap, effect: block, max_resources: 1}",
     "rules[1] (cap): unknown effect 'block'; expected one of deny, soft, warn"),
    ("{effect: Deny, max_resources: 1}",
     "rules[1]: unknown effect 'Deny'; expected one of deny, soft, warn"),
    ("{max_resources: 1}", "rules[1]: 'effect' is missing; expected one of deny, soft, warn"),
    # Exactly one check.
    ("{name: cap, effect: deny}",
     "rules[1] (cap): no check given; add exactly one of max_resources, max_count, "
     "allowed_types, denied_types, required_properties, required_tags, protect, "
     "max_changes, any_operation"),
    ("{effect: deny, max_resources: 1, required_tags: [a]}",
     "rules[1]: more than one check (max_resources, required_tags); write one rule per check"),
    # Values.
    ("{effect: deny, max_resources: -1}",
     "rules[1]: 'max_resources': must be a whole number of 0 or more, not an integer (-1)"),
    ("{effect: deny, max_resources: yes}",
     "rules[1]: 'max_resources': must be a whole number of 0 or more, not a boolean (True)"),
    ("{effect: deny, max_count: {type: x}}", "rules[1]: 'max_count': 'limit' is missing"),
    ("{effect: deny, max_count: {type: '', limit: 1}}",
     "rules[1]: 'max_count': 'type': must be a non-empty string, not a string ('')"),
    ("{effect: deny, denied_types: 'OS::Trove::*'}",
     "rules[1]: 'denied_types': must be a non-empty list of strings, "
     "not a string ('OS::Trove::*')"),
    ("{effect: deny, allowed_types: []}",
     "rules[1]: 'allowed_types': must be a non-empty list of strings, not a list ([])"),
    ("{effect: deny, required_tags: [a, 3]}",
     "rules[1]: 'required_tags'[1]: must be a non-empty string, not an integer (3)"),
    ("{effect: deny, required_properties: {type: x, properties: null}}",
     "rules[1]: 'required_properties': 'properties': must be a non-empty list of strings, "
     "not null"),
    ("{effect: deny, max_resources: 1, actions: [CREATE, create]}",
     "rules[1]: 'actions': unknown action 'create'; expected some of CREATE, UPDATE, "
     "DELETE, ABANDON, ADOPT, SUSPEND, RESUME, CHECK, CANCEL, ROLLBACK, SNAPSHOT, "
     "RESTORE"),
    ("{effect: deny, max_resources: 1, message: 42}",
     "rules[1]: 'message': must be a non-empty string, not an integer (42)"),
    ("{name: null, effect: deny, max_resources: 1}",
     "rules[1]: 'name': must be a non-empty string, not null"),
    # Names identify rules in messages, so they are unique.
    ("{name: first, effect: warn, max_resources: 2}",
     "rules[1] (first): the name is already used by rules[0]"),
])
def test_each_rule_is_checked_strictly(tmp_path: Path, rule_text: str, problem: str) -> None:
    text = f"rules:\n  - {{name: first, effect: deny, max_resources: 1}}\n  - {rule_text}\n"

    assert load_error(tmp_path, text) == problem


def test_every_change_kind_window_and_default_loads(tmp_path: Path) -> None:
    rules = load_text(tmp_path, """\
        rules:
          - {name: keep, effect: deny, protect: {}}
          - name: keep-tagged
            effect: soft
            protect:
              changes: [DELETE, UPDATE]
              resources: {types: ["OS::Trove::*"], names: [db], tags: [protected],
                          metadata: [keep]}
          - {name: few, effect: warn, max_changes: {limit: 5, changes: [REPLACE]}}
          - {name: deletes, effect: deny, actions: [DELETE, ABANDON], any_operation: true,
             tree_scope: root}
          - name: freeze
            effect: deny
            actions: [CREATE, UPDATE, DELETE]
            during:
              - {days: [Sat, Fri], from: "22:00", to: "5:59", timezone: Europe/Paris}
              - {days: [Sun]}
              - {from: "12:00", to: "12:59"}
              - {start: 2024-12-20, end: "2025-01-03 08:00"}
              - {start: "2025-03-01T18:00", end: 2025-03-02, timezone: UTC}
            protect: {changes: [CREATE, UPDATE, REPLACE, DELETE]}
        """)

    utc = datetime.UTC
    assert rules == (
        Rule("keep", "deny", Protect(), CHANGE_ACTIONS),
        Rule("keep-tagged", "soft", Protect(
            changes=(UPDATE, DELETE),  # in the vocabulary's order
            resources=Selector(types=("OS::Trove::*",), names=("db",), tags=("protected",),
                               metadata=("keep",)))),
        Rule("few", "warn", MaxChanges(5, changes=(REPLACE,))),
        Rule("deletes", "deny", AnyOperation(), frozenset({"DELETE", "ABANDON"}),
             tree_scope="root"),
        Rule("freeze", "deny", Protect(changes=CHANGES),
             frozenset({"CREATE", "UPDATE", "DELETE"}), during=(
                 Weekly(days=(4, 5), start=22 * 60, end=5 * 60 + 59, timezone="Europe/Paris"),
                 Weekly(days=(6,)),
                 Weekly(start=12 * 60, end=12 * 60 + 59),
                 Period(datetime.datetime(2024, 12, 20, tzinfo=utc),
                        datetime.datetime(2025, 1, 3, 8, 1, tzinfo=utc)),
                 Period(datetime.datetime(2025, 3, 1, 18, 0, tzinfo=utc),
                        datetime.datetime(2025, 3, 3, tzinfo=utc)),
             )),
    )
    assert rules[1].actions == CHANGE_ACTIONS
    assert rules[2].actions == CHANGE_ACTIONS


@pytest.mark.parametrize(("rule_text", "problem"), [
    # Changes and the resources selected.
    ("{effect: deny, protect: {changes: [REPLACE, NONE]}}",
     "rules[1]: 'protect': 'changes': unknown change 'NONE'; expected some of CREATE, UPDATE, "
     "REPLACE, DELETE"),
    ("{effect: deny, protect: {changes: REPLACE}}",
     "rules[1]: 'protect': 'changes': must be a non-empty list of strings, "
     "not a string ('REPLACE')"),
    ("{effect: deny, protect: [REPLACE]}",
     "rules[1]: 'protect': must be a mapping with changes, resources, not a list (['REPLACE'])"),
    ("{effect: deny, protect: {resources: {}}}",
     "rules[1]: 'protect': 'resources': give some of types, names, tags, metadata, or leave "
     "'resources' out to select every resource"),
    ("{effect: deny, protect: {resources: {tag: [protected]}}}",
     "rules[1]: 'protect': 'resources': unknown key 'tag'; did you mean 'tags'?"),
    ("{effect: deny, protect: {resources: {types: 'OS::Trove::*'}}}",
     "rules[1]: 'protect': 'resources': 'types': must be a non-empty list of strings, "
     "not a string ('OS::Trove::*')"),
    ("{effect: deny, max_changes: {changes: [DELETE]}}",
     "rules[1]: 'max_changes': 'limit' is missing"),
    ("{effect: deny, max_changes: {limit: -1}}",
     "rules[1]: 'max_changes': 'limit': must be a whole number of 0 or more, "
     "not an integer (-1)"),
    ("{effect: deny, any_operation: true}",
     "rules[1]: 'any_operation' needs 'actions': the stack actions it applies to"),
    ("{effect: deny, any_operation: true, actions: [DELETE], tree_scope: top}",
     "rules[1]: 'tree_scope': must be one of every, root, not a string ('top')"),
    ("{effect: deny, actions: [DELETE], any_operation: false}",
     "rules[1]: 'any_operation': must be true (to turn the rule off, remove it), "
     "not a boolean (False)"),
    # Time windows.
    ("{effect: deny, max_resources: 1, during: {days: [Fri]}}",
     "rules[1]: 'during': must be a non-empty list of windows, not a mapping "
     "({'days': ['Fri']})"),
    ("{effect: deny, max_resources: 1, during: [{}]}",
     "rules[1]: 'during'[0]: give 'days' and/or 'from' and 'to' for a weekly window, or "
     "'start' and 'end' for a period"),
    ("{effect: deny, max_resources: 1, during: [{day: [Fri]}]}",
     "rules[1]: 'during'[0]: unknown key 'day'; did you mean 'days'?"),
    ("{effect: deny, max_resources: 1, during: [{days: [Friday]}]}",
     "rules[1]: 'during'[0]: 'days': unknown day 'Friday'; expected some of Mon, Tue, Wed, "
     "Thu, Fri, Sat, Sun"),
    ("{effect: deny, max_resources: 1, during: [{from: 16:00, to: '23:59'}]}",
     "rules[1]: 'during'[0]: 'from': must be a time \"HH:MM\" in quotes, not an integer "
     "(960); YAML reads an unquoted 16:00 as a number"),
    ("{effect: deny, max_resources: 1, during: [{from: '16h', to: '24:00'}]}",
     "rules[1]: 'during'[0]: 'from': must be a time \"HH:MM\" (00:00 to 23:59), "
     "not a string ('16h')"),
    ("{effect: deny, max_resources: 1, during: [{from: '16:00', to: '24:00'}]}",
     "rules[1]: 'during'[0]: 'to': must be a time \"HH:MM\" (00:00 to 23:59), "
     "not a string ('24:00')"),
    ("{effect: deny, max_resources: 1, during: [{days: [Fri], from: '16:00'}]}",
     "rules[1]: 'during'[0]: give both 'from' and 'to', or neither for whole days"),
    ("{effect: deny, max_resources: 1, during: [{days: [Fri], timezone: Mars/Olympus}]}",
     "rules[1]: 'during'[0]: 'timezone': unknown time zone 'Mars/Olympus'; give an IANA "
     "name such as Europe/Paris, or UTC"),
    ("{effect: deny, max_resources: 1, during: [{days: [Fri], start: 2025-01-01}]}",
     "rules[1]: 'during'[0]: a window is weekly (days, from, to) or a period (start, end), "
     "not both"),
    ("{effect: deny, max_resources: 1, during: [{start: 2025-01-01}]}",
     "rules[1]: 'during'[0]: 'end' is missing; a period needs 'start' and 'end'"),
    ("{effect: deny, max_resources: 1, during: [{start: 2025-01-02, end: 2025-01-01}]}",
     "rules[1]: 'during'[0]: 'end' is before 'start'"),
    ("{effect: deny, max_resources: 1, during: [{start: 2025-01-01, end: '2025-01-02 8h'}]}",
     "rules[1]: 'during'[0]: 'end': must be a date \"YYYY-MM-DD\" or a date and time "
     "\"YYYY-MM-DD HH:MM\", not a string ('2025-01-02 8h')"),
    ("{effect: deny, max_resources: 1, during: [{start: 2025-01-01 08:00:00, end: 2025-01-02}]}",
     "rules[1]: 'during'[0]: 'start': write a date, or a date and time \"YYYY-MM-DD HH:MM\" "
     "in quotes (its time zone is 'timezone'), not a date and time (2025-01-01 08:00:00)"),
])
def test_change_rules_and_windows_are_checked_strictly(
    tmp_path: Path, rule_text: str, problem: str
) -> None:
    text = f"rules:\n  - {{name: first, effect: deny, max_resources: 1}}\n  - {rule_text}\n"

    assert load_error(tmp_path, text) == problem


def test_the_example_file_loads_and_judges(tmp_path: Path) -> None:
    rules = load_rules(str(EXAMPLE))

    kinds = {type(r.check) for r in rules}
    assert kinds == {MaxResources, MaxCount, AllowedTypes, DeniedTypes, RequiredProperties,
                     RequiredTags, Protect, MaxChanges, AnyOperation}
    assert {r.effect for r in rules} == {"deny", "soft", "warn"}
    assert any(r.during for r in rules)
    good = stack(resource("web", SERVER, security_groups=["default"]),
                 resource("net", "OS::Neutron::Net"), tags=("owner=web-team",))
    assert evaluate(rules, good, "CREATE", NOON) == []
    bad = stack(resource("web", SERVER), resource("db", "OS::Trove::Instance"),
                resource("fip", "OS::Neutron::FloatingIP"))
    assert [f.rule.name for f in evaluate(rules, bad, "CREATE", NOON)] == [
        "supported-services", "no-floating-ips", "servers-need-security-groups", "owner-tag",
    ]
    # Planned changes: a database replaced, a tenant-protected server deleted, and on a
    # Saturday, the freeze.
    volume, kept = resource("db", "OS::Cinder::Volume"), servers(1, security_groups=["sg"])
    stored, target = update(
        [volume, resource("web", SERVER, tags=["protected"]), *kept], [volume, *kept],
        {"db": REPLACE, "web": DELETE, "server0": UPDATE})
    saturday = datetime.datetime(2025, 6, 7, 9, 0, tzinfo=datetime.UTC)
    assert [f.rule.name for f in evaluate(rules, stored, "UPDATE", NOON, target)] == [
        "keep-databases", "tenant-protected"]
    assert [f.rule.name for f in evaluate(rules, stored, "UPDATE", saturday, target)] == [
        "keep-databases", "tenant-protected", "friday-freeze"]
    assert [f.rule.name for f in evaluate(rules, stack(action="ABANDON"), "ABANDON", NOON)
            ] == ["abandon-needs-approval"]


def test_rules_are_frozen() -> None:
    with pytest.raises(AttributeError):
        rule(MaxResources(1)).effect = "warn"  # type: ignore[misc]
