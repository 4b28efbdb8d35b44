"""A group holds no more members than a stack may hold resources
(``[api] max_resources_per_stack`` through the evaluation budget): a count of 10**9 is
refused at its line when the API knows it, and fails the resource when only the worker
does, in both cases before a single member is built."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from engine import budget
from engine.errors import StackValidationFailed
from engine.ir.build import build, properties_for_runtime, pseudo_parameters
from engine.resources.registry import ResourceTypeRegistry
from engine.template.functions import Deferred
from engine.template.loader import load
from engine.template.parse import document
from plugins.resources.resource_group import ResourceChain, ResourceGroup

GROUP = """heat_template_version: 2021-04-16
parameters:
  n: {type: number, default: 2}
resources:
  source: {type: OS::Heat::Value, properties: {value: 3}}
  g:
    type: OS::Heat::ResourceGroup
    properties:
      count: COUNT
      resource_def: {type: OS::Heat::None}
"""


@pytest.fixture(scope="module")
def registry() -> ResourceTypeRegistry:
    return ResourceTypeRegistry.load()


@pytest.fixture
def five() -> Iterator[None]:
    with budget.evaluation(budget.Budget(max_resources_per_stack=5)):
        yield


def ir(registry: ResourceTypeRegistry, count: str, **parameters: Any) -> Any:
    return build(load(document(GROUP.replace("COUNT", count))), parameters,
                 pseudo_parameters("id", "s", "t"), registry.get)


@pytest.mark.timeout(60)
def test_a_count_of_a_billion_is_refused_at_its_line(registry: ResourceTypeRegistry) -> None:
    with pytest.raises(StackValidationFailed) as raised:
        ir(registry, "1000000000")

    assert str(raised.value) == (
        "template:9 resources.g.properties.count: Property error: count: Maximum "
        "resources per stack exceeded: 1000000000 resources, more than 1000.")


@pytest.mark.timeout(60)
def test_a_count_from_a_parameter_is_refused_when_the_value_is_given(
        registry: ResourceTypeRegistry, five: None) -> None:
    assert "g" in ir(registry, "{get_param: n}", n=5).resources
    with pytest.raises(StackValidationFailed, match="6 resources, more than 5"):
        ir(registry, "{get_param: n}", n=6)


class Attributes:
    """The worker's view: the source resource's value is known now."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def param(self, name: str) -> Any:
        raise Deferred(name)

    def reference_id(self, resource: str) -> Any:
        return resource

    def attribute(self, resource: str, attribute: str, path: Any = ()) -> Any:
        return self.value

    def attributes(self, resource: str) -> Any:
        return {"value": self.value}


@pytest.mark.timeout(60)
def test_a_count_known_only_at_run_time_fails_the_resource_before_any_member(
        registry: ResourceTypeRegistry, five: None) -> None:
    node = ir(registry, "{get_attr: [source, value]}").resources["g"]

    assert properties_for_runtime(node, ResourceGroup, Attributes(5))["count"] == 5
    with pytest.raises(StackValidationFailed) as raised:
        properties_for_runtime(node, ResourceGroup, Attributes(10**9))

    assert "resources.g.properties: Property error: count: Maximum resources per stack " \
           "exceeded" in str(raised.value)


def test_a_chain_is_held_to_the_same_limit(five: None) -> None:
    chain = ResourceChain.properties_schema["resources"]

    assert chain.coerce(["OS::Heat::None"] * 5, "resources") == ["OS::Heat::None"] * 5
    with pytest.raises(StackValidationFailed, match="6 resources, more than 5"):
        chain.coerce(["OS::Heat::None"] * 6, "resources")


def test_the_limit_is_not_part_of_heats_schema_of_the_type() -> None:
    count = ResourceGroup.properties_schema["count"].describe()

    assert count["constraints"] == [{"range": {"min": 0}}]
    assert "constraints" not in ResourceChain.properties_schema["resources"].describe()
