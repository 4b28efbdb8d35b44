"""Conditions in the IR: which resources and outputs exist, which ``if`` branch is taken,
and the errors Heat gives for conditions that are wrong."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from engine.errors import InvalidTemplateReference, StackValidationFailed
from engine.ir.build import build
from engine.template.functions import GetResource, If, resolve
from engine.template.loader import load
from engine.template.parse import parse_text
from tests.unit.ir.conftest import PSEUDO, Make, lookup

HEAD = """\
heat_template_version: %(version)s
parameters:
  env: {type: string, default: prod}
  zones: {type: number, default: 1}
conditions:
  prod: {equals: [{get_param: env}, prod]}
  dev: {not: prod}
  many: {and: [prod, {not: {equals: [{get_param: zones}, 1]}}]}
"""


def template(body: str, version: str = "rocky") -> str:
    return HEAD % {"version": version} + body


def test_a_false_condition_leaves_the_resource_out(make: Make) -> None:
    text = template("resources:\n"
                    "  a: {type: Test::Plain, condition: prod}\n"
                    "  b: {type: Test::Plain, condition: dev}\n"
                    "  c: {type: Test::Plain, condition: many}\n")

    assert set(make(text).resources) == {"a"}
    assert set(make(text, {"env": "dev"}).resources) == {"b"}
    assert set(make(text, {"zones": 3}).resources) == {"a", "c"}


def test_inline_and_boolean_conditions(make: Make) -> None:
    text = template("resources:\n"
                    "  a: {type: Test::Plain, condition: {equals: [{get_param: env}, dev]}}\n"
                    "  b: {type: Test::Plain, condition: false}\n"
                    "  c: {type: Test::Plain, condition: true}\n")

    assert set(make(text).resources) == {"c"}


def test_if_takes_one_branch_and_only_its_references(make: Make) -> None:
    text = template("resources:\n"
                    "  a: {type: Test::Plain, condition: prod}\n"
                    "  b: {type: Test::Plain, condition: dev}\n"
                    "  c:\n"
                    "    type: Test::Plain\n"
                    "    properties:\n"
                    "      value: {if: [prod, {get_resource: a}, {get_resource: b}]}\n")

    stack = make(text)

    value = stack.resources["c"].properties["value"]
    assert isinstance(value, GetResource) and value.name == "a"
    assert stack.resources["c"].requires == frozenset({"a"})
    assert make(text, {"env": "dev"}).resources["c"].requires == frozenset({"b"})


def test_depends_on_a_resource_left_out_is_dropped(make: Make) -> None:
    text = template("resources:\n"
                    "  a: {type: Test::Plain, condition: dev}\n"
                    "  c: {type: Test::Plain, depends_on: [a]}\n")

    assert make(text).resources["c"].requires == frozenset()


def test_a_reference_to_a_resource_left_out_is_refused(make: Make) -> None:
    text = template("resources:\n"
                    "  a: {type: Test::Plain, condition: dev}\n"
                    "  c:\n"
                    "    type: Test::Plain\n"
                    "    properties: {value: {get_resource: a}}\n")

    with pytest.raises(InvalidTemplateReference) as caught:
        make(text)

    assert str(caught.value) == (
        'template:13 resources.c.properties.value.get_resource: The specified reference "a" '
        "(in resources.c) is incorrect.")


def test_an_output_whose_condition_is_false_is_null(make: Make) -> None:
    text = template("resources:\n"
                    "  a: {type: Test::Plain, condition: dev}\n"
                    "outputs:\n"
                    "  o: {value: {get_attr: [a, value]}, condition: dev}\n"
                    "  p: {value: {if: [prod, here, there]}}\n")

    stack = make(text)

    assert stack.outputs["o"].value is None
    assert stack.outputs["p"].value == "here"


def test_wallaby_if_without_a_false_value_leaves_the_item_out(make: Make) -> None:
    text = template("resources:\n"
                    "  c:\n"
                    "    type: Test::Anything\n"
                    "    properties:\n"
                    "      kept: {if: [prod, here]}\n"
                    "      gone: {if: [dev, here]}\n"
                    "      items: [1, {if: [dev, 2]}, 3]\n"
                    "      nested: {a: {if: [dev, x]}, b: {if: [prod, {if: [dev, y]}, z]}}\n",
                    version="wallaby")

    assert make(text).resources["c"].properties == {"kept": "here", "items": [1, 3],
                                                    "nested": {}}


def test_if_with_two_arguments_needs_wallaby(make: Make) -> None:
    text = template("resources:\n"
                    "  c: {type: Test::Anything, properties: {x: {if: [prod, here]}}}\n")

    with pytest.raises(StackValidationFailed) as caught:
        make(text)

    assert caught.value.message == ('Arguments to "if" must be of the form: '
                                    "[condition_name, value_if_true, value_if_false]")


@pytest.mark.parametrize(("body", "where", "message"), [
    ("resources:\n  a: {type: Test::Plain, condition: nope}\n",
     "template:10 resources.a.condition", 'Invalid condition "nope"'),
    ("outputs:\n  o: {value: 1, condition: nope}\n",
     "template:10 outputs.o.condition", 'Invalid condition "nope"'),
    ("resources:\n  a: {type: Test::Anything, properties: {x: {if: [nope, 1, 2]}}}\n",
     "template:10 resources.a.properties.x.if[0]", 'Invalid condition "nope"'),
])
def test_an_unknown_condition_is_refused_where_it_is_named(
        make: Make, body: str, where: str, message: str) -> None:
    with pytest.raises(StackValidationFailed) as caught:
        make(template(body))

    assert (str(caught.value.location), caught.value.message) == (where, message)


@pytest.mark.parametrize(("conditions", "message"), [
    ("  c: prod_env\n", 'The definition of condition "c" is invalid: prod_env'),
    ("  c: {get_attr: [a, b]}\n", 'The function "get_attr" is invalid in this context'),
    ("  c: {equals: [1]}\n", 'Arguments to "equals" must be of the form: [value_1, value_2]'),
    ("  c: {and: [true]}\n", 'The minimum number of condition arguments to "and" is 2.'),
    ("  c: {get_param: env}\n", 'The definition of condition "c" is invalid: x'),
    ("  c: {not: d}\n  d: {not: c}\n", 'Circular definition for condition "c": c -> d -> c'),
])
def test_a_broken_condition_is_refused(make: Make, conditions: str, message: str) -> None:
    text = ("heat_template_version: rocky\nparameters:\n  env: {type: string, default: x}\n"
            "conditions:\n" + conditions)

    with pytest.raises(StackValidationFailed) as caught:
        make(text)

    assert caught.value.message == message


def test_conditions_need_newton(make: Make) -> None:
    with pytest.raises(StackValidationFailed,
                       match="The template section is invalid: conditions"):
        make("heat_template_version: 2016-04-08\nconditions: {}\n")


def test_a_condition_without_its_parameter_value_is_left_undecided(make: Make) -> None:
    text = ("heat_template_version: rocky\nparameters:\n  env: {type: string}\n"
            "conditions:\n  prod: {equals: [{get_param: env}, prod]}\n"
            "resources:\n  a: {type: Test::Anything, condition: prod,\n"
            "              properties: {x: {if: [prod, 1, 2]}}}\n")
    from engine.ir.build import build
    from engine.template.loader import load
    from engine.template.parse import parse_text
    from tests.unit.ir.conftest import PSEUDO, lookup

    stack = build(load(parse_text(text)), {}, PSEUDO, lookup, require_all=False)

    assert isinstance(stack.resources["a"].properties["x"], If)


# --- a one-branch if (wallaby) that leaves its value out: Heat's function.resolve -----


class Scope:
    """Parameters known; resources answer their name as id and ``<name>.<attr>``."""

    def __init__(self, parameters: dict[str, Any]) -> None:
        self.parameters = parameters

    def param(self, name: str) -> Any:
        return self.parameters[name]

    def reference_id(self, resource: str) -> Any:
        return resource

    def attribute(self, resource: str, attribute: str, path: Sequence[Any] = ()) -> Any:
        return f"{resource}.{attribute}"

    def attributes(self, resource: str) -> Any:
        return {}


def wallaby(body: str) -> str:
    return template(body, version="wallaby")


def test_an_output_a_false_if_leaves_out_is_null_not_a_marker(make: Make) -> None:
    stack = make(wallaby("outputs:\n"
                         "  gone: {value: {if: [dev, x]}}\n"
                         "  kept: {value: {if: [prod, x]}}\n"
                         "  items: {value: [1, {if: [dev, x]}, {c: {if: [dev, y]}}]}\n"))

    values = {name: resolve(o.value, Scope({})) for name, o in stack.outputs.items()}
    assert values == {"gone": None, "kept": "x", "items": [1, {}]}
    assert json.dumps(values)  # what the finish phase stores


def test_a_function_argument_left_out_is_null_and_a_list_item_dropped(make: Make) -> None:
    stack = make(
        "heat_template_version: wallaby\n"
        "parameters:\n  p: {type: json, default: {a: {b: 1}}}\n"
        "conditions:\n  dev: false\n"
        "outputs:\n"
        "  join: {value: {list_join: [',', [a, {if: [dev, b]}, c], {if: [dev, [d]]}]}}\n"
        "  replace: {value: {str_replace: {template: $x-$y, params: {$x: X, "
        "$y: {if: [dev, Y]}}}}}\n"
        "  path: {value: {get_param: [p, a, {if: [dev, b]}]}}\n"
        "  url: {value: {make_url: {scheme: http, host: h, port: {if: [dev, 80]}}}}\n"
        "  concat: {value: {list_concat: [[a], {if: [dev, [b]]}]}}\n"
        "  delimiter: {value: {list_join: [{if: [dev, ',']}, [a]]}}\n")

    def value(name: str) -> Any:
        return resolve(stack.outputs[name].value, Scope(dict(stack.parameters)))

    assert value("join") == "a,c"
    assert value("replace") == "X-$y"  # the param is not given, so $y stays
    assert value("path") == {"b": 1}  # the path item is dropped, as Heat's list resolve
    assert value("url") == "http://h"
    assert value("concat") == ["a"]
    # A lone argument left out is null: Heat's list_join then refuses its delimiter.
    with pytest.raises(StackValidationFailed, match='"list_join" delimiter must be a string'):
        value("delimiter")


def test_resource_keys_an_if_decides(make: Make) -> None:
    stack = make(wallaby("resources:\n"
                         "  kept: {type: Test::Plain, external_id: {if: [prod, abc]}}\n"
                         "  gone: {type: Test::Plain, external_id: {if: [dev, abc]}}\n"
                         "  policy: {type: Test::Plain, update_policy: {if: [dev, {x: 1}]}}\n"))

    assert stack.resources["kept"].external_id == "abc"
    assert stack.resources["gone"].external_id is None
    assert stack.resources["policy"].update_policy == {}


def test_an_update_policy_from_a_function_is_read_from_parameters(make: Make) -> None:
    text = wallaby("resources:\n"
                   "  r: {type: Test::Plain, update_policy: {get_param: env}}\n")

    with pytest.raises(StackValidationFailed) as caught:
        make(text)

    assert caught.value.message == "Resource r update_policy type must be object"


def chained_conditions(length: int, last: str) -> str:
    """``c0: {not: c1}`` ... : each condition names the next, ``length`` deep."""
    lines = ["heat_template_version: rocky", "parameters:", "  zone: {type: string}",
             "conditions:"]
    lines += [f"  c{i}: {{not: c{i + 1}}}" for i in range(length)]
    lines += [f"  c{length}: {last}", "resources:",
              "  a: {type: Test::Plain, condition: c0}"]
    return "\n".join(lines) + "\n"


def test_a_chain_of_conditions_deeper_than_the_call_stack_is_decided(make: Make) -> None:
    """Decided in dependency order (issue 17: deciding on demand recursed once per link,
    a RecursionError and a 500 for a long chain)."""
    zone = {"zone": "z"}
    assert set(make(chained_conditions(3000, "true"), zone).resources) == {"a"}
    assert set(make(chained_conditions(3001, "true"), zone).resources) == set()
    undecided = chained_conditions(3001, "{equals: [{get_param: zone}, z]}")
    assert set(make(undecided, zone).resources) == set()
    validated = build(load(parse_text(undecided)), {}, PSEUDO, lookup, require_all=False)
    assert set(validated.resources) == {"a"}  # kept while zone has no value


def test_a_cycle_at_the_end_of_a_long_chain_of_conditions(make: Make) -> None:
    with pytest.raises(StackValidationFailed) as caught:
        make(chained_conditions(3000, "{not: c2999}"), {"zone": "z"})

    assert caught.value.message == ('Circular definition for condition "c2999": '
                                    "c2999 -> c3000 -> c2999")
    assert caught.value.location is not None and caught.value.location.line == 3004


@pytest.mark.parametrize(("policy", "parameters", "expected"), [
    ("{get_param: policy}", {"policy": "Retain"}, "Retain"),
    ("{get_param: policy}", {"policy": "retain"}, "Retain"),  # lower case, as Heat's HOT
    ("{if: [prod, Retain, Delete]}", {}, "Retain"),
    ("{if: [dev, Retain]}", {}, "Delete"),  # left out: none given, the default
])
def test_a_deletion_policy_from_parameters_is_decided_as_heat_does(
        make: Make, policy: str, parameters: dict[str, str], expected: str) -> None:
    text = wallaby(f"resources:\n  r: {{type: Test::Plain, deletion_policy: {policy}}}\n"
                   ).replace("parameters:\n",
                             "parameters:\n  policy: {type: string, default: Delete}\n", 1)

    assert make(text, parameters).resources["r"].deletion_policy == expected


@pytest.mark.parametrize(("policy", "message"), [
    ("{get_param: env}", 'Invalid deletion policy "prod"'),
    ("{get_resource: other}", "The deletion policy may use only parameters, not other"),
    ("{a: 1, b: 2}", "Resource r deletion_policy type must be string"),
    ("{get_param: nope}", 'The specified reference "nope" (in resources.r) is incorrect.'),
])
def test_a_deletion_policy_that_names_no_policy_is_refused(make: Make, policy: str,
                                                          message: str) -> None:
    text = wallaby(f"resources:\n  other: {{type: Test::Plain}}\n"
                   f"  r: {{type: Test::Plain, deletion_policy: {policy}}}\n")

    with pytest.raises(StackValidationFailed) as caught:
        make(text)

    assert caught.value.message == message
    assert str(caught.value.location).startswith("template:")
