"""engine.ir.build: types, references, properties and cycles checked before anything runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from engine.errors import (
    CircularDependency,
    InvalidTemplateReference,
    Location,
    ResourceTypeNotFound,
    StackValidationFailed,
    UnknownUserParameter,
    UserParameterMissing,
)
from engine.ir.build import build, build_from_document, properties_for_runtime, pseudo_parameters
from engine.ir.model import ResourceNode
from engine.schema import CustomCheck
from engine.template.functions import Deferred, GetAttr
from engine.template.loader import load
from engine.template.parse import document, parse_text
from tests.unit.ir.conftest import PSEUDO, Anything, Make, Server, lookup

STACK = """\
heat_template_version: 2018-08-31
description: servers
parameters:
  flavor: {type: string, default: m1.small}
  count: {type: number, default: 2}
resources:
  volume:
    type: Test::Plain
  server:
    type: Test::Server
    depends_on: extra
    properties:
      flavor: {get_param: flavor}
      size: {get_param: count}
      volume: {get_resource: volume}
  extra:
    type: Test::Anything
    properties:
      anything: {get_attr: [volume, value]}
outputs:
  name:
    value: {get_attr: [server, name]}
"""


def test_builds_nodes_with_implicit_and_explicit_requirements(make: Make) -> None:
    stack = make(STACK)

    assert stack.description == "servers"
    assert stack.resources["server"].requires == frozenset({"extra", "volume"})
    assert stack.resources["extra"].requires == frozenset({"volume"})
    assert stack.resources["volume"].requires == frozenset()
    assert stack.resources["server"].type_name == "Test::Server"
    assert str(stack.resources["server"].location) == "template:9 resources.server"
    assert isinstance(stack.outputs["name"].value, GetAttr)


def test_parameters_are_typed_and_include_pseudo_parameters(make: Make) -> None:
    stack = make(STACK, {"count": "5"})

    assert stack.parameters == {**PSEUDO, "flavor": "m1.small", "count": 5}
    assert set(stack.parameter_schemas) == {"flavor", "count"}


def test_dependents_are_the_inverse_of_requires(make: Make) -> None:
    assert make(STACK).dependents() == {
        "volume": frozenset({"server", "extra"}),
        "extra": frozenset({"server"}),
        "server": frozenset(),
    }


def test_a_pseudo_parameter_can_be_referenced(make: Make) -> None:
    stack = make("heat_template_version: rocky\nresources:\n  r:\n    type: Test::Plain\n"
                 "    properties: {value: {get_param: 'OS::stack_name'}}\n")

    assert "r" in stack.resources


# A template refused as a whole: the error's class and its message, which names the line
# and the path. Each id is the name the case had as a test of its own.
REFUSED = [
    pytest.param("""\
heat_template_version: 2018-08-31
resources:
  a:
    type: Test::Plain
  b:
    description: nothing here exists
    type: OS::Nope
""", ResourceTypeNotFound,
        "template:7 resources.b.type: The Resource Type (OS::Nope) could not be found.",
        id="unknown_resource_type_names_line_and_path"),
    pytest.param(
        "heat_template_version: rocky\nresources:\n  a:\n    type: Test::Plain\n"
        "    properties:\n      value: {get_resource: ghost}\n", InvalidTemplateReference,
        'template:6 resources.a.properties.value.get_resource: The specified reference '
        '"ghost" (in resources.a) is incorrect.',
        id="reference_to_a_missing_resource"),
    pytest.param(
        "heat_template_version: rocky\nresources:\n  a:\n    type: Test::Plain\n"
        "    properties:\n      value: {get_param: nope}\n", InvalidTemplateReference,
        'template:6 resources.a.properties.value.get_param: The specified reference '
        '"nope" (in resources.a) is incorrect.',
        id="reference_to_a_missing_parameter"),
    pytest.param(
        "heat_template_version: rocky\nresources:\n  a:\n    type: Test::Plain\n"
        "    depends_on: [ghost]\n", StackValidationFailed,
        'template:5 resources.a.depends_on: "ghost" (in resources.a.depends_on) is not a '
        "resource in the template",
        id="depends_on_a_missing_resource"),
    pytest.param(
        "heat_template_version: rocky\nresources:\n  r1:\n    type: Test::Plain\n"
        "outputs:\n  bad:\n    value: {get_attr: [r1, nope]}\n", StackValidationFailed,
        "template:7 outputs.bad.value.get_attr: The Referenced Attribute (r1 nope) is "
        "incorrect.",
        id="bad_get_attr_attribute_in_an_output"),
    pytest.param(
        "heat_template_version: rocky\nresources:\n  a:\n    type: Test::Plain\n"
        "    properties:\n      valeu: x\n", StackValidationFailed,
        "template:6 resources.a.properties.valeu: Unknown Property valeu",
        id="unknown_property"),
    pytest.param(
        "heat_template_version: rocky\nresources:\n  s:\n    type: Test::Server\n"
        "    properties:\n      size: 2\n", StackValidationFailed,
        "template:5 resources.s.properties: Property flavor not assigned",
        id="missing_required_property"),
    pytest.param(
        "heat_template_version: rocky\nresources:\n  s:\n    type: Test::Server\n",
        StackValidationFailed, "template:3 resources.s: Property flavor not assigned",
        id="missing_required_property_without_a_properties_section"),
    pytest.param(
        "heat_template_version: rocky\nparameters:\n  p: {type: string, default: big}\n"
        "resources:\n  s:\n    type: Test::Server\n"
        "    properties:\n      flavor: f\n      size: {get_param: p}\n", StackValidationFailed,
        "template:9 resources.s.properties.size: Property error: size: Value 'big' is not an "
        "integer",
        id="a_known_value_of_the_wrong_type"),
    pytest.param(
        "heat_template_version: rocky\nparameters:\n  p: {type: json, default: {}}\n"
        "resources:\n  s:\n    type: Test::Server\n"
        "    properties:\n"
        "      flavor: {str_replace: {template: {get_param: p}, params: {}}}\n",
        StackValidationFailed,
        'template:8 resources.s.properties.flavor.str_replace: "str_replace" template must be '
        "a string",
        id="an_evaluation_error_in_a_known_value"),
    pytest.param("""\
heat_template_version: rocky
resources:
  b:
    type: Test::Plain
    properties:
      value: {get_resource: a}
  a:
    type: Test::Plain
    depends_on: b
""", CircularDependency, "template:7 resources.a: Circular Dependency Found: a -> b -> a",
        id="cycle_names_its_path"),
]


@pytest.mark.parametrize(("text", "error", "message"), REFUSED)
def test_a_refused_template_names_line_and_path(make: Make, text: str, error: type[Exception],
                                                message: str) -> None:
    with pytest.raises(error) as caught:
        make(text)

    assert str(caught.value) == message


# A template or parameter values refused: the error's class and a pattern its message
# matches.
REFUSED_MATCHING = [
    pytest.param(
        "heat_template_version: rocky\noutputs:\n  o:\n    value: {get_resource: r9}\n", {},
        InvalidTemplateReference, r'"r9" \(in outputs\.o\) is incorrect',
        id="output_referencing_a_missing_resource"),
    pytest.param(
        "heat_template_version: rocky\nresources:\n  s:\n    type: Test::Server\n"
        "    properties:\n      flavor: null\n", {},
        StackValidationFailed, "Property flavor not assigned",
        id="a_required_property_set_to_null_is_not_assigned"),
    pytest.param(
        "heat_template_version: rocky\nparameters:\n  p: {type: string}\n", {},
        UserParameterMissing, r"The Parameter \(p\) was not provided\.",
        id="missing_parameter_value"),
    pytest.param(
        "heat_template_version: rocky\n", {"x": 1},
        UnknownUserParameter, r"The Parameter \(x\) was not defined in template\.",
        id="unknown_parameter_value"),
    pytest.param(
        "heat_template_version: rocky\nresources:\n  a:\n    type: Test::Plain\n"
        "    properties: {value: {get_attr: [a, value]}}\n", {},
        CircularDependency, "Circular Dependency Found: a -> a$",
        id="self_reference_is_a_cycle"),
]


@pytest.mark.parametrize(("text", "values", "error", "pattern"), REFUSED_MATCHING)
def test_a_refused_template_says_why(make: Make, text: str, values: dict[str, Any],
                                     error: type[Exception], pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        make(text, values)


def test_any_attribute_of_a_type_that_allows_unknown_ones(make: Make) -> None:
    text = ("heat_template_version: rocky\nresources:\n  t:\n    type: Test::Anything\n"
            "outputs:\n  o:\n    value: {get_attr: [t, whatever, deep]}\n")

    assert make(text).outputs["o"].name == "o"


def test_unknown_properties_of_a_type_that_allows_them(make: Make) -> None:
    text = ("heat_template_version: rocky\nresources:\n  a:\n    type: Test::Anything\n"
            "    properties: {free: form, n: 1}\n")

    assert make(text).resources["a"].properties == {"free": "form", "n": 1}


def test_an_optional_property_set_to_null_takes_its_default(make: Make) -> None:
    text = ("heat_template_version: rocky\nresources:\n  s:\n    type: Test::Server\n"
            "    properties:\n      flavor: f\n      size: null\n")

    node = make(text).resources["s"]

    assert properties_for_runtime(node, Server, RuntimeScope())["size"] == 1


def test_values_that_depend_on_resources_are_checked_later(make: Make) -> None:
    text = ("heat_template_version: rocky\nresources:\n  v:\n    type: Test::Plain\n"
            "  s:\n    type: Test::Server\n"
            "    properties:\n      flavor: f\n      size: {get_attr: [v, value]}\n")

    assert make(text).resources["s"].requires == frozenset({"v"})


def test_errors_are_reported_together(make: Make) -> None:
    text = """\
heat_template_version: rocky
resources:
  a:
    type: OS::Nope
  b:
    type: Test::Plain
    properties:
      value: {get_resource: ghost}
      extra: 1
outputs:
  o:
    value: {get_attr: [b, nope]}
"""
    with pytest.raises(ResourceTypeNotFound) as caught:
        make(text)

    assert str(caught.value) == (
        "template:4 resources.a.type: The Resource Type (OS::Nope) could not be found. "
        "(and 3 more: "
        'template:8 resources.b.properties.value.get_resource: The specified reference '
        '"ghost" (in resources.b) is incorrect.; '
        "template:9 resources.b.properties.extra: Unknown Property extra; "
        "template:12 outputs.o.value.get_attr: The Referenced Attribute (b nope) is incorrect.)"
    )
    assert caught.value.args == (str(caught.value),)


def test_at_most_three_further_errors_are_spelled_out(make: Make) -> None:
    resources = "".join(f"  r{i}:\n    type: OS::Nope{i}\n" for i in range(6))

    with pytest.raises(ResourceTypeNotFound) as caught:
        make(f"heat_template_version: rocky\nresources:\n{resources}")

    message = str(caught.value)
    assert "(and 5 more: " in message
    assert "OS::Nope3" in message
    assert "OS::Nope4" not in message


def test_cycles_are_looked_for_only_in_an_otherwise_valid_template(make: Make) -> None:
    text = ("heat_template_version: rocky\nresources:\n  a:\n    type: Test::Plain\n"
            "    depends_on: [a, ghost]\n")

    with pytest.raises(StackValidationFailed) as caught:
        make(text)

    assert not isinstance(caught.value, CircularDependency)
    assert "(and" not in str(caught.value)


def test_build_from_document() -> None:
    doc = document({"heat_template_version": "2018-08-31",
                    "resources": {"r": {"type": "Test::Plain"}}})

    stack = build_from_document(doc, {}, PSEUDO, lookup)

    assert list(stack.resources) == ["r"]


def test_pseudo_parameters() -> None:
    assert pseudo_parameters("sid", "s name", "tid") == {
        "OS::stack_id": "sid", "OS::stack_name": "s name", "OS::project_id": "tid",
        "AWS::StackId": "arn:openstack:heat::tid:stacks/s%20name/sid",
        "AWS::StackName": "s name", "AWS::Region": "ap-southeast-1"}


# --- properties at run time --------------------------------------------------------------


class RuntimeScope:
    """Live values, as the worker has them once the resources it needs exist."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        self.params = params or {}

    def param(self, name: str) -> Any:
        return self.params[name]

    def reference_id(self, resource: str) -> Any:
        return f"{resource}-id"

    def attribute(self, resource: str, attribute: str, path: Sequence[Any] = ()) -> Any:
        raise Deferred(resource)


def test_properties_for_runtime_evaluates_types_and_fills_defaults(make: Make) -> None:
    stack = make(STACK)

    props = properties_for_runtime(stack.resources["server"], Server,
                                   RuntimeScope({"flavor": "m1.tiny", "count": "3"}))

    assert props == {"flavor": "m1.tiny", "size": 3, "volume": "volume-id", "tags": []}


def test_properties_for_runtime_pins_errors_to_the_resource() -> None:
    node = ResourceNode(name="s", type_name="Test::Server", properties={"size": "x"},
                        requires=frozenset(), metadata={}, description="",
                        location=Location("resources.s", 12))

    with pytest.raises(StackValidationFailed) as caught:
        properties_for_runtime(node, Server, RuntimeScope())

    assert str(caught.value) == (
        "template:12 resources.s.properties: Property error: Property flavor not assigned"
    )


class Attributes(RuntimeScope):
    """Every attribute is ``value``."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value

    def attribute(self, resource: str, attribute: str, path: Sequence[Any] = ()) -> Any:
        return self.value


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


WRAPPING = ("heat_template_version: rocky\nresources:\n  a:\n    type: Test::Anything\n"
            "  b:\n    type: Test::Anything\n    properties:\n      wrapped: "
            # As deep as a template may be: get_attr's own arguments are at 64.
            + "[" * 57 + "{get_attr: [a, value]}" + "]" * 57 + "\n")


def test_a_value_as_deep_as_a_template_with_a_json_parameter_in_it_runs(make: Make) -> None:
    node = make(WRAPPING).resources["b"]

    props = properties_for_runtime(node, Anything, Attributes(nested(64)))

    assert props["wrapped"] == nested(121)


def test_a_value_get_attr_wraps_past_that_fails_its_resource(make: Make) -> None:
    # Each resource of a chain could wrap the last one's value in 57 more levels: without
    # a bound a stack grows a value no walk of it survives.
    node = make(WRAPPING).resources["b"]

    with pytest.raises(StackValidationFailed) as caught:
        properties_for_runtime(node, Anything, Attributes(nested(72)))

    assert str(caught.value) == ("template:5 resources.b.properties: Property error: "
                                 "wrapped: the value nests deeper than 128 levels")


# --- custom constraints --------------------------------------------------------------------


class EvenLength(CustomCheck):
    def check(self, value: Any) -> str | None:
        return None if len(str(value)) % 2 == 0 else self.refused(value, "odd length")


CUSTOM = ("heat_template_version: rocky\nparameters:\n"
          "  p:\n    type: string\n    constraints: [{custom_constraint: even}]\n")


def build_with(text: str, values: dict[str, Any], known: dict[str, CustomCheck]) -> Any:
    return build(load(parse_text(text)), values, PSEUDO, lookup, constraints=known.__getitem__)


def test_a_custom_constraint_checks_the_value() -> None:
    assert build_with(CUSTOM, {"p": "ab"}, {"even": EvenLength()}).parameters["p"] == "ab"

    with pytest.raises(StackValidationFailed) as caught:
        build_with(CUSTOM, {"p": "abc"}, {"even": EvenLength()})

    assert caught.value.message == ("Parameter 'p' is invalid: Error validating value "
                                    "'abc': odd length")


def test_an_unregistered_custom_constraint_is_refused_where_it_is_declared() -> None:
    with pytest.raises(StackValidationFailed) as caught:
        build_with(CUSTOM, {"p": "ab"}, {})

    assert str(caught.value) == ("template:3 parameters.p: Parameter 'p' is invalid: the "
                                 'custom constraint "even" is not registered')


def test_a_chain_far_deeper_than_the_call_stack_builds(make: Make) -> None:
    """``r0`` needs ``r1`` ... ``r4999``: names in dependency order, the worst case for a
    recursive walk (issue 17); a cycle closed at its far end is still reported."""
    lines = ["heat_template_version: rocky", "resources:"]
    lines += [f"  r{i}: {{type: Test::Plain, depends_on: r{i + 1}}}" for i in range(4999)]

    ir = make("\n".join([*lines, "  r4999: {type: Test::Plain}"]) + "\n")

    assert ir.resources["r0"].requires == {"r1"} and len(ir.resources) == 5000
    with pytest.raises(CircularDependency) as caught:
        make("\n".join([*lines, "  r4999: {type: Test::Plain, depends_on: r4998}"]) + "\n")
    assert caught.value.message == "Circular Dependency Found: r4998 -> r4999 -> r4998"
