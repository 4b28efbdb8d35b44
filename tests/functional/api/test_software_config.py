"""Software configs and deployments against kiln-all with the real clients: the
`openstack software config|deployment` commands, and a stack's deployment whose "agent"
(this test) reads the server's metadata and signals its result over HTTP with what the
metadata gives it, as heat-config-notify would."""

from __future__ import annotations

import json
import os
import pathlib
import time
from typing import Any

import pytest
import requests
from heatclient import client as heat_client
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status

TEMPLATE = """\
heat_template_version: 2018-08-31
resources:
  server:
    type: OS::Heat::None
  config:
    type: OS::Heat::SoftwareConfig
    properties:
      group: script
      config: "#!/bin/sh\\necho hello $name"
      inputs: [{name: name}]
      outputs: [{name: greeting}]
  deploy:
    type: OS::Heat::SoftwareDeployment
    properties:
      config: {get_resource: config}
      server: {get_resource: server}
      input_values: {name: world}
      signal_transport: %(first)s
  deploy_again:
    type: OS::Heat::SoftwareDeployment
    properties:
      config: {get_resource: config}
      server: {get_resource: server}
      name: zz-again
      signal_transport: %(second)s
outputs:
  greeting: {value: {get_attr: [deploy, greeting]}}
"""


@pytest.fixture(scope="module")
def tenant(kiln_all: servers.Kiln) -> servers.Credentials:
    return servers.new_tenant(kiln_all.env, unique("swc-"))


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln, tenant: servers.Credentials) -> Any:
    return heat_for(kiln_all, tenant)


@pytest.fixture(scope="module")
def env(kiln_all: servers.Kiln, tenant: servers.Credentials) -> dict[str, str]:
    found = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    found.update(OS_AUTH_TYPE="admin_token", OS_ENDPOINT=kiln_all.endpoint(tenant.tenant_id),
                 OS_TOKEN=tenant.token)
    return found


def openstack(env: dict[str, str], *args: str) -> Any:
    """The command's JSON output (``-f json``), or its text for those without one."""
    out = servers.openstack_forked(env, *args).stdout
    return json.loads(out) if "-f" in args else out


def create_stack(heat: Any, first: str, second: str) -> tuple[str, str]:
    name = unique("deploy-")
    stack_id: str = heat.stacks.create(stack_name=name, template=TEMPLATE % {
        "first": first, "second": second})["stack"]["id"]
    return name, stack_id


def server_metadata(heat: Any, stack_id: str, count: int) -> tuple[str, list[Any]]:
    """What an agent on the server reads once the deployments are waiting for it."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            server = heat.resources.get(stack_id, "server").physical_resource_id
        except heat_exc.HTTPNotFound:  # not planned yet
            server = ""
        found = heat.software_deployments.metadata(server_id=server) if server else []
        if len(found) == count:
            return server, found
        time.sleep(0.05)
    raise AssertionError("the deployments never reached the server's metadata")


def inputs(config: dict[str, Any]) -> dict[str, Any]:
    return {item["name"]: item.get("value") for item in config["inputs"]}


def test_the_cli_manages_configs_and_deployments(env: dict[str, str], heat: Any,
                                                 tmp_path: pathlib.Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho $greet\n")
    definition = tmp_path / "definition.yaml"
    definition.write_text("inputs: [{name: greet, default: hi}]\n"
                          "outputs: [{name: result}]\noptions: {debug: true}\n")
    config = openstack(env, "software", "config", "create", "--config-file", str(script),
                       "--definition-file", str(definition), "--group", "script",
                       "cli-config", "-f", "json")
    assert (config["name"], config["group"], config["config"], config["options"]) == (
        "cli-config", "script", "#!/bin/sh\necho $greet\n", {"debug": True})
    assert config["inputs"] == [{"name": "greet", "type": "String", "default": "hi"}]
    listed = openstack(env, "software", "config", "list", "-f", "json")
    assert [(c["id"], c["name"]) for c in listed] == [(config["id"], "cli-config")]
    shown = openstack(env, "software", "config", "show", config["id"], "-f", "json")
    assert shown["outputs"] == [{"name": "result", "type": "String", "error_output": False}]

    deployment = openstack(env, "software", "deployment", "create", "--config", config["id"],
                           "--server", "cli-server", "--signal-transport", "NO_SIGNAL",
                           "--input-value", "greet=hello", "cli-deploy", "-f", "json")
    assert (deployment["server_id"], deployment["action"], deployment["status"]) == (
        "cli-server", "UPDATE", "IN_PROGRESS")
    listed = openstack(env, "software", "deployment", "list", "--server", "cli-server",
                       "-f", "json")
    assert [d["id"] for d in listed] == [deployment["id"]]
    metadata = json.loads(openstack(env, "software", "deployment", "metadata", "show",
                                    "cli-server"))
    assert [(m["name"], inputs(m)["greet"], inputs(m)["deploy_signal_transport"])
            for m in metadata] == [("cli-deploy", "hello", "NO_SIGNAL")]

    # The agent reports as heat-config-notify may: an update of the deployment.
    heat.software_deployments.update(deployment["id"], status="COMPLETE",
                                     output_values={"result": "done",
                                                    "deploy_stdout": "hello\n"})
    shown = openstack(env, "software", "deployment", "show", deployment["id"], "--long",
                      "-f", "json")
    assert (shown["status"], shown["output_values"]["result"]) == ("COMPLETE", "done")
    out = openstack(env, "software", "deployment", "output", "show", deployment["id"],
                    "result")
    assert out == "output_value:\n\n  result: done\n"

    openstack(env, "software", "deployment", "delete", deployment["id"])
    openstack(env, "software", "config", "delete", config["id"])
    assert heat.software_deployments.list() == []
    assert heat.software_configs.list() == []


def test_a_deployment_completes_with_what_its_agent_signals(env: dict[str, str],
                                                            heat: Any) -> None:
    _, stack_id = create_stack(heat, "HEAT_SIGNAL", "CFN_SIGNAL")
    server, metadata = server_metadata(heat, stack_id, 2)
    first, second = (inputs(m) for m in metadata)  # ordered by config name
    assert (first["deploy_resource_name"], second["deploy_resource_name"]) == (
        "deploy", "deploy_again")
    assert first["name"] == "world" and first["deploy_server_id"] == server

    # HEAT_SIGNAL: heatclient pointed at deploy_auth_url with the deployment's token.
    agent = heat_client.Client("1", endpoint=first["deploy_auth_url"],
                               token=first["deploy_password"])
    agent.resources.signal(first["deploy_stack_id"], first["deploy_resource_name"], data={
        "deploy_stdout": "hello world", "deploy_stderr": "", "deploy_status_code": 0,
        "greeting": "hello"})
    # CFN_SIGNAL: a POST to the signed URL, with no token header.
    response = requests.post(second["deploy_signal_id"], timeout=10,
                             json={"deploy_stdout": "again", "deploy_status_code": "0"})
    assert (second["deploy_signal_verb"], response.status_code) == ("POST", 200)

    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    deploy = heat.resources.get(stack_id, "deploy")
    output = openstack(env, "stack", "output", "show", stack_id, "greeting", "-f", "json")
    assert output["output_value"] == "hello"
    out = openstack(env, "software", "deployment", "output", "show", deploy.physical_resource_id,
                    "deploy_stdout")
    assert out == "output_value:\n\n  deploy_stdout: |\n    hello world\n"
    config_id = heat.resources.get(stack_id, "config").physical_resource_id
    shown = openstack(env, "software", "config", "show", config_id, "-f", "json")
    assert (shown["group"], shown["config"]) == ("script", "#!/bin/sh\necho hello $name")

    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")
    assert heat.software_deployments.list(server_id=server) == []
    with pytest.raises(heat_exc.HTTPNotFound):
        heat.software_configs.get(config_id)


def test_a_failing_status_code_fails_the_stack(heat: Any) -> None:
    _, stack_id = create_stack(heat, "TEMP_URL_SIGNAL", "NO_SIGNAL")
    _, metadata = server_metadata(heat, stack_id, 2)
    given = inputs(metadata[0])
    assert given["deploy_signal_verb"] == "PUT"

    response = requests.put(given["deploy_signal_id"], timeout=10, json={
        "deploy_stdout": "", "deploy_stderr": "not found", "deploy_status_code": 127})
    assert response.status_code == 200

    stack = wait_for_status(heat, stack_id, "CREATE_FAILED")
    assert stack.stack_status_reason == (
        "Resource CREATE failed: Error: resources.deploy: Deployment to server failed: "
        "deploy_status_code : Deployment exited with non-zero status code: 127")
    # The signed URL is that one resource's: another's signal with it is refused.
    other = given["deploy_signal_id"].replace("/resources/deploy/", "/resources/deploy_again/")
    assert requests.put(other, timeout=10, json={}).status_code == 401
