"""OS::Heat::ResourceGroup and ResourceChain: the child template they generate and the
attributes they read back from the child's outputs."""

from __future__ import annotations

from typing import Any

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


def test_attributes_come_from_the_child_outputs(build: Build) -> None:
    data = {"outputs": {"refs_map": {"1": "id-1", "0": "id-0"},
                        "attributes": {"0": {"value": "a"}, "1": {"value": "b"}}}}
    res = build(ResourceGroup, {"count": 2, "resource_def": DEF}, physical_id="child",
                data=data)

    assert res.get_attribute("refs") == ["id-0", "id-1"]
    assert res.get_attribute("refs_map") == {"0": "id-0", "1": "id-1"}
    assert res.get_attribute("value") == ["a", "b"]
    assert res.get_attribute("resource.1") == "id-1"
    assert res.get_attribute("resource.1.value") == "b"
    assert res.get_attribute("attributes") == {"value": {"0": "a", "1": "b"}}


def test_a_chain_depends_each_on_the_one_before(build: Build) -> None:
    res = build(ResourceChain, {"resources": ["OS::Heat::None", "OS::Heat::Value"],
                                "resource_properties": {"value": 1}})

    assert child(res)["resources"] == {
        "0": {"type": "OS::Heat::None", "properties": {"value": 1}},
        "1": {"type": "OS::Heat::Value", "properties": {"value": 1}, "depends_on": ["0"]}}

    concurrent = build(ResourceChain, {"resources": ["OS::Heat::None"] * 2,
                                       "concurrent": True})
    assert "depends_on" not in child(concurrent)["resources"]["1"]
