"""Stack snapshots through the unchanged ``openstack stack snapshot …`` CLI against
kiln-all: a snapshot taken, listed and shown; the stack updated to a new template and
parameters, which draws a new random string; the snapshot restored, bringing back the
old template, parameters and string; the lifecycle plugins called for SNAPSHOT and
RESTORE (their calls are the stack's events); the snapshot deleted.

The CLI runs forked (``servers.openstack_forked``); waits and the other reads go through
python-heatclient as the same tenant, which costs no process.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.functional import servers
from tests.functional.conftest import heat_for, settled_events, unique, wait_for_status

BEFORE = """\
heat_template_version: 2018-08-31
parameters:
  salt: {type: string}
  greeting: {type: string, default: hello}
resources:
  word:
    type: OS::Heat::RandomString
    properties: {length: 10, salt: {get_param: salt}}
  line:
    type: OS::Heat::Value
    properties: {value: {list_join: [' ', [{get_param: greeting}, {get_attr: [word, value]}]]}}
outputs:
  word: {value: {get_attr: [word, value]}}
  line: {value: {get_attr: [line, value]}}
"""

AFTER = BEFORE.replace("{get_param: greeting}", "goodbye").replace(
    "  greeting: {type: string, default: hello}\n", "")


@pytest.fixture(scope="module")
def tenant(kiln_all: servers.Kiln) -> servers.Credentials:
    return servers.new_tenant(kiln_all.env, unique("snapshots-"))


@pytest.fixture(scope="module")
def env(kiln_all: servers.Kiln, tenant: servers.Credentials) -> dict[str, str]:
    found = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    found.update({"OS_AUTH_TYPE": "admin_token",
                  "OS_ENDPOINT": kiln_all.endpoint(tenant.tenant_id),
                  "OS_TOKEN": tenant.token})
    return found


def cli(env: dict[str, str], *args: str) -> Any:
    result = servers.openstack_forked(env, "stack", "snapshot", *args)
    return json.loads(result.stdout) if "json" in args else result


def outputs(heat: Any, stack_id: str) -> dict[str, Any]:
    return {o["output_key"]: o["output_value"] for o in heat.stacks.get(stack_id).outputs}


def lifecycle_calls(heat: Any, stack_id: str, action: str) -> set[tuple[str, str]]:
    return {(e.lifecycle["plugin"], e.lifecycle["phase"])
            for e in settled_events(heat, stack_id, action)
            if getattr(e, "lifecycle", None) and e.lifecycle["action"] == action}


def test_snapshot_update_restore_and_delete(kiln_all: servers.Kiln, tenant: servers.Credentials,
                                            env: dict[str, str]) -> None:
    heat = heat_for(kiln_all, tenant)
    name = unique("snap")
    stack_id = heat.stacks.create(stack_name=name, template=BEFORE,
                                  parameters={"salt": "one"})["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    before = outputs(heat, stack_id)

    taken = cli(env, "create", name, "--name", "first", "-f", "json")
    assert (taken["name"], taken["status"]) == ("first", "IN_PROGRESS")
    wait_for_status(heat, stack_id, "SNAPSHOT_COMPLETE")

    listed = cli(env, "list", name, "-f", "json")
    assert [(s["id"], s["name"], s["status"], s["status_reason"]) for s in listed] == [
        (taken["ID"], "first", "COMPLETE", "Stack SNAPSHOT completed successfully")]
    shown = cli(env, "show", name, taken["ID"], "-f", "json")["snapshot"]
    data = shown["data"]
    assert data["environment"]["parameters"] == {"salt": "one"}
    assert data["resources"]["word"]["resource_data"]["value"] == before["word"]
    assert {r["status"] for r in data["resources"].values()} == {"COMPLETE"}

    # A new template and a new salt: the string is drawn anew, the line says goodbye.
    heat.stacks.update(stack_id, template=AFTER, parameters={"salt": "two"})
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE")
    updated = outputs(heat, stack_id)
    assert updated["word"] != before["word"]
    assert updated["line"] == f"goodbye {updated['word']}"

    cli(env, "restore", name, taken["ID"])
    stack = wait_for_status(heat, stack_id, "RESTORE_COMPLETE")

    assert stack.stack_status_reason == "Stack RESTORE completed successfully"
    assert stack.parameters["salt"] == "one"
    assert stack.parameters["greeting"] == "hello"
    assert "greeting" in heat.stacks.template(stack_id)["parameters"]
    assert outputs(heat, stack_id) == before  # the old string, and the line made of it
    # Each built-in plugin heard of both operations, before and after.
    snapshot_calls = lifecycle_calls(heat, stack_id, "SNAPSHOT")
    restore_calls = lifecycle_calls(heat, stack_id, "RESTORE")
    assert snapshot_calls and restore_calls
    assert {phase for _, phase in snapshot_calls | restore_calls} == {"pre", "post"}
    assert {plugin for plugin, _ in snapshot_calls} == {plugin for plugin, _ in restore_calls}

    cli(env, "delete", name, taken["ID"], "-y")
    gone = servers.openstack_forked(env, "stack", "snapshot", "show", name, taken["ID"],
                                    check=False)
    assert gone.returncode == 1
    assert f"Snapshot ID <{taken['ID']}> not found for stack <{name}>" in gone.stderr
