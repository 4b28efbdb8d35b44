"""``POST /validate`` and ``POST /stacks/preview`` through the real python-heatclient and
``openstack`` CLI: Heat's shapes, hidden values masked everywhere, the create path's 400s,
and the lifecycle plugins' dry-run verdicts (a warning is reported; a denial is a 400 on
which heatclient raises and the CLI exits non-zero with the plugin's message, as it does
for the create itself, refused at the door)."""

from __future__ import annotations

import json
import os
import pathlib
import shlex
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from heatclient import exc as heat_exc

from tests.functional import servers, templates
from tests.functional.conftest import heat_for, unique

SECRET = "hush-hush-42"
# Built-in plugins in pre-op order: by ordinal (policy 10, approval 15, quota 20, placement 50).
PLUGINS = ["policy", "approval", "quota", "placement"]

SECRETIVE = """\
heat_template_version: 2018-08-31
description: a secret carried into a property and metadata
parameter_groups:
  - label: access
    description: how to get in
    parameters: [password, user]
parameters:
  user:
    type: string
    label: User name
    description: who logs in
    default: admin
    constraints:
      - length: {min: 2, max: 16}
        description: 2 to 16 characters
      - allowed_pattern: "[a-z]+"
        description: lower case only
  password:
    type: string
    hidden: true
    default: not-the-real-one
  size:
    type: number
    constraints:
      - range: {min: 1, max: 8}
      - allowed_values: [1, 2, 4, 8]
  zones:
    type: comma_delimited_list
    default: a,b
resources:
  login:
    type: OS::Heat::TestResource
    metadata:
      credential: {list_join: [':', [{get_param: user}, {get_param: password}]]}
    properties:
      value:
        str_replace:
          template: pw=$p
          params: {$p: {get_param: password}}
  token:
    type: OS::Heat::RandomString
    depends_on: login
    properties:
      length: {get_param: size}
  echo:
    type: OS::Heat::TestResource
    properties:
      value: {get_attr: [token, value]}
      client_name: {get_resource: login}
outputs:
  token:
    description: the token
    value: {get_attr: [token, value]}
"""

ONE = "heat_template_version: 2018-08-31\nresources:\n  a: {type: OS::Heat::None}\n"

BROKEN = [
    ("heat_template_version: 2018-08-31\nresources:\n  a:\n    type: OS::Nope\n",
     "ResourceTypeNotFound",
     "template:4 resources.a.type: The Resource Type (OS::Nope) could not be found."),
    ("heat_template_version: 2018-08-31\nresources:\n  a:\n    type: OS::Heat::None\n"
     "    depends_on: b\n  b:\n    type: OS::Heat::None\n    depends_on: a\n",
     "CircularDependency", "template:3 resources.a: Circular Dependency Found: a -> b -> a"),
    ("heat_template_version: 2018-08-31\nparameters:\n  size: {type: number}\n"
     "resources:\n  a: {type: OS::Heat::None}\n",
     "UserParameterMissing", "template:3 parameters.size: The Parameter (size) was not "
                             "provided."),
    ("heat_template_version: 2018-08-31\nresources:\n  a: {type: OS::Heat::None\n",
     "StackValidationFailed", "template:4: Error parsing template"),
]


@pytest.fixture(scope="module")
def tenant(kiln_all: servers.Kiln) -> servers.Credentials:
    return servers.new_tenant(kiln_all.env, unique("dry-"))


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln, tenant: servers.Credentials) -> Any:
    return heat_for(kiln_all, tenant)


def post(kiln: servers.Kiln, creds: servers.Credentials, path: str, body: Any
         ) -> requests.Response:
    return requests.post(f"{kiln.endpoint(creds.tenant_id)}{path}", data=json.dumps(body),
                         headers={"X-Auth-Token": creds.token,
                                  "Content-Type": "application/json"},
                         timeout=60, allow_redirects=False)


def verdicts(lifecycle: list[dict[str, Any]]) -> dict[str, str]:
    assert [v["plugin"] for v in lifecycle] == PLUGINS
    for verdict in lifecycle:
        assert verdict["phase"] == "pre"
        assert verdict["action"] == "CREATE"
        assert verdict["dry_run"] is True
    return {v["plugin"]: v["verdict"] for v in lifecycle}


# --- validate --------------------------------------------------------------------------


def test_validate_describes_the_parameters(heat: Any) -> None:
    result = heat.stacks.validate(template=SECRETIVE, parameters={"size": 4})

    assert result["Description"] == "a secret carried into a property and metadata"
    params = result["Parameters"]
    assert set(params) == {"user", "password", "size", "zones"}  # no pseudo parameters
    assert params["user"] == {
        "Type": "String", "Description": "who logs in", "NoEcho": "false",
        "Label": "User name", "Default": "admin", "MinLength": 2, "MaxLength": 16,
        "AllowedPattern": "[a-z]+",
        "ConstraintDescription": "2 to 16 characters lower case only"}
    assert params["password"] == {"Type": "String", "Description": "", "NoEcho": "true",
                                  "Label": "password", "Default": "******"}
    assert params["size"] == {"Type": "Number", "Description": "", "NoEcho": "false",
                              "Label": "size", "Value": 4, "MinValue": 1, "MaxValue": 8,
                              "AllowedValues": [1, 2, 4, 8]}
    assert params["zones"]["Type"] == "CommaDelimitedList"
    assert params["zones"]["Default"] == "a,b"
    assert result["ParameterGroups"] == [{"label": "access", "description": "how to get in",
                                          "parameters": ["password", "user"]}]
    assert result["Environment"]["parameters"] == {"size": 4}
    assert verdicts(result["lifecycle"]) == dict.fromkeys(PLUGINS, "allow")


def test_validate_masks_a_hidden_value_everywhere(heat: Any) -> None:
    result = heat.stacks.validate(template=SECRETIVE,
                                  parameters={"size": 2, "password": SECRET},
                                  environment={"parameters": {"user": "bob"}})
    assert result["Parameters"]["password"]["Value"] == "******"
    assert result["Parameters"]["user"]["Value"] == "bob"
    assert result["Environment"]["parameters"] == {"size": 2, "password": "******",
                                                   "user": "bob"}
    assert SECRET not in json.dumps(result)


def test_validate_of_a_template_without_parameters(heat: Any) -> None:
    result = heat.stacks.validate(template=templates.FAILING)
    assert result["Description"] == "No description"
    assert result["Parameters"] == {}
    assert "ParameterGroups" not in result
    assert verdicts(result["lifecycle"]) == dict.fromkeys(PLUGINS, "allow")


MISSING_PARAMETER = BROKEN[2][0]


@pytest.mark.parametrize("template, error_type, expected",
                         [case for case in BROKEN if case[0] != MISSING_PARAMETER])
def test_validate_fails_as_create_does(kiln_all: servers.Kiln, tenant: servers.Credentials,
                                       template: str, error_type: str, expected: str) -> None:
    response = post(kiln_all, tenant, "/validate", {"template": template})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == error_type
    assert response.json()["error"]["message"].startswith(expected)
    created = post(kiln_all, tenant, "/stacks", {"stack_name": unique("v"),
                                                 "template": template})
    assert created.json()["error"] == response.json()["error"]


def test_validate_needs_no_parameter_values_as_in_heat(heat: Any) -> None:
    template = MISSING_PARAMETER.replace(
        "  a: {type: OS::Heat::None}\n",
        "  a:\n    type: OS::Heat::RandomString\n    properties: {length: {get_param: size}}\n")
    result = heat.stacks.validate(template=template)
    assert result["Parameters"]["size"]["Type"] == "Number"
    assert "Default" not in result["Parameters"]["size"]
    assert verdicts(result["lifecycle"]) == dict.fromkeys(PLUGINS, "allow")


def test_validate_errors_reach_heatclient(heat: Any) -> None:
    with pytest.raises(heat_exc.HTTPBadRequest) as raised:
        heat.stacks.validate(template=BROKEN[0][0])
    assert "resources.a.type: The Resource Type (OS::Nope) could not be found." in str(
        raised.value)
    with pytest.raises(heat_exc.HTTPBadRequest):
        heat.stacks.validate(template=templates.FAILING, ignore_errors="12345")
    assert heat.stacks.validate(template=templates.FAILING, show_nested=True,
                                ignore_errors="99001")["Parameters"] == {}


# --- preview ---------------------------------------------------------------------------


def test_preview_shows_the_stack_it_would_create(heat: Any) -> None:
    name = unique("p")
    stack = heat.stacks.preview(stack_name=name, template=SECRETIVE, tags="a,b",
                                timeout_mins=7,
                                parameters={"size": 8, "password": SECRET}).to_dict()

    assert stack["id"] == "None"
    assert stack["stack_name"] == name
    assert "stack_status" not in stack and "stack_status_reason" not in stack
    assert stack["links"][0]["href"].endswith(f"/stacks/{name}/None")
    assert stack["description"] == stack["template_description"] == (
        "a secret carried into a property and metadata")
    assert stack["stack_user_project_id"] is None
    assert stack["creation_time"] and stack["updated_time"] is None
    assert (stack["tags"], stack["timeout_mins"], stack["disable_rollback"]) == (
        ["a", "b"], 7, True)
    assert stack["parameters"]["password"] == "******"
    assert stack["parameters"]["size"] == "8"
    assert stack["parameters"]["OS::stack_id"] == "None"
    assert stack["outputs"] == [{"output_key": "token", "description": "the token",
                                 "output_value": None}]

    resources = {r["resource_name"]: r for r in stack["resources"]}
    assert set(resources) == {"login", "token", "echo"}
    login = resources["login"]
    assert login["resource_type"] == "OS::Heat::TestResource"
    assert (login["resource_action"], login["resource_status"]) == ("INIT", "COMPLETE")
    assert login["physical_resource_id"] == "" and login["creation_time"] is None
    assert login["required_by"] == ["echo", "token"]
    assert login["resource_identity"] == {
        "tenant": heat.http_client.endpoint.rsplit("/", 1)[-1], "stack_name": name,
        "stack_id": "None", "path": "/resources/login"}
    assert login["stack_identity"]["path"] == ""
    assert login["stack_name"] == name
    assert login["properties"]["value"] == "pw=******"
    assert login["properties"]["fail"] is False  # a default of the type
    # Metadata is shown as written (Kiln does not evaluate it before the create).
    assert login["metadata"] == {"credential": {"list_join": [":", [{"get_param": "user"},
                                                                    {"get_param": "password"}]]}}
    assert login["attributes"] == {"output": None}
    assert resources["token"]["properties"]["length"] == 8
    # Attributes are not known before the stack exists; a reference id is the name.
    assert resources["echo"]["properties"]["value"] is None
    assert resources["echo"]["properties"]["client_name"] == "login"
    assert SECRET not in json.dumps(stack)
    assert verdicts(stack["lifecycle"]) == dict.fromkeys(PLUGINS, "allow")

    # Nothing was stored.
    assert name not in [s.stack_name for s in heat.stacks.list()]
    with pytest.raises(heat_exc.HTTPNotFound):
        heat.stacks.get(name)


@pytest.mark.parametrize("template, error_type, expected", BROKEN)
def test_preview_fails_as_create_does(kiln_all: servers.Kiln, tenant: servers.Credentials,
                                      template: str, error_type: str, expected: str) -> None:
    response = post(kiln_all, tenant, "/stacks/preview",
                    {"stack_name": unique("p"), "template": template})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == error_type
    assert response.json()["error"]["message"].startswith(expected)


@pytest.mark.parametrize("body, expected", [
    ({"template": templates.FAILING}, "No stack name specified"),
    ({"stack_name": "ok"}, "No template specified"),
    ({"stack_name": "1bad", "template": templates.FAILING}, "Invalid stack name 1bad"),
    ({"stack_name": "ok", "template": templates.FAILING, "parameters": {"x": 1}},
     "The Parameter (x) was not defined in template."),
])
def test_preview_checks_the_request_as_create_does(
        kiln_all: servers.Kiln, tenant: servers.Credentials, body: dict[str, Any],
        expected: str) -> None:
    response = post(kiln_all, tenant, "/stacks/preview", body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"].startswith(expected)


def test_preview_is_only_post(kiln_all: servers.Kiln, tenant: servers.Credentials) -> None:
    # As in Heat, other methods (and longer paths) take "preview" for a stack name.
    for path in ("/stacks/preview", "/stacks/preview/resources"):
        response = requests.get(f"{kiln_all.endpoint(tenant.tenant_id)}{path}",
                                headers={"X-Auth-Token": tenant.token}, timeout=10,
                                allow_redirects=False)
        assert response.status_code == 404, path
        assert response.json()["error"]["message"] == (
            "The Stack (preview) could not be found.")


# --- the openstack CLI -----------------------------------------------------------------


def run_openstack(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return servers.openstack_forked(env, *args, check=False)


def openstack(env: dict[str, str], *args: str) -> str:
    result = run_openstack(env, *args)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


@pytest.fixture(scope="module")
def cli_env(kiln_all: servers.Kiln) -> dict[str, str]:
    line = servers.manage_here(kiln_all.env, "demo-env").stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(dict(item.split("=", 1) for item in shlex.split(line)[1:]))
    return env


def test_cli_create_dry_run_and_template_validate(cli_env: dict[str, str],
                                                  tmp_path: pathlib.Path) -> None:
    template = tmp_path / "t.yaml"
    template.write_text(SECRETIVE)
    name = unique("cli")
    shown = json.loads(openstack(cli_env, "stack", "create", "--dry-run", "-t", str(template),
                                 "--parameter", "size=2", "--parameter",
                                 f"password={SECRET}", "-f", "json", name))
    assert shown["id"] == "None"
    assert shown["stack_name"] == name
    assert len(shown["resources"]) == 3
    assert verdicts(shown["lifecycle"]) == dict.fromkeys(PLUGINS, "allow")
    assert SECRET not in json.dumps(shown)
    assert name not in openstack(cli_env, "stack", "list", "-f", "value", "-c", "Stack Name")

    validated = json.loads(openstack(cli_env, "orchestration", "template", "validate",
                                     "-t", str(template), "--parameter", "size=1",
                                     "-f", "json"))
    assert validated["Parameters"]["password"]["NoEcho"] == "true"
    assert verdicts(validated["lifecycle"]) == dict.fromkeys(PLUGINS, "allow")


# --- verdicts that deny ----------------------------------------------------------------

POLICY = """\
rules:
  - name: no-random
    effect: deny
    denied_types: ["OS::Heat::RandomString"]
    message: random strings are not allowed here
  - name: owner-tag
    effect: warn
    required_tags: ["owner=*"]
"""


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Kiln]:
    """kiln-all with a policy that denies RandomString and a two-resource quota."""
    state = tmp_path_factory.mktemp("kiln-strict")
    rules = state / "policy.yaml"
    rules.write_text(POLICY)
    kiln = servers.start_all(state, None, OS_LIFECYCLE_POLICY__RULES_FILE=str(rules),
                             OS_LIFECYCLE_QUOTA__MAX_RESOURCES_PER_TENANT="2")
    yield kiln
    kiln.stop()


def test_a_denial_fails_the_request_and_a_warning_is_reported(strict: servers.Kiln) -> None:
    creds = servers.new_tenant(strict.env, unique("strict-"))
    heat = heat_for(strict, creds)
    name = unique("p")

    with pytest.raises(heat_exc.HTTPBadRequest) as refused:
        heat.stacks.preview(stack_name=name, template=SECRETIVE,
                            parameters={"size": 1, "password": SECRET})
    error = refused.value.error["error"]
    assert error["type"] == "LifecycleDenied"
    # Each plugin that denies is named, with its message; the one that allows is not.
    policy, quota = error["message"].split("; ")
    assert policy.startswith("Lifecycle plugin policy denied CREATE: no-random")
    assert "token" in policy
    assert quota.startswith("Lifecycle plugin quota denied CREATE: ")
    assert "resource quota exceeded" in quota
    assert SECRET not in str(refused.value)

    with pytest.raises(heat_exc.HTTPBadRequest) as refused:
        heat.stacks.validate(template=templates.FAILING)  # 3 resources, no Random
    assert str(refused.value).startswith("ERROR: Lifecycle plugin quota denied CREATE: ")
    warned = heat.stacks.validate(template=ONE)  # policy warns: no owner tag
    assert verdicts(warned["lifecycle"]) == {"policy": "warn", "approval": "allow",
                                             "quota": "allow", "placement": "allow"}
    small = heat.stacks.preview(stack_name=name, tags="owner=me", template=ONE).to_dict()
    assert verdicts(small["lifecycle"]) == dict.fromkeys(PLUGINS, "allow")

    # Dry runs reserve nothing: the create the preview judged fails only as it said.
    assert list(heat.stacks.list()) == []


GROUP_OF = """\
heat_template_version: 2018-08-31
resources:
  group:
    type: OS::Heat::ResourceGroup
    properties:
      count: 2
      resource_def: {type: member.yaml}
"""
MEMBER = "heat_template_version: 2018-08-31\nresources:\n  leaf: {type: %s}\n"


def test_a_preview_descends_into_nested_stacks_and_refuses_a_denied_one(
        strict: servers.Kiln) -> None:
    heat = heat_for(strict, servers.new_tenant(strict.env, unique("tree-")))

    shown = heat.stacks.preview(stack_name="web", tags="owner=me", template=GROUP_OF,
                                files={"member.yaml": MEMBER % "OS::Heat::None"}).to_dict()
    # Heat's shape: the group is the list of its stack's resources, each member the list
    # of its own.
    [[[first], [second]]] = shown["resources"]
    assert (first["resource_name"], first["stack_name"], second["stack_name"]) == (
        "leaf", "web-group-0", "web-group-1")
    levels = [(r.get("path"), r["plugin"], r["verdict"]) for r in shown["lifecycle"]]
    assert levels[:5] == [(None, "policy", "allow"), (None, "approval", "allow"),
                          (None, "quota", "allow"), (None, "placement", "allow"),
                          ("group", "policy", "warn")]
    assert [path for path, _, _ in levels[4:]] == [
        *["group"] * 4, *["group/0"] * 4, *["group/1"] * 4]

    with pytest.raises(heat_exc.HTTPBadRequest) as refused:
        heat.stacks.preview(stack_name="web", tags="owner=me", template=GROUP_OF,
                            files={"member.yaml": MEMBER % "OS::Heat::RandomString"})
    assert refused.value.error["error"]["type"] == "LifecycleDenied"
    assert [refusal.split(": ")[0] for refusal in
            refused.value.error["error"]["message"].split("; ")] == [
        "Lifecycle plugin policy denied CREATE of nested stack group/0",
        "Lifecycle plugin policy denied CREATE of nested stack group/1"]
    assert list(heat.stacks.list()) == []


def test_without_plugins_the_verdicts_are_empty(tmp_path: pathlib.Path) -> None:
    kiln = servers.start_all(tmp_path, None,
                             OS_LIFECYCLE_PLUGINS__DISABLED=",".join(PLUGINS))
    try:
        heat = heat_for(kiln, servers.new_tenant(kiln.env, unique("bare-")))
        assert heat.stacks.validate(template=ONE)["lifecycle"] == []
        assert heat.stacks.preview(stack_name="p", template=ONE).to_dict()["lifecycle"] == []
    finally:
        kiln.stop()


def test_a_denial_fails_the_cli_with_the_plugins_message(
        strict: servers.Kiln, tmp_path: pathlib.Path) -> None:
    # What demo-env exports, for a tenant made in-process (kiln-manage costs seconds).
    creds = servers.new_tenant(strict.env, unique("cli-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update({"OS_AUTH_TYPE": "admin_token", "OS_ENDPOINT": strict.endpoint(creds.tenant_id),
                "OS_TOKEN": creds.token})
    template = tmp_path / "t.yaml"
    template.write_text(SECRETIVE)

    previewed = run_openstack(env, "stack", "create", "--dry-run", "-t", str(template),
                              "--parameter", "size=1", unique("cli"))
    validated = run_openstack(env, "orchestration", "template", "validate",
                              "-t", str(template))
    # The create itself is refused at the door ([lifecycle_plugins] check_at_the_door).
    created = run_openstack(env, "stack", "create", "-t", str(template),
                            "--parameter", "size=1", unique("cli"))

    for result in (previewed, validated, created):
        assert result.returncode != 0, result.stdout
        assert "Lifecycle plugin policy denied CREATE: no-random" in result.stderr
    assert list(heat_for(strict, creds).stacks.list()) == []  # nothing was stored
