"""OS::Heat::ResourceGroup and ResourceChain: the child template they generate, the
attributes they read back from the child's outputs, and how many members they may have.

A group holds no more members than a stack may hold resources (``[api]
max_resources_per_stack`` through the evaluation budget): a count of 10**9 is refused at
its line when the API knows it, and fails the resource when only the worker does, in
both cases before a single member is built."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from engine import budget
from engine.errors import GroupMemberNotFound, InvalidTemplateAttribute, StackValidationFailed
from engine.ir.build import build as build_ir
from engine.ir.build import properties_for_runtime, pseudo_parameters
from engine.resources.registry import ResourceTypeRegistry
from engine.template.functions import Deferred
from engine.template.loader import load
from engine.template.parse import document
from plugins.resources.resource_group import ResourceChain, ResourceGroup
from tests.unit.plugins.resources.conftest import Build

DEF = {"type": "OS::Heat::Value", "properties": {"value": "m-%index%", "list": ["%index%"]}}


def child(res: Any) -> Any:
    template, _, parameters, _ = res.child_definition()
    assert parameters == {}
    return template


def test_members_are_numbered_and_the_index_substituted(build: Build) -> None:
    res = build(ResourceGroup, {"count": 2, "resource_def": DEF})

    template = child(res)

    assert template["resources"] == {
        "0": {"type": "OS::Heat::Value", "properties": {"value": "m-0", "list": ["0"]}},
        "1": {"type": "OS::Heat::Value", "properties": {"value": "m-1", "list": ["1"]}}}
    assert template["outputs"]["refs_map"] == {"value": {"0": {"get_resource": "0"},
                                                         "1": {"get_resource": "1"}}}


def test_removal_policies_skip_names_for_good(build: Build) -> None:
    res = build(ResourceGroup, {"count": 3, "resource_def": DEF,
                                "removal_policies": [{"resource_list": ["1"]}]})

    assert list(child(res)["resources"]) == ["0", "2", "3"]
    assert res.get_attribute("removed_rsrc_list") == ["1"]

    later = build(ResourceGroup, {"count": 3, "resource_def": DEF}, data=dict(res.data))
    assert list(child(later)["resources"]) == ["0", "2", "3"]  # append mode keeps "1" out


CHILD_OUTPUTS = {"outputs": {
    "refs_map": {"1": "id-1", "0": "id-0"},
    "attributes": {"0": {"value": {"name": "a", "ports": [1, 2]}},
                   "1": {"value": {"name": "b", "ports": [3]}}}}}


def settled(build: Build, kind: type[Any], properties: dict[str, Any]) -> Any:
    return build(kind, properties, physical_id="child", data=CHILD_OUTPUTS)


def test_attributes_come_from_the_child_outputs(build: Build) -> None:
    res = settled(build, ResourceGroup, {"count": 2, "resource_def": DEF})

    assert res.get_attribute("refs") == ["id-0", "id-1"]
    assert res.get_attribute("refs_map") == {"0": "id-0", "1": "id-1"}
    assert res.get_attribute("value") == [{"name": "a", "ports": [1, 2]},
                                          {"name": "b", "ports": [3]}]
    assert res.get_attribute("resource.1") == "id-1"
    assert res.get_attribute("resource.1.value") == {"name": "b", "ports": [3]}
    assert res.all_attributes() == {"refs": ["id-0", "id-1"],
                                    "refs_map": {"0": "id-0", "1": "id-1"},
                                    "removed_rsrc_list": []}


@pytest.mark.parametrize(("name", "path", "expected"), [
    # get_attr: [group, resource.1, value] and deeper: the member's attribute, as Heat.
    ("resource.1", ("value",), {"name": "b", "ports": [3]}),
    ("resource.0", ("value", "name"), "a"),
    ("resource.0", ("value", "ports", 1), 2),
    ("resource.0.value", ("ports", 0), 1),
    ("resource.0", ("value", "missing"), None),
    ("resource.0", ("other",), None),
    # every member's attribute, with the path read in each member
    ("value", ("name",), ["a", "b"]),
    ("value", ("ports", 0), [1, 3]),
    # attributes: the members' attribute by member name
    ("attributes", ("value",), {"0": {"name": "a", "ports": [1, 2]},
                                "1": {"name": "b", "ports": [3]}}),
    ("attributes", ("value", "name"), {"0": "a", "1": "b"}),
    # refs takes a path into its list; refs_map and removed_rsrc_list ignore it (Heat)
    ("refs", (1,), "id-1"),
    ("refs", (5,), None),
    ("refs_map", ("0",), {"0": "id-0", "1": "id-1"}),
    ("removed_rsrc_list", (0,), []),
])
def test_group_attributes_with_a_path_read_as_heat_reads_them(
        build: Build, name: str, path: tuple[Any, ...], expected: Any) -> None:
    res = settled(build, ResourceGroup, {"count": 2, "resource_def": DEF})

    assert res.get_attribute_path(name, path) == expected


@pytest.mark.parametrize("kind", [ResourceGroup, ResourceChain])
def test_a_member_beyond_the_group_is_an_error_not_null(build: Build,
                                                         kind: type[Any]) -> None:
    props = ({"count": 2, "resource_def": DEF} if kind is ResourceGroup
             else {"resources": ["OS::Heat::Value"] * 2})
    res = settled(build, kind, props)

    for name, path in (("resource.2", ("value",)), ("resource.2", ()),
                       ("resource.7.value", ())):
        with pytest.raises(GroupMemberNotFound) as caught:
            res.get_attribute_path(name, path)
        assert caught.value.message == f"Member '{name.split('.')[1]}' not found in group " \
                                       "resource 'res'."


@pytest.mark.parametrize("kind", [ResourceGroup, ResourceChain])
def test_attributes_without_a_path_is_heats_invalid_attribute(build: Build,
                                                               kind: type[Any]) -> None:
    props = ({"count": 2, "resource_def": DEF} if kind is ResourceGroup
             else {"resources": ["OS::Heat::Value"] * 2})
    res = settled(build, kind, props)

    with pytest.raises(InvalidTemplateAttribute) as caught:
        res.get_attribute("attributes")

    assert caught.value.message == "The Referenced Attribute (res attributes) is incorrect."


def test_a_group_not_created_yet_has_no_member_attributes(build: Build) -> None:
    res = build(ResourceGroup, {"count": 2, "resource_def": DEF})

    assert res.get_attribute_path("resource.5", ("value",)) is None
    assert res.get_attribute("refs") is None


def test_a_chain_has_refs_and_attributes_but_no_refs_map_of_its_own(build: Build) -> None:
    res = settled(build, ResourceChain, {"resources": ["OS::Heat::Value"] * 2})

    assert set(ResourceChain.attributes_schema) == {"refs", "attributes"}
    assert res.get_attribute("refs") == ["id-0", "id-1"]
    assert res.get_attribute_path("resource.1", ("value", "name")) == "b"
    assert res.get_attribute_path("attributes", ("value", "name")) == {"0": "a", "1": "b"}
    # Heat's chain reads any other name from its members: they have no refs_map.
    assert res.get_attribute("refs_map") == [None, None]


def test_a_chain_depends_each_on_the_one_before(build: Build) -> None:
    res = build(ResourceChain, {"resources": ["OS::Heat::None", "OS::Heat::Value"],
                                "resource_properties": {"value": 1}})

    assert child(res)["resources"] == {
        "0": {"type": "OS::Heat::None", "properties": {"value": 1}},
        "1": {"type": "OS::Heat::Value", "properties": {"value": 1}, "depends_on": ["0"]}}

    concurrent = build(ResourceChain, {"resources": ["OS::Heat::None"] * 2,
                                       "concurrent": True})
    assert "depends_on" not in child(concurrent)["resources"]["1"]


# --- how many members -----------------------------------------------------------------

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
def types() -> ResourceTypeRegistry:
    return ResourceTypeRegistry.load()


@pytest.fixture
def five() -> Iterator[None]:
    with budget.evaluation(dataclasses.replace(budget.DEFAULT, max_resources_per_stack=5)):
        yield


def ir(types: ResourceTypeRegistry, count: str, **parameters: Any) -> Any:
    return build_ir(load(document(GROUP.replace("COUNT", count))), parameters,
                 pseudo_parameters("id", "s", "t"), types.get)


@pytest.mark.timeout(60)
def test_a_count_of_a_billion_is_refused_at_its_line(types: ResourceTypeRegistry) -> None:
    with pytest.raises(StackValidationFailed) as raised:
        ir(types, "1000000000")

    assert str(raised.value) == (
        "template:9 resources.g.properties.count: Property error: count: Maximum "
        "resources per stack exceeded: 1000000000 resources, more than 1000.")


@pytest.mark.timeout(60)
def test_a_count_from_a_parameter_is_refused_when_the_value_is_given(
        types: ResourceTypeRegistry, five: None) -> None:
    assert "g" in ir(types, "{get_param: n}", n=5).resources
    with pytest.raises(StackValidationFailed, match="6 resources, more than 5"):
        ir(types, "{get_param: n}", n=6)


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
        types: ResourceTypeRegistry, five: None) -> None:
    node = ir(types, "{get_attr: [source, value]}").resources["g"]

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
