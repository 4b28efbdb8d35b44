"""engine.template.environment: parsing, environment_files merging, the type registry."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import BadRequest, InvalidBreakPointHook, InvalidRestrictedActionType
from engine.template.environment import (
    Environment,
    child_registry,
    parse_environment,
    request_environment,
    resource_hooks,
    resource_restricted_actions,
)


@pytest.mark.parametrize(("text", "message"), [
    ("foo: {}\n", 'Environment not in valid format: environment has wrong section "foo"'),
    ("parameters:\n", 'Environment not in valid format: environment has empty section '
                      '"parameters"'),
    ("[a]\n", "Environment not in valid format: The environment is not a valid YAML mapping "
              "data type."),
    ("event_sinks: {a: b}\n", 'The section "event_sinks" of environment must be a list'),
    ("resource_registry: {A: [B]}\n",
     'resource_registry entry "A" in environment must map to a type name or a template file'),
    ("parameter_merge_strategies: {p: sideways}\n",
     "Invalid merge strategy 'sideways' for parameter 'p'."),
])
def test_bad_environments_are_refused(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_environment(text)

    assert caught.value.message == message


def test_every_section_is_accepted() -> None:
    text = ("parameters: {a: 1}\nparameter_defaults: {b: 2}\n"
            "resource_registry: {'OS::Nova::Server': 'OS::Heat::None'}\n"
            "encrypted_param_names: [a]\n"
            "event_sinks: [{type: webhook, target: 'http://h/', secret: s}]\n")

    assert Environment.from_dict(parse_environment(text)).as_dict() == {
        "parameters": {"a": 1}, "parameter_defaults": {"b": 2},
        "resource_registry": {"OS::Nova::Server": "OS::Heat::None", "resources": {}},
        "encrypted_param_names": ["a"],
        "event_sinks": [{"type": "webhook", "target": "http://h/", "secret": "s"}]}


def test_request_parameters_win_over_the_environment_body() -> None:
    body = {"parameters": {"a": "top"}, "environment": {"parameters": {"a": "env", "b": "env"}}}

    assert request_environment(body, {})["parameters"] == {"a": "top", "b": "env"}


def files_body(**extra: Any) -> dict[str, Any]:
    return {"environment_files": ["one.yaml", "two.yaml"],
            "environment": {"parameters": {"ignored": True}},
            "files": {"one.yaml": "parameters: {s: a, l: x, j: {k1: 1, n: {a: 1}}}\n"
                                  "resource_registry: {A: B}\n",
                      "two.yaml": "parameters: {s: b, l: y, j: {k2: 2, n: {b: 2}}}\n"
                                  "parameter_merge_strategies: {l: merge, j: deep_merge}\n"
                                  "resource_registry: {C: D}\n"},
            **extra}


TYPES = {"s": "string", "l": "comma_delimited_list", "j": "json"}


def test_environment_files_merge_in_order_and_replace_the_body() -> None:
    env = request_environment(files_body(), TYPES)

    assert env["parameters"] == {"s": "b", "l": "x,y",
                                 "j": {"k1": 1, "k2": 2, "n": {"a": 1, "b": 2}}}
    assert env["resource_registry"] == {"A": "B", "C": "D"}


def test_environment_files_merge_on_top_of_request_parameters() -> None:
    env = request_environment(files_body(parameters={"s": "top", "t": "top"}), TYPES)

    assert (env["parameters"]["s"], env["parameters"]["t"]) == ("b", "top")


def test_an_environment_file_missing_from_files() -> None:
    with pytest.raises(BadRequest, match='The environment file "nope.yaml" is not in "files"'):
        request_environment({"environment_files": ["nope.yaml"], "files": {}}, {})


def test_a_conflicting_merge_strategy() -> None:
    body = {"environment_files": ["a", "b"],
            "files": {"a": "parameters: {l: x}\nparameter_merge_strategies: {l: merge}\n",
                      "b": "parameters: {l: y}\nparameter_merge_strategies: {l: overwrite}\n"}}

    with pytest.raises(BadRequest, match="Conflicting merge strategy 'overwrite' for "
                                         "parameter 'l' in file 'b'."):
        request_environment(body, TYPES)


def test_merging_json_text_deeper_than_a_template_is_refused() -> None:
    deep = "[" * 2000 + "]" * 2000  # past the decoder's recursion too
    body = {"environment_files": ["a", "b"],
            "files": {"a": "parameters: {j: '{}'}\n",
                      "b": f"parameters: {{j: '{deep}'}}\n"
                           "parameter_merge_strategies: {j: merge}\n"}}

    with pytest.raises(BadRequest, match="^Invalid parameter in environment j.$"):
        request_environment(body, TYPES)


def test_merging_a_boolean_is_refused() -> None:
    body = {"environment_files": ["a", "b"],
            "files": {"a": "parameters: {f: true}\n",
                      "b": "parameters: {f: false}\nparameter_merge_strategies: {f: merge}\n"}}

    with pytest.raises(BadRequest, match="Invalid merge strategy 'merge' for parameter 'f'."):
        request_environment(body, {"f": "boolean"})


REGISTRY = Environment(resource_registry={
    "OS::Nova::Server": "OS::Heat::None",
    "My::Alias": "OS::Nova::Server",
    "OS::Network*": "OS::Neutron*",
    "Any::*": "OS::Heat::TestResource",
    "Loop::A": "Loop::B", "Loop::B": "Loop::A",
    "My::Provider": "provider.yaml",
    "resources": {"special": {"OS::Nova::Server": "OS::Heat::RandomString"}},
})


@pytest.mark.parametrize(("type_name", "resource", "implementation"), [
    ("OS::Nova::Server", "web", "OS::Heat::None"),
    ("OS::Nova::Server", "special", "OS::Heat::RandomString"),
    ("My::Alias", "web", "OS::Heat::None"),
    ("OS::Network::Port", "p", "OS::Neutron::Port"),
    ("Any::Thing", "t", "OS::Heat::TestResource"),
    ("OS::Heat::Value", "v", "OS::Heat::Value"),
    ("Loop::A", "x", "Loop::A"),
])
def test_resource_registry(type_name: str, resource: str, implementation: str) -> None:
    assert REGISTRY.resolve_type(type_name, resource) == implementation


def test_a_type_mapped_to_a_template_resolves_to_the_file() -> None:
    assert REGISTRY.resolve_type("My::Provider", "p") == "provider.yaml"


def test_a_chain_of_aliases_deeper_than_the_call_stack_resolves() -> None:
    registry = {f"My::T{i}": f"My::T{i + 1}" for i in range(5000)}

    assert Environment(resource_registry=registry).resolve_type("My::T0", "r") == "My::T5000"
    registry["My::T5000"] = "My::T4000"
    assert Environment(resource_registry=registry).resolve_type("My::T0", "r") == "My::T4000"


HOOK_TYPES = ("('pre-create', 'pre-update', 'pre-delete', 'post-create', 'post-update', "
              "'post-delete')")


@pytest.mark.parametrize(("hooks", "shown"), [
    ("pre-bogus", "pre-bogus"),
    (["pre-create", "later"], "['pre-create', 'later']"),
    ({"a": 1}, "{'a': 1}"),
])
def test_hooks_that_name_no_hook_type_are_refused_with_heats_message(
        hooks: Any, shown: str) -> None:
    nested = {"resource_registry": {"resources": {"outer": {"inner": {"hooks": hooks}}}}}

    with pytest.raises(InvalidBreakPointHook) as caught:
        parse_environment(nested)

    assert caught.value.message == (f'Invalid hook type "{shown}" for resource breakpoint, '
                                    f"acceptable hook types are: {HOOK_TYPES}")


def test_hooks_match_resource_names_exactly_and_by_wildcard() -> None:
    registry = parse_environment(
        "resource_registry:\n  resources:\n    web: {hooks: [pre-create, post-update]}\n"
        "    'w*': {hooks: pre-delete}\n    '*_db': {hooks: pre-update}\n"
        "    nested: {inner: {hooks: pre-create}}\n")["resource_registry"]

    assert resource_hooks(registry, "web") == {"pre-create", "post-update", "pre-delete"}
    assert resource_hooks(registry, "main_db") == {"pre-update"}
    assert resource_hooks(registry, "Web") == frozenset()  # case-sensitive, as Heat
    assert resource_hooks(registry, "nested") == frozenset()  # the child's, not its own


RESTRICTED_ACTIONS = "('update', 'replace')"


@pytest.mark.parametrize(("actions", "shown"), [
    ("delete", "delete"),
    (["update", "Replace"], "['update', 'Replace']"),
    ({"update": True}, "{'update': True}"),
])
def test_restricted_actions_that_name_no_action_are_refused_with_heats_message(
        actions: Any, shown: str) -> None:
    nested = {"resource_registry": {"resources": {"outer": {"inner": {
        "restricted_actions": actions}}}}}

    with pytest.raises(InvalidRestrictedActionType) as caught:
        parse_environment(nested)

    assert caught.value.message == (f'Invalid restricted_action type "{shown}" for resource, '
                                    f"acceptable restricted_action types are: "
                                    f"{RESTRICTED_ACTIONS}")
    assert caught.value.api_type == "InvalidRestrictedAction"


def test_restricted_actions_match_resource_names_exactly_and_by_wildcard() -> None:
    registry = parse_environment(
        "resource_registry:\n  resources:\n    web: {restricted_actions: [update, replace]}\n"
        "    'w*': {restricted_actions: replace, hooks: pre-update}\n"
        "    '*_db': {restricted_actions: update}\n    other: {restricted_actions: []}\n"
        "    nested: {inner: {restricted_actions: update}}\n")["resource_registry"]

    assert resource_restricted_actions(registry, "web") == {"update", "replace"}
    assert resource_restricted_actions(registry, "wiki") == {"replace"}
    assert resource_restricted_actions(registry, "main_db") == {"update"}
    assert resource_restricted_actions(registry, "other") == frozenset()
    assert resource_restricted_actions(registry, "Web") == frozenset()  # case-sensitive
    assert resource_restricted_actions(registry, "nested") == frozenset()  # the child's
    assert resource_restricted_actions(child_registry(registry, "nested"), "inner") == {
        "update"}
    assert resource_hooks(registry, "wiki") == {"pre-update"}


def test_a_nested_stack_inherits_the_entries_its_resource_name_matches() -> None:
    registry = {"OS::X": "OS::Y", "resources": {
        "nest*": {"inner": {"hooks": "pre-create"}, "hooks": "pre-delete"},
        "nested": {"other": {"hooks": ["post-create"]}, "OS::A": "OS::B"},
        "elsewhere": {"inner": {"hooks": "pre-update"}}}}

    child = child_registry(registry, "nested")

    assert child == {"OS::X": "OS::Y", "resources": {
        "inner": {"hooks": "pre-create"}, "other": {"hooks": ["post-create"]}}}
    assert resource_hooks(child, "inner") == {"pre-create"}
    assert child_registry(registry, "unrelated")["resources"] == {}
