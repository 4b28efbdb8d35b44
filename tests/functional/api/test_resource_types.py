"""The resource-type catalogue and build information through the unchanged clients:
``resource_types.list`` with Heat's filters, ``resource_types.get`` in Heat's schema shape,
``build_info.build_info``, and the OpenStack CLI's ``orchestration resource type`` commands.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shlex
from typing import Any

import pytest
import requests
from heatclient import exc as heat_exc

from tests.functional import servers, templates
from tests.functional.conftest import heat_for, unique

SUPPORTED_SINCE = {"OS::Heat::None": "5.0.0", "OS::Heat::TestResource": "5.0.0",
                   "OS::Heat::RandomString": "2014.1", "OS::Heat::Value": "7.0.0"}
SHOW = {"description": "Detailed information about resource.", "type": "map"}


@pytest.fixture(scope="module")
def setup(kiln_all: servers.Kiln) -> dict[str, Any]:
    creds = servers.new_tenant(kiln_all.env, unique("types-"))
    return {"heat": heat_for(kiln_all, creds), "base": kiln_all.endpoint(creds.tenant_id),
            "headers": {"X-Auth-Token": creds.token}}


def get(setup: dict[str, Any], path: str, **params: str) -> requests.Response:
    return requests.get(setup["base"] + path, params=params, headers=setup["headers"],
                        timeout=10)


def names(setup: dict[str, Any], **filters: str) -> list[str]:
    return [t.resource_type for t in setup["heat"].resource_types.list(filters=filters)]


# --- list -------------------------------------------------------------------------------


def test_list_names_every_type_sorted(setup: dict[str, Any]) -> None:
    listed = get(setup, "/resource_types").json()["resource_types"]

    assert all(isinstance(name, str) for name in listed)
    assert listed == sorted(listed)
    assert set(SUPPORTED_SINCE) <= set(listed)
    assert names(setup) == listed


def test_name_filter_is_a_regex_matched_at_the_start(setup: dict[str, Any]) -> None:
    assert names(setup, name="OS::Heat::Ra.*") == ["OS::Heat::RandomString"]
    assert names(setup, name="OS::Heat::R.*") == ["OS::Heat::RandomString",
                                                  "OS::Heat::ResourceChain",
                                                  "OS::Heat::ResourceGroup"]
    assert names(setup, name="OS::Heat::(None|Value)$") == ["OS::Heat::None",
                                                            "OS::Heat::Value"]
    assert names(setup, name="Heat") == []  # Python's re.match, as in Heat
    assert names(setup, name="OS::Heat::[") == []  # not a regex: nothing matches


def test_version_and_support_status_filters(setup: dict[str, Any]) -> None:
    listed = names(setup)
    since_2014 = names(setup, version="2014.1")

    assert "OS::Heat::RandomString" in since_2014
    assert not {"OS::Heat::None", "OS::Heat::TestResource", "OS::Heat::Value"} & set(
        since_2014)
    assert names(setup, version="7.0.0", name="OS::Heat::V") == ["OS::Heat::Value"]
    # Heat's old names of the deployment groups, deprecated since 7.0.0 as in Heat.
    deprecated = ["OS::Heat::SoftwareDeployments", "OS::Heat::StructuredDeployments"]
    assert names(setup, support_status="DEPRECATED") == deprecated
    assert names(setup, support_status="SUPPORTED") == [
        name for name in listed if name not in deprecated]
    for status in ("UNSUPPORTED", "UNKNOWN", "HIDDEN"):
        assert names(setup, support_status=status) == [], status


def test_unknown_support_status_is_heats_400(setup: dict[str, Any]) -> None:
    response = get(setup, "/resource_types", support_status="supported")

    assert response.status_code == 400
    assert response.json()["error"]["type"] == "Invalid"
    assert response.json()["error"]["message"] == (
        "Data supplied was not valid: Invalid support status and should be one of "
        "('UNKNOWN', 'SUPPORTED', 'DEPRECATED', 'UNSUPPORTED', 'HIDDEN')")
    with pytest.raises(heat_exc.HTTPBadRequest):
        setup["heat"].resource_types.list(filters={"support_status": "BEST"})


def test_a_name_filter_that_could_backtrack_for_ever_is_refused(setup: dict[str, Any]
                                                                ) -> None:
    """``(.*.*)*X`` takes minutes to fail on one name in Python's matcher; Heat runs it."""
    response = get(setup, "/resource_types", name="(.*.*)*X")

    assert response.status_code == 400
    assert "could take too long to match" in response.json()["error"]["message"]


def test_with_description(setup: dict[str, Any]) -> None:
    described = setup["heat"].resource_types.list(filters={"name": "OS::Heat::Value$"},
                                                  with_description=True)
    raw = get(setup, "/resource_types", name="OS::Heat::None$",
              with_description="true").json()

    assert [(t.resource_type, t.description) for t in described] == [
        ("OS::Heat::Value", "A resource which exposes its value property as an attribute.")]
    assert raw == {"resource_types": [{
        "resource_type": "OS::Heat::None",
        "description": "Does nothing; accepts and ignores any properties. Used to stub "
                       "types out."}]}
    assert get(setup, "/resource_types", with_description="maybe").status_code == 400


# --- show -------------------------------------------------------------------------------


def test_show_has_heats_keys_and_support_status(setup: dict[str, Any]) -> None:
    for type_name, version in SUPPORTED_SINCE.items():
        shown = setup["heat"].resource_types.get(type_name)

        # heatclient sends with_description=False: Heat's four keys, in its order.
        assert list(shown) == ["resource_type", "properties", "attributes",
                               "support_status"], type_name
        assert shown["resource_type"] == type_name
        assert shown["support_status"] == {"status": "SUPPORTED", "message": None,
                                           "version": version, "previous_status": None}
        assert shown["attributes"]["show"] == SHOW


def test_show_with_description(setup: dict[str, Any]) -> None:
    shown = setup["heat"].resource_types.get("OS::Heat::RandomString", with_description=True)
    assert shown["description"] == "A resource which generates a random string."


def test_property_schema_shape(setup: dict[str, Any]) -> None:
    properties = setup["heat"].resource_types.get("OS::Heat::RandomString")["properties"]

    assert list(properties["length"].items()) == [
        ("type", "integer"),
        ("description", "Length of the string to generate."),
        ("default", 32),
        ("required", False),
        ("constraints", [{"range": {"min": 1, "max": 512}}]),
        ("update_allowed", False),
        ("immutable", False),
    ]
    classes = properties["character_classes"]
    assert classes["type"] == "list"
    assert classes["default"] == [{"class": "lettersdigits", "min": 1}]
    item = classes["schema"]["*"]
    # The item map has no description of its own, so Heat leaves the key out.
    assert list(item) == ["type", "schema", "required", "update_allowed", "immutable"]
    assert item["type"] == "map"
    assert item["schema"]["class"]["constraints"] == [{"allowed_values": [
        "lettersdigits", "letters", "lowercase", "uppercase", "digits", "hexdigits",
        "octdigits"]}]
    assert properties["character_sequences"]["schema"]["*"]["schema"]["sequence"][
        "required"] is True
    assert "default" not in properties["salt"]


def test_map_property_and_attributes(setup: dict[str, Any]) -> None:
    shown = setup["heat"].resource_types.get("OS::Heat::TestResource")

    waits = shown["properties"]["action_wait_secs"]
    assert waits["type"] == "map"
    assert set(waits["schema"]) == {"create", "update", "delete"}
    assert waits["schema"]["create"]["type"] == "number"
    assert shown["properties"]["value"]["update_allowed"] is True
    assert shown["properties"]["update_replace_value"]["update_allowed"] is False
    assert shown["attributes"] == {
        "output": {"description": "The string that was stored. This value is not cached."},
        "show": SHOW}
    random = setup["heat"].resource_types.get("OS::Heat::RandomString")["attributes"]
    assert random["value"]["type"] == "string"


def test_none_has_only_show(setup: dict[str, Any]) -> None:
    shown = setup["heat"].resource_types.get("OS::Heat::None")
    assert shown["properties"] == {}
    assert shown["attributes"] == {"show": SHOW}


def test_unknown_type_is_404(setup: dict[str, Any]) -> None:
    response = get(setup, "/resource_types/OS::Nope")

    assert response.status_code == 404
    assert response.json()["error"]["type"] == "EntityNotFound"
    assert response.json()["error"]["message"] == (
        "The Resource Type (OS::Nope) could not be found.")
    with pytest.raises(heat_exc.HTTPNotFound):
        setup["heat"].resource_types.get("OS::Nope")


def test_catalogue_needs_a_token(setup: dict[str, Any]) -> None:
    for path in ("/resource_types", "/resource_types/OS::Heat::None", "/build_info"):
        response = requests.get(setup["base"] + path, timeout=10)
        assert response.status_code == 401, path


# --- build info and validate ------------------------------------------------------------


def test_build_info_is_kilns_version(setup: dict[str, Any]) -> None:
    version = importlib.metadata.version("kiln")
    assert setup["heat"].build_info.build_info() == {"api": {"revision": version},
                                                     "engine": {"revision": version}}


def test_validate_show_nested_changes_nothing(setup: dict[str, Any]) -> None:
    """No nested stacks yet: the flag is read and checked, and the answer is the same."""
    heat = setup["heat"]
    plain = heat.stacks.validate(template=templates.FAILING)
    nested = heat.stacks.validate(template=templates.FAILING, show_nested=True)
    # Lifecycle verdicts carry their timing; everything else is equal.
    assert {**nested, "lifecycle": None} == {**plain, "lifecycle": None}
    response = requests.post(setup["base"] + "/validate", params={"show_nested": "maybe"},
                             json={"template": templates.FAILING}, headers=setup["headers"],
                             timeout=10)
    assert response.status_code == 400


# --- the OpenStack CLI ------------------------------------------------------------------


def openstack(kiln: servers.Kiln, *args: str) -> Any:
    line = servers.manage_here(kiln.env, "demo-env").stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(dict(item.split("=", 1) for item in shlex.split(line)[1:]))
    result = servers.openstack_forked(env, "orchestration", *args, "-f", "json")
    return json.loads(result.stdout)


def test_openstack_resource_type_list_and_show(kiln_all: servers.Kiln) -> None:
    rows = openstack(kiln_all, "resource", "type", "list", "--filter",
                     "name=OS::Heat::Random", "--long")
    shown = openstack(kiln_all, "resource", "type", "show", "OS::Heat::Value")

    assert rows == [{"Resource Type": "OS::Heat::RandomString",
                     "Description": "A resource which generates a random string."}]
    assert shown["support_status"]["version"] == "7.0.0"
    assert shown["properties"]["value"]["type"] == "any"
