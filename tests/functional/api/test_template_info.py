"""Template information through the unchanged clients: ``template_versions`` (list, and
functions per version) and the template generated for a resource type."""

from __future__ import annotations

import json
import os
import shlex
from typing import Any

import pytest
import requests
import yaml
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status

HOT_VERSIONS = ["2013-05-23", "2014-10-16", "2015-04-30", "2015-10-15", "2016-04-08",
                "2016-10-14", "2017-02-24", "2017-09-01", "2018-03-02", "2018-08-31",
                "2021-04-16"]
ALIASES = {"2016-10-14": "newton", "2017-02-24": "ocata", "2017-09-01": "pike",
           "2018-03-02": "queens", "2018-08-31": "rocky", "2021-04-16": "wallaby"}
# Heat's set for 2018-08-31 (rocky), sorted, and its condition functions.
KILN_FUNCTIONS = ["contains", "digest", "filter", "get_attr", "get_file", "get_param",
                  "get_resource", "if", "list_concat", "list_concat_unique", "list_join",
                  "make_url", "map_merge", "map_replace", "repeat", "resource_facade",
                  "str_replace", "str_replace_strict", "str_replace_vstrict", "str_split",
                  "yaql"]
CONDITION_FUNCTIONS = ["and", "contains", "equals", "get_param", "not", "or", "yaql"]


@pytest.fixture(scope="module")
def setup(kiln_all: servers.Kiln) -> dict[str, Any]:
    creds = servers.new_tenant(kiln_all.env, unique("tinfo-"))
    return {"heat": heat_for(kiln_all, creds), "base": kiln_all.endpoint(creds.tenant_id),
            "headers": {"X-Auth-Token": creds.token}}


def get(setup: dict[str, Any], path: str, **params: str) -> requests.Response:
    return requests.get(setup["base"] + path, params=params, headers=setup["headers"],
                        timeout=10)


# --- template versions ------------------------------------------------------------------


CFN_FORMATS = ["AWSTemplateFormatVersion.2010-09-09", "HeatTemplateFormatVersion.2012-12-12"]


def test_versions_list_both_cfn_formats_then_every_hot_version(setup: dict[str, Any]
                                                                ) -> None:
    versions = setup["heat"].template_versions.list()

    assert [v.version for v in versions] == CFN_FORMATS + [
        f"heat_template_version.{d}" for d in HOT_VERSIONS]
    assert [v.type for v in versions] == ["cfn", "cfn"] + ["hot"] * len(HOT_VERSIONS)
    assert {v.version: v.aliases for v in versions} == {
        **{f: [] for f in CFN_FORMATS},
        **{f"heat_template_version.{d}":
           [f"heat_template_version.{ALIASES[d]}"] if d in ALIASES else []
           for d in HOT_VERSIONS}}


def test_functions_of_the_cfn_formats(setup: dict[str, Any]) -> None:
    aws = setup["heat"].template_versions.get("AWSTemplateFormatVersion.2010-09-09",
                                              with_condition_func=True)
    heat_cfn = setup["heat"].template_versions.get("HeatTemplateFormatVersion.2012-12-12")

    assert [f.functions for f in aws] == sorted([
        "Fn::And", "Fn::Base64", "Fn::Equals", "Fn::FindInMap", "Fn::GetAZs", "Fn::GetAtt",
        "Fn::If", "Fn::Join", "Fn::MemberListToMap", "Fn::Not", "Fn::Or", "Fn::Replace",
        "Fn::ResourceFacade", "Fn::Select", "Fn::Split", "Ref"])
    assert "Fn::If" not in [f.functions for f in heat_cfn]
    assert {f.functions: f.description for f in heat_cfn}["Ref"] == (
        "A function for resolving parameters or resource references.")


def test_functions_of_a_version_are_those_kiln_evaluates(setup: dict[str, Any]) -> None:
    functions = setup["heat"].template_versions.get("heat_template_version.2018-08-31")

    assert [f.functions for f in functions] == KILN_FUNCTIONS
    assert {f.functions: f.description for f in functions}["get_attr"] == (
        "A function for resolving resource attributes.")


def test_functions_by_alias_and_with_conditions(setup: dict[str, Any]) -> None:
    by_alias = setup["heat"].template_versions.get("heat_template_version.rocky")
    with_conditions = setup["heat"].template_versions.get(
        "heat_template_version.2018-08-31", with_condition_func=True)

    assert [f.functions for f in by_alias] == KILN_FUNCTIONS
    assert [f.functions for f in with_conditions] == sorted(set(KILN_FUNCTIONS)
                                                            | set(CONDITION_FUNCTIONS))
    assert {f.functions: f.description for f in with_conditions}["not"] == (
        "A function that acts as a NOT operator on a condition.")


def test_oldest_version_lists_its_list_join_text(setup: dict[str, Any]) -> None:
    functions = get(setup, "/template_versions/heat_template_version.2013-05-23/functions")
    described = {f["functions"]: f["description"]
                 for f in functions.json()["template_functions"]}
    assert described["list_join"] == "A function for joining strings."
    assert described["Fn::Select"] == "A function for selecting an item from a list or map."


@pytest.mark.parametrize("version", ["2018-08-31", "heat_template_version.2099-01-01",
                                     "HeatTemplateFormatVersion.2010-09-09"])
def test_unknown_version_is_404(setup: dict[str, Any], version: str) -> None:
    response = get(setup, f"/template_versions/{version}/functions")

    assert response.status_code == 404
    assert response.json()["error"]["message"] == (
        f"Template with version {version} could not be found.")
    with pytest.raises(heat_exc.HTTPNotFound):
        setup["heat"].template_versions.get(version)


def test_bad_with_condition_func_is_400(setup: dict[str, Any]) -> None:
    response = get(setup, "/template_versions/heat_template_version.rocky/functions",
                   with_condition_func="maybe")
    assert response.status_code == 400
    assert "with_condition_func" in response.json()["error"]["message"]


# --- resource type templates ------------------------------------------------------------


def test_hot_template_of_a_type(setup: dict[str, Any]) -> None:
    template = setup["heat"].resource_types.generate_template(
        "OS::Heat::RandomString", template_type="hot")

    assert template["heat_template_version"] == "2016-10-14"
    assert template["description"] == "Initial template of RandomString"
    assert template["resources"] == {"RandomString": {
        "type": "OS::Heat::RandomString",
        "properties": {name: {"get_param": name} for name in template["parameters"]}}}
    assert template["parameters"]["length"]["type"] == "number"
    assert template["parameters"]["length"]["default"] == 32
    assert template["outputs"]["value"]["value"] == {"get_attr": ["RandomString", "value"]}
    assert "show" not in template["outputs"]  # Heat's, but Kiln cannot resolve it yet
    assert template["outputs"]["OS::stack_id"] == {"value": {"get_resource": "RandomString"}}


def test_cfn_template_is_the_default(setup: dict[str, Any]) -> None:
    template = setup["heat"].resource_types.generate_template(
        "OS::Heat::TestResource", template_type=None)

    assert template["HeatTemplateFormatVersion"] == "2012-12-12"
    resource = template["Resources"]["TestResource"]
    assert resource["Type"] == "OS::Heat::TestResource"
    assert resource["Properties"]["value"] == {"Ref": "value"}
    assert template["Parameters"]["fail"] == {
        "Type": "Boolean",
        "Description": "Value which can be set to fail the resource operation to test "
                       "failure scenarios.",
        "Default": False,
        "AllowedValues": ["True", "true", "False", "false"]}
    assert template["Outputs"]["output"]["Value"] == {"Fn::GetAtt": ["TestResource",
                                                                     "output"]}


def test_generated_hot_template_creates_a_stack(setup: dict[str, Any]) -> None:
    """The HOT form is a working template: Kiln accepts it as it comes, given a value for
    each parameter that has no default."""
    heat = setup["heat"]
    template = heat.resource_types.generate_template("OS::Heat::TestResource",
                                                     template_type="hot")
    stack_id = heat.stacks.create(stack_name=unique("gen"), template=template,
                                  parameters={"value": "made", "action_wait_secs": "{}",
                                              "update_replace_value": "x"})["stack"]["id"]

    stack = wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    outputs = {o["output_key"]: o["output_value"] for o in stack.outputs}
    assert outputs["output"] == "made"


@pytest.mark.parametrize("template_type", ["HOT", "cfn"])
def test_template_type_ignores_case(setup: dict[str, Any], template_type: str) -> None:
    response = get(setup, "/resource_types/OS::Heat::None/template",
                   template_type=template_type)
    assert response.status_code == 200
    key = "heat_template_version" if template_type == "HOT" else "HeatTemplateFormatVersion"
    assert key in response.json()


def test_bad_template_type_is_400_before_the_type_is_looked_up(setup: dict[str, Any]
                                                               ) -> None:
    response = get(setup, "/resource_types/OS::Nope/template", template_type="yaml")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        'Template type is not supported: Invalid template type "yaml", valid types are: '
        "cfn, hot.")


def test_unknown_type_is_404(setup: dict[str, Any]) -> None:
    response = get(setup, "/resource_types/OS::Nope/template", template_type="hot")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == (
        "The Resource Type (OS::Nope) could not be found.")


def test_template_info_needs_a_token(setup: dict[str, Any]) -> None:
    for path in ("/template_versions", "/resource_types/OS::Heat::None/template"):
        response = requests.get(setup["base"] + path, timeout=10)
        assert response.status_code == 401, path


# --- the OpenStack CLI ------------------------------------------------------------------


def test_openstack_template_version_list(kiln_all: servers.Kiln) -> None:
    line = servers.manage_here(kiln_all.env, "demo-env").stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(dict(item.split("=", 1) for item in shlex.split(line)[1:]))
    result = servers.openstack_forked(env, "orchestration", "template", "version", "list",
                                      "-f", "json")

    rows = json.loads(result.stdout)
    assert {"Version": "heat_template_version.2018-08-31", "Type": "hot",
            "Aliases": ["heat_template_version.rocky"]} in rows


def test_generated_cfn_template_is_yaml_safe(setup: dict[str, Any]) -> None:
    """A CFN template is still data a client can save and edit."""
    template = get(setup, "/resource_types/OS::Heat::Value/template").json()
    assert yaml.safe_load(yaml.safe_dump(template)) == template
    assert template["Parameters"]["value"]["Type"] == "Json"  # an untyped property
