"""OS::Heat::CloudConfig: the map rendered as Heat renders it, stored as a config."""

from __future__ import annotations

import uuid

import pytest
import yaml

from engine.errors import StackValidationFailed
from plugins.resources.cloud_config import CloudConfig
from tests.unit.plugins.resources.conftest import Build, FakeRuntime


def test_config_is_cloud_config_yaml_as_heat_dumps_it(build: Build) -> None:
    res = build(CloudConfig, {"cloud_config": {
        "write_files": [{"path": "/tmp/x", "content": "héllo"}],
        "runcmd": ["echo 1", ["ls", "-l"]],
        "package_update": True,
    }})
    res.handle_create()

    # Block style, keys sorted, non-ASCII escaped: PyYAML's safe dumper defaults.
    assert res.get_attribute("config") == (
        "#cloud-config\n"
        "package_update: true\n"
        "runcmd:\n"
        "- echo 1\n"
        "- - ls\n"
        "  - -l\n"
        "write_files:\n"
        '- content: "h\\xE9llo"\n'
        "  path: /tmp/x\n"
    )


def test_the_text_parses_back_to_the_map(build: Build) -> None:
    cloud_config = {"users": [{"name": "kiln", "groups": ["wheel"]}], "timezone": "UTC"}
    res = build(CloudConfig, {"cloud_config": cloud_config})
    res.handle_create()

    text = res.get_attribute("config")
    assert text.startswith("#cloud-config\n")
    assert yaml.safe_load(text) == cloud_config


def test_an_absent_map_renders_as_yaml_null_as_in_heat(build: Build) -> None:
    res = build(CloudConfig)
    res.handle_create()

    # libyaml's dumper (Heat's choice when present) writes no "..." after a bare scalar.
    assert res.get_attribute("config") == "#cloud-config\nnull\n"


def test_create_records_a_uuid4_and_the_config_together(
    build: Build, runtime: FakeRuntime
) -> None:
    res = build(CloudConfig, {"cloud_config": {"a": 1}}, name="cc")
    assert res.check_create_complete(res.handle_create()) is True

    assert res.physical_id is not None and uuid.UUID(res.physical_id).version == 4
    assert runtime.recorded == [res.physical_id]
    assert runtime.recorded_data == {
        "name": res.physical_resource_name(), "group": "Heat::Ungrouped",
        "config": "#cloud-config\na: 1\n", "inputs": [], "outputs": [], "options": {}}
    assert res.get_reference_id() == res.physical_id


def test_schema_matches_heat(build: Build) -> None:
    prop = CloudConfig.properties_schema["cloud_config"]

    assert list(CloudConfig.properties_schema) == ["cloud_config"]
    assert (prop.type, prop.update_allowed, prop.required, prop.default) == (
        "map", False, False, None)
    assert list(CloudConfig.attributes_schema) == ["config"]
    assert CloudConfig.support_version == "2014.1"
    assert CloudConfig.describe() == (
        "A configuration resource for representing cloud-init cloud-config.")
    assert build(CloudConfig).needs_replacement({"cloud_config": {}}) is True


def test_a_list_is_not_a_cloud_config(build: Build) -> None:
    with pytest.raises(StackValidationFailed, match="is not a map"):
        build(CloudConfig, {"cloud_config": [1, 2]})
