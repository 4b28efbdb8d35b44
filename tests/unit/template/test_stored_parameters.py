"""engine.template.stored_parameters: a stored template's parameters and what they hide,
HOT (``hidden``) and both CFN formats (``NoEcho``) alike, as the loader reads them; the
value each takes (given, else the environment's parameter_defaults, else the template's
default, as the IR resolves it), and a template and an environment with their hidden
entries masked."""

from __future__ import annotations

from typing import Any

import pytest

from engine.template.loader import load
from engine.template.parameters import MASK, resolve_values
from engine.template.parse import document, parse_text
from engine.template.stored_parameters import (
    hidden_names,
    masked_environment,
    masked_template,
    schemas,
    stored_hidden_values,
    stored_values,
)

HOT = """\
heat_template_version: 2018-08-31
parameters:
  password: {type: string, hidden: true}
  token: {type: string, hidden: "True", default: tok-default}
  pins: {type: comma_delimited_list, hidden: true, default: "aaaa-pin1,bbbb-pin2"}
  size: {type: number, default: 3}
  shown: {type: string, hidden: false, default: plain}
resources: {}
"""

CFN_BODY = """\
Parameters:
  Password: {Type: String, NoEcho: "true"}
  Token: {Type: String, NoEcho: true, Default: tok-default}
  Pins: {Type: CommaDelimitedList, NoEcho: "TRUE", Default: "aaaa-pin1,bbbb-pin2"}
  Size: {Type: Number, Default: 3}
  Shown: {Type: String, NoEcho: "false", Default: plain}
Resources: {}
"""
AWS = "AWSTemplateFormatVersion: '2010-09-09'\n" + CFN_BODY
HEAT_CFN = "HeatTemplateFormatVersion: '2012-12-12'\n" + CFN_BODY

SECRETS = {"hunter2", "tok-default", "aaaa-pin1,bbbb-pin2", str(["aaaa-pin1", "bbbb-pin2"]),
           "aaaa-pin1", "bbbb-pin2"}


def stored(text: str) -> Any:
    return parse_text(text).data


def test_a_hot_templates_hidden_parameters() -> None:
    assert hidden_names(stored(HOT)) == {"password", "token", "pins"}


@pytest.mark.parametrize("text", [AWS, HEAT_CFN], ids=["aws", "heat-cfn"])
def test_a_cfn_templates_noecho_parameters(text: str) -> None:
    assert hidden_names(stored(text)) == {"Password", "Token", "Pins"}


@pytest.mark.parametrize("text", [HOT, AWS, HEAT_CFN], ids=["hot", "aws", "heat-cfn"])
def test_the_stored_schemas_are_the_loaders(text: str) -> None:
    # One reading of a template's parameters: the IR's (through the loader) and the
    # stored one's agree on every schema, hidden included.
    assert schemas(stored(text)) == load(document(stored(text))).parameters


def test_a_hot_stacks_hidden_values_given_and_defaulted() -> None:
    found = stored_hidden_values(stored(HOT), {"password": "hunter2", "size": "4"}, {})

    assert set(found) == SECRETS
    assert list(found) == sorted(found, key=len, reverse=True)


@pytest.mark.parametrize("text", [AWS, HEAT_CFN], ids=["aws", "heat-cfn"])
def test_a_cfn_stacks_noecho_values_given_and_defaulted(text: str) -> None:
    found = stored_hidden_values(stored(text), {"Password": "hunter2", "Size": "4",
                                                "Shown": "seen"}, {})

    assert set(found) == SECRETS


def test_a_hot_section_in_a_cfn_template_is_not_read_nor_a_cfn_one_in_hot() -> None:
    # The version key decides which section holds the parameters.
    hot = {"heat_template_version": "2018-08-31",
           "Parameters": {"P": {"Type": "String", "NoEcho": "true"}}}
    cfn = {"AWSTemplateFormatVersion": "2010-09-09",
           "parameters": {"p": {"type": "string", "hidden": True}}}

    assert hidden_names(hot) == hidden_names(cfn) == set()


def test_a_parameter_that_no_longer_reads_stands_as_hidden() -> None:
    # Checked when stored; should it fail now, what it may hide is masked, not shown, and
    # the others are read as ever.
    template = {"AWSTemplateFormatVersion": "2010-09-09", "Parameters": {
        "Odd": {"Type": "Nonsense", "Default": "odd-default"},
        "Shown": {"Type": "String", "Default": "plain"}}}

    assert hidden_names(template) == {"Odd"}
    assert stored_hidden_values(template, {"Shown": "seen"}, {}) == ("odd-default",)
    assert stored_hidden_values(template, {"Odd": "given"}, {}) == ("given",)
    assert stored_hidden_values(template, {}, {"parameter_defaults": {"Odd": "env"}}) == (
        "env",)


@pytest.mark.parametrize("template", [None, "text", {}, {"parameters": ["a"]},
                                      {"AWSTemplateFormatVersion": "2010-09-09",
                                       "Parameters": None}])
def test_no_parameters_hide_nothing(template: Any) -> None:
    assert hidden_names(template) == set()
    assert stored_hidden_values(template, {"a": "b"}, {"parameter_defaults": {"a": "c"}}) == ()
    assert stored_values(template, {"a": "b"}, None) == {}


# --- the values a stored stack takes --------------------------------------------------


def test_a_value_is_given_else_the_environments_default_else_the_templates() -> None:
    template = stored(HOT)
    environment = {"parameter_defaults": {"password": "env-pw", "token": "env-tok",
                                          "size": None, "undeclared": "x"}}

    values = stored_values(template, {"password": "given-pw", "shown": None}, environment)

    # A null counts as not given, in the parameters as in the parameter_defaults.
    assert values == {"password": "given-pw", "token": "env-tok",
                      "pins": "aaaa-pin1,bbbb-pin2", "size": 3, "shown": "plain"}


@pytest.mark.parametrize("given, defaults", [
    ({"size": "4"}, {"password": "env-pw", "size": 5}),
    ({"password": "given-pw", "token": None}, {"token": "env-tok", "pins": "x,y"}),
    ({}, {"password": "env-pw", "shown": "env-shown"}),
])
def test_the_stored_values_are_those_the_ir_converts(given: dict[str, Any],
                                                      defaults: dict[str, Any]) -> None:
    # One order: what the IR converts (resolve_values) is what a stored stack takes.
    template = stored(HOT)
    declared = load(document(template)).parameters

    raw = stored_values(template, given, {"parameter_defaults": defaults})

    assert {name: declared[name].convert(value) for name, value in raw.items()} == (
        resolve_values(declared, given, defaults=defaults))


@pytest.mark.parametrize("text, name", [(HOT, "password"), (AWS, "Password"),
                                        (HEAT_CFN, "Password")], ids=["hot", "aws", "heat-cfn"])
def test_a_hidden_value_given_only_in_the_parameter_defaults_is_a_secret(
        text: str, name: str) -> None:
    found = stored_hidden_values(stored(text), {},
                                 {"parameter_defaults": {name: "leaky-secret"}})

    assert "leaky-secret" in found
    assert set(found) == SECRETS - {"hunter2"} | {"leaky-secret"}


def test_a_hidden_json_value_from_the_parameter_defaults_hides_its_leaves() -> None:
    template = {"heat_template_version": "2018-08-31",
                "parameters": {"conf": {"type": "json", "hidden": True}}}

    found = stored_hidden_values(
        template, {}, {"parameter_defaults": {"conf": {"key": "leaf-secret-value"}}})

    assert "leaf-secret-value" in found


def test_an_overridden_default_is_no_value_of_the_stack() -> None:
    # Given wins: the parameter_defaults entry is not what the stack takes (and is masked
    # by name where the environment is shown, below).
    found = stored_hidden_values(stored(HOT), {"password": "hunter2"},
                                 {"parameter_defaults": {"password": "shadowed"}})

    assert "hunter2" in found
    assert "shadowed" not in found


# --- an environment shown ---------------------------------------------------------------


@pytest.mark.parametrize("text, hidden, shown", [(HOT, "password", "shown"),
                                                 (AWS, "Password", "Shown")],
                         ids=["hot", "aws"])
def test_an_environments_hidden_entries_are_masked_by_name(text: str, hidden: str,
                                                           shown: str) -> None:
    environment = {"parameters": {hidden: "given", shown: "seen"},
                   "parameter_defaults": {hidden: "shadowed", shown: "seen too"},
                   "resource_registry": {"OS::X": "OS::Y"}}

    masked = masked_environment(stored(text), environment)

    assert masked == {"parameters": {hidden: MASK, shown: "seen"},
                      "parameter_defaults": {hidden: MASK, shown: "seen too"},
                      "resource_registry": {"OS::X": "OS::Y"}}
    assert environment["parameters"][hidden] == "given"  # a copy: the stored one stays


def test_an_environment_without_those_sections_is_shown_as_it_is() -> None:
    assert masked_environment(stored(HOT), {"event_sinks": []}) == {"event_sinks": []}


# --- a template shown -------------------------------------------------------------------


@pytest.mark.parametrize("text, key, default", [(HOT, "parameters", "default"),
                                                (AWS, "Parameters", "Default"),
                                                (HEAT_CFN, "Parameters", "Default")],
                         ids=["hot", "aws", "heat-cfn"])
def test_a_templates_hidden_defaults_are_masked_by_name(text: str, key: str,
                                                        default: str) -> None:
    # By name, not by value: a default the stack's given value overrides is no value it
    # takes, so no secrets list holds it.
    template = stored(text)

    masked = masked_template(template)

    assert {name: body.get(default) for name, body in masked[key].items()} == {
        name.title() if key == "Parameters" else name: value for name, value in {
            "password": None, "token": MASK, "pins": MASK, "size": 3,
            "shown": "plain"}.items()}
    assert {k: v for k, v in masked.items() if k != key} == {
        k: v for k, v in template.items() if k != key}
    assert template[key]["Token" if key == "Parameters" else "token"][default] == (
        "tok-default")  # a copy: the stored one stays


def test_a_null_default_stays_null_and_no_hidden_parameter_changes_nothing() -> None:
    # A mask in place of nothing would be a value an adopt of the data refuses.
    template = {"heat_template_version": "2018-08-31",
                "parameters": {"pw": {"type": "string", "hidden": True, "default": None}}}

    shown = {"heat_template_version": "2018-08-31",
             "parameters": {"user": {"type": "string", "default": "alice"}}}

    assert masked_template(template) == template
    assert masked_template(shown) == shown


@pytest.mark.parametrize("template", [None, "text", {}, {"parameters": ["a"]}])
def test_a_template_without_parameters_is_shown_as_it_is(template: Any) -> None:
    assert masked_template(template) == template
