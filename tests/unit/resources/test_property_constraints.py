"""Custom constraints on resource properties: a type names a check registered under
``kiln.constraints``; the registry binds it when the type loads, and templates are
checked against it before anything runs (and again in the worker)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from engine.errors import PluginLoadFailed, StackValidationFailed
from engine.ir.build import build
from engine.resources.base import Resource
from engine.resources.registry import ResourceTypeRegistry, load_constraints
from engine.schema import LIST, MAP, STRING, Custom, Property
from engine.template.loader import load
from engine.template.parse import parse_text
from tests.unit.ir.conftest import PSEUDO


class Port(Resource):
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "address": Property(STRING, constraints=(Custom("ip_addr"),)),
        "routes": Property(LIST, schema={
            "cidr": Property(STRING, required=True, constraints=(Custom("net_cidr"),)),
        }),
        "labels": Property(MAP),
    }


class Misnamed(Resource):
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "zone": Property(LIST, schema=Property(STRING, constraints=(Custom("no_such"),))),
    }


@pytest.fixture(scope="module")
def registry() -> ResourceTypeRegistry:
    return ResourceTypeRegistry({"Lab::Port": Port}, load_constraints())


def build_text(registry: ResourceTypeRegistry, text: str, **parameters: Any) -> Any:
    return build(load(parse_text(text, "port.yaml")), parameters, PSEUDO, registry.get,
                 constraints=registry.constraint)


TEMPLATE = """\
heat_template_version: 2018-08-31
parameters:
  cidr:
    type: string
resources:
  port:
    type: Lab::Port
    properties:
      address: {address}
      routes:
        - cidr: {{get_param: cidr}}
"""


def test_valid_values_pass(registry: ResourceTypeRegistry) -> None:
    ir = build_text(registry, TEMPLATE.format(address="192.0.2.7"), cidr="10.0.0.0/24")
    assert set(ir.resources) == {"port"}


def test_a_refused_literal_names_the_property_and_line(registry: ResourceTypeRegistry
                                                       ) -> None:
    with pytest.raises(StackValidationFailed) as raised:
        build_text(registry, TEMPLATE.format(address="192.0.2.300"), cidr="10.0.0.0/24")
    message = str(raised.value)
    assert "port.yaml:9" in message
    assert "resources.port.properties.address" in message
    assert "Error validating value '192.0.2.300'" in message


def test_a_refused_parameter_value_in_a_nested_schema_is_named(
        registry: ResourceTypeRegistry) -> None:
    with pytest.raises(StackValidationFailed) as raised:
        build_text(registry, TEMPLATE.format(address="192.0.2.7"), cidr="10.0.0.0/99")
    message = str(raised.value)
    assert "port.yaml:10" in message
    assert "routes[0].cidr" in message
    assert "Error validating value '10.0.0.0/99'" in message


def test_the_loaded_type_keeps_its_name_and_describes_the_constraint(
        registry: ResourceTypeRegistry) -> None:
    bound = registry.get("Lab::Port")
    assert issubclass(bound, Port)
    assert bound.__name__ == "Port"
    described = bound.properties_schema["address"].describe()
    assert described["constraints"] == [{"custom_constraint": "ip_addr"}]
    # The plugin's own class is left as its author wrote it.
    assert Port.properties_schema["address"].constraints[0].check("x") is None


def test_a_type_with_no_custom_constraint_is_registered_as_it_is() -> None:
    class Plain(Resource):
        properties_schema: ClassVar[Mapping[str, Property]] = {"a": Property(STRING)}

    assert ResourceTypeRegistry({"Lab::Plain": Plain}).get("Lab::Plain") is Plain


def test_an_unregistered_constraint_stops_the_start() -> None:
    with pytest.raises(PluginLoadFailed) as raised:
        ResourceTypeRegistry({"Lab::Misnamed": Misnamed}, load_constraints())
    message = str(raised.value)
    assert "Lab::Misnamed" in message
    assert "'no_such'" in message
    assert "kiln.constraints" in message
