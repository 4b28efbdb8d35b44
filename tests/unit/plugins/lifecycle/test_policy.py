"""The policy lifecycle plugin: each rule kind, deny and warn, actions, and the rules file."""

from __future__ import annotations

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
from engine.lifecycle.base import Denied, PluginServices, Warn
from engine.lifecycle.view import ResourceView, StackView, Unresolved, freeze
from plugins.lifecycle.policy import plugin as policy_plugin
from plugins.lifecycle.policy.evaluate import Finding, evaluate, render
from plugins.lifecycle.policy.loader import RulesFileError, load_rules
from plugins.lifecycle.policy.plugin import PolicyPlugin
from plugins.lifecycle.policy.rules import (
    DEFAULT_ACTIONS,
    AllowedTypes,
    Check,
    DeniedTypes,
    MaxCount,
    MaxResources,
    RequiredProperties,
    RequiredTags,
    Rule,
)

EXAMPLE = Path(__file__).resolve().parents[4] / "etc" / "kiln" / "policy.yaml.example"
CONTEXT = RequestContext(tenant_id="tenant-1", token_tenant_id="tenant-1", role="member")
SERVER = "OS::Nova::Server"


# --- building views -------------------------------------------------------------------


def resource(name: str, type_name: str, /, **properties: Any) -> ResourceView:
    return ResourceView(name=name, type=type_name, properties=freeze(properties),
                        metadata=freeze({}), depends_on=())


def stack(*resources: ResourceView, tags: tuple[str, ...] = (), action: str = "CREATE",
          dry_run: bool = False) -> StackView:
    return StackView(
        id="5f0e9a1c-0000-4000-8000-000000000001", name="teststack", tenant_id="tenant-1",
        action=action, status=f"{action}_IN_PROGRESS", status_reason="",
        template=freeze({}), parameters=freeze({}), environment=freeze({}),
        resources=freeze({r.name: r for r in resources}), tags=tags, dry_run=dry_run,
    )


def servers(count: int, **properties: Any) -> list[ResourceView]:
    return [resource(f"server{i}", SERVER, **properties) for i in range(count)]


def rule(check: Check, effect: str = "deny", name: str = "r", **fields: Any) -> Rule:
    return Rule(name=name, effect=effect, check=check, **fields)  # type: ignore[arg-type]


def failures(check: Check, view: StackView) -> list[str]:
    return [str(finding) for finding in evaluate([rule(check)], view, "CREATE")]


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


# --- messages -------------------------------------------------------------------------


def test_the_operators_message_follows_the_rule_name() -> None:
    finding = evaluate([rule(MaxResources(0), name="tiny", message="ask the cloud team")],
                       stack(*servers(1)), "CREATE")

    assert [str(f) for f in finding] == [
        "tiny (ask the cloud team): 1 resource, more than the limit of 0"
    ]


def test_long_lists_are_capped() -> None:
    findings = evaluate([rule(DeniedTypes((SERVER,)))], stack(*servers(8)), "CREATE")

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

    assert [f.rule.name for f in evaluate(rules, stack(*servers(1)), "CREATE")] == ["b", "a"]


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


def configured(conf: cfg.ConfigOpts, rules_file: Path | str | None = None) -> PolicyPlugin:
    plugin = PolicyPlugin()
    # configure registers the group; register first so the override has a target.
    conf.register_opts(policy_plugin.OPTS, group=policy_plugin.GROUP)
    if rules_file is not None:
        conf.set_override("rules_file", str(rules_file), group=policy_plugin.GROUP)
    plugin.configure(PluginServices(
        conf=conf, database=NoDatabase(),
        clock=lambda: datetime.datetime.now(datetime.UTC),
    ))
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


def test_policy_runs_early() -> None:
    assert PolicyPlugin().get_ordinal() == 10


def test_list_opts_gives_the_group_for_the_sample_config() -> None:
    [(group, opts)] = policy_plugin.list_opts()

    assert group == "lifecycle_policy"
    assert [opt.name for opt in opts] == ["rules_file"]


def test_a_bad_rules_file_stops_configure(conf: cfg.ConfigOpts, tmp_path: Path) -> None:
    path = write(tmp_path, "rules:\n  - {effect: block, max_resources: 1}\n")

    with pytest.raises(StartupFailed, match=f"^Policy rules file {path}: rules\\[0\\]: "
                       "unknown effect 'block'; expected one of deny, warn$"):
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
     "rules[1]: unknown key 'severity'; expected name, effect, message, actions, "
     "max_resources, max_count, allowed_types, denied_types, required_properties, "
     "required_tags"),
    ("{effect: deny, max_count: {type: x, limit: 1, per: stack}}",
     "rules[1]: 'max_count': unknown key 'per'; expected type, limit"),
    # Effect.
    ("{name: cap, effect: block, max_resources: 1}",
     "rules[1] (cap): unknown effect 'block'; expected one of deny, warn"),
    ("{effect: Deny, max_resources: 1}",
     "rules[1]: unknown effect 'Deny'; expected one of deny, warn"),
    ("{max_resources: 1}", "rules[1]: 'effect' is missing; expected one of deny, warn"),
    # Exactly one check.
    ("{name: cap, effect: deny}",
     "rules[1] (cap): no check given; add exactly one of max_resources, max_count, "
     "allowed_types, denied_types, required_properties, required_tags"),
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
     "DELETE, ABANDON, ADOPT, SUSPEND, RESUME, CHECK, CANCEL, ROLLBACK"),
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


def test_the_example_file_loads_and_judges(tmp_path: Path) -> None:
    rules = load_rules(str(EXAMPLE))

    kinds = {type(r.check) for r in rules}
    assert kinds == {MaxResources, MaxCount, AllowedTypes, DeniedTypes, RequiredProperties,
                     RequiredTags}
    good = stack(resource("web", SERVER, security_groups=["default"]),
                 resource("net", "OS::Neutron::Net"), tags=("owner=web-team",))
    assert evaluate(rules, good, "CREATE") == []
    bad = stack(resource("web", SERVER), resource("db", "OS::Trove::Instance"),
                resource("fip", "OS::Neutron::FloatingIP"))
    assert [f.rule.name for f in evaluate(rules, bad, "CREATE")] == [
        "supported-services", "no-floating-ips", "servers-need-security-groups", "owner-tag",
    ]


def test_rules_are_frozen() -> None:
    with pytest.raises(AttributeError):
        rule(MaxResources(1)).effect = "warn"  # type: ignore[misc]
