"""OS::Heat::SoftwareConfig and StructuredConfig: a config stored as a row of the tenant's
configs and in the resource's data, named by a uuid4, read back through the ``config``
attribute."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from engine.errors import StackValidationFailed
from plugins.resources.software_config import SoftwareConfig, StructuredConfig
from tests.unit.plugins.resources.conftest import Build, FakeRuntime


def test_create_records_a_uuid4_id_with_the_config(build: Build, runtime: FakeRuntime) -> None:
    res = build(SoftwareConfig, {"config": "#!/bin/sh\necho hi\n"}, name="cfg")
    assert res.check_create_complete(res.handle_create()) is True

    assert res.physical_id is not None
    assert uuid.UUID(res.physical_id).version == 4
    assert runtime.recorded == [res.physical_id]
    # The config went to the database in the same write as the id.
    assert runtime.recorded_data["config"] == "#!/bin/sh\necho hi\n"
    assert res.get_reference_id() == res.physical_id
    assert res.get_attribute("config") == "#!/bin/sh\necho hi\n"


def test_the_record_has_the_shape_of_heats_config_api(build: Build) -> None:
    res = build(SoftwareConfig, {
        "group": "script",
        "config": "run",
        "options": {"debug": True},
        "inputs": [{"name": "a"},
                   {"name": "b", "type": "Number", "default": "5", "description": "B",
                    "replace_on_change": True}],
        "outputs": [{"name": "result"}, {"name": "err", "error_output": True}],
    }, name="cfg")
    res.handle_create()

    assert res.data == {
        "name": res.physical_resource_name(),
        "group": "script",
        "config": "run",
        "options": {"debug": True},
        # Heat leaves out unset keys and replace_on_change when false, and types defaults.
        "inputs": [{"name": "a", "type": "String"},
                   {"name": "b", "type": "Number", "default": 5, "description": "B",
                    "replace_on_change": True}],
        "outputs": [{"name": "result", "type": "String", "error_output": False},
                    {"name": "err", "type": "String", "error_output": True}],
    }


def test_defaults_match_heat(build: Build) -> None:
    res = build(SoftwareConfig)
    res.handle_create()

    assert res.properties == {"group": "Heat::Ungrouped", "config": None, "options": None,
                              "inputs": None, "outputs": None}
    assert res.data["inputs"] == [] and res.data["outputs"] == []
    assert res.data["options"] == {}
    assert res.get_attribute("config") is None


def test_a_resumed_create_keeps_its_id_and_config(build: Build, runtime: FakeRuntime) -> None:
    first = build(SoftwareConfig, {"config": "x"})
    first.handle_create()

    resumed = build(SoftwareConfig, {"config": "x"}, physical_id=first.physical_id,
                    data=dict(first.data))
    resumed.handle_create()

    assert resumed.physical_id == first.physical_id
    assert runtime.recorded == [first.physical_id]


def test_each_config_gets_its_own_id(build: Build, runtime: FakeRuntime) -> None:
    build(SoftwareConfig, {"config": "x"}).handle_create()
    build(SoftwareConfig, {"config": "x"}).handle_create()

    assert len(set(runtime.recorded)) == 2


def test_config_is_null_and_its_reference_its_name_before_the_create(build: Build) -> None:
    res = build(SoftwareConfig, {"config": "x"})

    assert res.get_attribute("config") is None
    assert res.get_reference_id() == "res"  # Heat's default without a physical id


def test_no_property_is_update_allowed_so_any_change_replaces(build: Build) -> None:
    res = build(SoftwareConfig, {"config": "x"})

    for name in SoftwareConfig.properties_schema:
        assert SoftwareConfig.properties_schema[name].update_allowed is False
        assert res.needs_replacement({name: "changed"}) is True


def test_schema_matches_heat() -> None:
    schema = {k: p.describe() for k, p in SoftwareConfig.properties_schema.items()}

    assert schema["group"]["default"] == "Heat::Ungrouped"
    assert schema["config"]["type"] == "string"
    assert schema["options"]["type"] == "map"
    inputs = schema["inputs"]["schema"]["*"]["schema"]
    assert set(inputs) == {"name", "description", "type", "default", "replace_on_change"}
    assert inputs["name"]["required"] is True
    assert inputs["type"]["constraints"] == [{"allowed_values": [
        "String", "Number", "CommaDelimitedList", "Json", "Boolean"]}]
    assert inputs["default"]["type"] == "any"
    assert inputs["replace_on_change"]["default"] is False
    outputs = schema["outputs"]["schema"]["*"]["schema"]
    assert set(outputs) == {"name", "description", "type", "error_output"}
    assert SoftwareConfig.attributes_schema["config"].describe() == {
        "description": "The config value of the software config.", "type": "string"}
    assert SoftwareConfig.support_version == "2014.1"
    assert SoftwareConfig.describe() == (
        "A resource for describing and storing software configuration.")


def test_an_input_needs_a_name(build: Build) -> None:
    with pytest.raises(StackValidationFailed, match="Property name not assigned"):
        build(SoftwareConfig, {"inputs": [{"type": "String"}]})


def test_an_io_type_outside_heats_list_is_refused(build: Build) -> None:
    with pytest.raises(StackValidationFailed, match="not an allowed value"):
        build(SoftwareConfig, {"outputs": [{"name": "o", "type": "Integer"}]})


@pytest.mark.parametrize(("kind", "given", "expected"), [
    ("String", 12, "12"),
    ("Number", "2.5", 2.5),
    ("Boolean", "true", True),
    ("CommaDelimitedList", "a,b", ["a", "b"]),
    ("CommaDelimitedList", ["a"], ["a"]),
    ("Json", {"k": 1}, {"k": 1}),
    ("Json", "[1]", "[1]"),
    ("Json", [1, 2], "[1, 2]"),
    # Heat's legacy path: an empty default is accepted for every type.
    ("Number", "", ""),
])
def test_input_defaults_are_typed_as_heat_types_them(
    build: Build, kind: str, given: Any, expected: Any
) -> None:
    res = build(SoftwareConfig, {"inputs": [{"name": "i", "type": kind, "default": given}]})
    res.validate()
    res.handle_create()

    assert res.data["inputs"][0]["default"] == expected


@pytest.mark.parametrize(("kind", "given", "message"), [
    ("Number", "ten", "inputs\\[0\\].default: Value 'ten' is not a number"),
    ("Boolean", "maybe", "is not a boolean"),
    ("CommaDelimitedList", {"a": 1}, "is not a list"),
    ("Json", 5, "is not a map"),
])
def test_an_input_default_that_does_not_fit_its_type_fails_validation(
    build: Build, kind: str, given: Any, message: str
) -> None:
    res = build(SoftwareConfig, {"inputs": [{"name": "i", "type": kind, "default": given}]})

    with pytest.raises(StackValidationFailed, match=message):
        res.validate()


def test_structured_config_stores_and_returns_a_map(build: Build) -> None:
    res = build(StructuredConfig, {"config": {"config_value_foo": {"get_input": "foo"}},
                                   "group": "Heat::Ungrouped"})
    res.handle_create()

    assert res.get_attribute("config") == {"config_value_foo": {"get_input": "foo"}}
    assert res.data["config"] == {"config_value_foo": {"get_input": "foo"}}


def test_structured_config_schema_is_software_configs_with_a_map_config() -> None:
    schema = StructuredConfig.properties_schema

    assert set(schema) == set(SoftwareConfig.properties_schema)
    assert schema["config"].type == "map"
    assert schema["inputs"] is SoftwareConfig.properties_schema["inputs"]
    assert StructuredConfig.support_version == "2014.1"
    assert StructuredConfig.describe() == (
        "A resource which has same logic with OS::Heat::SoftwareConfig.")


def test_structured_config_refuses_a_string_config(build: Build) -> None:
    with pytest.raises(StackValidationFailed, match="is not a map"):
        build(StructuredConfig, {"config": "text"})


def test_delete_completes_at_once(build: Build) -> None:
    res = build(SoftwareConfig, {"config": "x"})
    res.handle_create()

    assert res.check_delete_complete(res.handle_delete()) is True


def test_the_config_is_a_row_of_the_tenants_configs_until_deleted(
        build: Build, runtime: FakeRuntime) -> None:
    res = build(SoftwareConfig, {"group": "script", "config": "run",
                                 "inputs": [{"name": "a"}]}, name="cfg")
    res.handle_create()

    stored = runtime.configs.get_config(str(res.physical_id))
    assert stored is not None
    assert {k: stored[k] for k in ("name", "group", "config", "inputs", "outputs",
                                   "options")} == res.data
    assert res.check_delete_complete(res.handle_delete()) is True
    assert runtime.configs.configs == {}


def test_a_config_stored_before_configs_had_rows_still_answers(build: Build,
                                                               runtime: FakeRuntime) -> None:
    # Its data holds the config, and no row has it: get_attr reads the data, a delete
    # has nothing to remove.
    res = build(SoftwareConfig, {"config": "x"}, physical_id=str(uuid.uuid4()),
                data={"name": "old", "group": "Heat::Ungrouped", "config": "x",
                      "inputs": [], "outputs": [], "options": {}})

    assert res.get_attribute("config") == "x"
    assert res.check_delete_complete(res.handle_delete()) is True


def test_a_resumed_create_writes_the_row_it_recorded(build: Build,
                                                     runtime: FakeRuntime) -> None:
    first = build(SoftwareConfig, {"config": "x"})
    first.handle_create()
    runtime.configs.configs.clear()  # the worker died before the row was written

    resumed = build(SoftwareConfig, {"config": "x"}, physical_id=first.physical_id,
                    data=dict(first.data))
    resumed.handle_create()

    assert list(runtime.configs.configs) == [first.physical_id]
