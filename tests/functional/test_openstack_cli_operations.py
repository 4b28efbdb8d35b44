"""The unchanged `openstack stack …` CLI drives Kiln's stack operations: update (PATCH and
PUT), rollback of failed updates and creates, suspend, resume, check, abandon, adopt and
cancel.

The CLI runs as ``servers.openstack_forked`` runs it: in a child forked from the test
process, which imported it once, so a call costs its own work rather than a second of
start-up. OSC's ``--wait`` on update, on the stack actions and on adopt polls every 5 s
(only create has ``--poll``), so one stack serves several checks wherever the checks
allow it, and what the test only needs to know (a wait, a status on the way) it asks
through python-heatclient as the same tenant.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import time
from typing import Any

import pytest

from tests.functional import servers, templates
from tests.functional.conftest import heat_for, unique, wait_for_status

UPDATABLE = templates.UPDATABLE

# PUT: b gets a value of its own, so b (update_replace) is replaced.
UPDATABLE_FRESH = UPDATABLE.replace("      value: {get_attr: [a, output]}\n",
                                    "      value: fresh\n")

# PUT again: b is replaced once more, then a new resource after it fails.
UPDATABLE_FAILING = UPDATABLE_FRESH.replace("      value: fresh\n", "      value: doomed\n"
                                            ).replace("outputs:", """\
  broken:
    type: OS::Heat::TestResource
    depends_on: b
    properties: {fail: true}
outputs:""")

# The update of "a" (in place) takes 30 s: long enough to cancel it.
UPDATABLE_SLOW = UPDATABLE.replace("    properties: {value: {get_param: v}}\n",
                                   "    properties: {value: {get_param: v}, wait_secs: 30}\n")

WITH_SECRET = """\
heat_template_version: 2018-08-31
parameters:
  secret: {type: string, hidden: true}
resources:
  word:
    type: OS::Heat::RandomString
    properties: {length: 12}
  echo:
    type: OS::Heat::TestResource
    properties:
      value: {get_attr: [word, value]}
outputs:
  word:
    value: {get_attr: [word, value]}
"""


@pytest.fixture(scope="module")
def tenant(kiln_all: servers.Kiln) -> servers.Credentials:
    return servers.new_tenant(kiln_all.env, unique("cli-ops-"))


@pytest.fixture(scope="module")
def env(kiln_all: servers.Kiln, tenant: servers.Credentials) -> dict[str, str]:
    """What a tenant exports to point the CLI at Kiln with a token."""
    found = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    found.update({"OS_AUTH_TYPE": "admin_token",
                  "OS_ENDPOINT": kiln_all.endpoint(tenant.tenant_id),
                  "OS_TOKEN": tenant.token})
    return found


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln, tenant: servers.Credentials) -> Any:
    return heat_for(kiln_all, tenant)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    directory = tmp_path_factory.mktemp("cli-ops")
    for name, text in (("updatable", UPDATABLE), ("fresh", UPDATABLE_FRESH),
                       ("failing-update", UPDATABLE_FAILING), ("slow", UPDATABLE_SLOW),
                       ("failing-create", templates.FAILING), ("secret", WITH_SECRET)):
        (directory / f"{name}.yaml").write_text(text)
    return directory


def openstack(env: dict[str, str], *args: str, ok: bool = True
              ) -> subprocess.CompletedProcess[str]:
    return servers.openstack_forked(env, *args, check=ok)


def together(env: dict[str, str], *commands: tuple[str, ...]) -> list[str]:
    """The output of read-only commands, one after another."""
    return [openstack(env, *args).stdout for args in commands]


def snapshot(env: dict[str, str], stack: str
             ) -> tuple[dict[str, tuple[str, str]], dict[str, Any]]:
    """The stack's resources, name: (physical id, status), from `openstack stack resource
    list -f json`, and its outputs, key: value, from `openstack stack output show --all`."""
    listed, shown = together(env, ("stack", "resource", "list", stack, "-f", "json"),
                             ("stack", "output", "show", stack, "--all", "-f", "json"))
    resources = {r["resource_name"]: (r["physical_resource_id"], r["resource_status"])
                 for r in json.loads(listed)}
    outputs = {key: item["output_value"] for key, item in json.loads(shown).items()}
    return resources, outputs


def ids(resources: dict[str, tuple[str, str]]) -> dict[str, str]:
    return {name: pid for name, (pid, _) in resources.items()}


def last_line(result: subprocess.CompletedProcess[str]) -> str:
    """What `-f value -c <column>` printed after the events that --wait shows."""
    return result.stdout.strip().splitlines()[-1]


def heat_ids(heat: Any, stack: str) -> dict[str, str]:
    return {r.resource_name: r.physical_resource_id for r in heat.resources.list(stack)}


def heat_statuses(heat: Any, stack: str) -> dict[str, str]:
    return {r.resource_name: r.resource_status for r in heat.resources.list(stack)}


def wait_for_resource(heat: Any, stack: str, name: str, wanted: str) -> None:
    deadline = time.monotonic() + 20
    while heat_statuses(heat, stack).get(name) != wanted:
        assert time.monotonic() < deadline, f"{name} never reached {wanted}"
        time.sleep(0.1)


# --- update ---------------------------------------------------------------------------


def test_update_patch_put_and_a_failed_update_rolled_back(
        env: dict[str, str], heat: Any, files: pathlib.Path) -> None:
    openstack(env, "stack", "create", "-t", str(files / "updatable.yaml"), "--enable-rollback",
              "--wait", "--poll", "1", "upd")
    created, outputs = snapshot(env, "upd")
    word = outputs["word"]

    # PATCH, parameters only: the RandomString keeps its value, a changes in place, and
    # b (update_replace) is replaced since its value follows a's.
    patch = openstack(env, "stack", "update", "--existing", "--parameter", "v=two", "--wait",
                      "upd", "-f", "value", "-c", "stack_status")
    assert last_line(patch) == "UPDATE_COMPLETE"
    patched, outputs = snapshot(env, "upd")
    assert outputs == {"word": word, "b": "two"}
    assert (patched["word"], patched["a"]) == (created["word"], (created["a"][0],
                                                                 "UPDATE_COMPLETE"))
    assert patched["b"][0] != created["b"][0]

    # PUT of a new template: b gets a value of its own and is replaced again; v is back
    # to its default (a PUT does not keep parameters), which a takes in place.
    put = openstack(env, "stack", "update", "-t", str(files / "fresh.yaml"), "--wait", "upd",
                    "-f", "value", "-c", "stack_status")
    assert last_line(put) == "UPDATE_COMPLETE"
    fresh, outputs = snapshot(env, "upd")
    assert outputs == {"word": word, "b": "fresh"}
    assert ids(fresh) == ids(created) | {"b": fresh["b"][0]}
    assert fresh["b"][0] not in (created["b"][0], patched["b"][0])
    assert (fresh["a"][1], fresh["b"][1]) == ("UPDATE_COMPLETE", "CREATE_COMPLETE")

    # A failing PUT on a stack created with --enable-rollback: b is replaced, then a new
    # resource fails. OSC's --wait stops at UPDATE_FAILED (exit 1); the rollback then
    # restores the exact previous resources, b's physical id included.
    failed = openstack(env, "stack", "update", "-t", str(files / "failing-update.yaml"),
                       "--wait", "upd", ok=False)
    assert failed.returncode == 1, (failed.stdout, failed.stderr)
    assert "Stack upd UPDATE_FAILED" in failed.stderr
    stack = wait_for_status(heat, "upd", "ROLLBACK_COMPLETE", timeout=60)
    assert stack.stack_status_reason == "Stack ROLLBACK completed successfully"
    rolled_back, outputs = snapshot(env, "upd")
    assert ids(rolled_back) == ids(fresh)  # broken deleted, b's replacement undone
    assert outputs == {"word": word, "b": "fresh"}


def test_create_with_enable_rollback_of_a_failing_template(
        env: dict[str, str], heat: Any, files: pathlib.Path) -> None:
    failed = openstack(env, "stack", "create", "-t", str(files / "failing-create.yaml"),
                       "--enable-rollback", "--wait", "--poll", "1", "doomed", ok=False)
    # OSC's --wait stops at CREATE_FAILED; the rollback follows.
    assert failed.returncode == 1, (failed.stdout, failed.stderr)
    assert "Stack doomed CREATE_FAILED" in failed.stderr
    stack = wait_for_status(heat, "doomed", "ROLLBACK_COMPLETE", timeout=60)
    assert stack.stack_status_reason == "Stack ROLLBACK completed successfully"
    assert json.loads(openstack(env, "stack", "resource", "list", "doomed", "-f", "json"
                                ).stdout) == []


# --- actions, abandon and adopt -------------------------------------------------------


def test_suspend_resume_check_then_abandon_and_adopt(
        env: dict[str, str], heat: Any, files: pathlib.Path, tmp_path: pathlib.Path) -> None:
    openstack(env, "stack", "create", "-t", str(files / "secret.yaml"), "--parameter",
              "secret=hunter2-hidden", "--wait", "--poll", "1", "acts")
    created, outputs = snapshot(env, "acts")

    for verb, state in (("suspend", "SUSPEND"), ("resume", "RESUME"), ("check", "CHECK")):
        # Each lists the stack as it is once the wait is over (after the events it shows).
        shown = openstack(env, "stack", verb, "--wait", "acts", "-f", "value",
                          "-c", "Stack Name", "-c", "Stack Status")
        assert last_line(shown) == f"acts {state}_COMPLETE"
        assert set(heat_statuses(heat, "acts").values()) == {f"{state}_COMPLETE"}
    assert heat.stacks.get("acts").stack_status_reason == (
        "Stack CHECK completed successfully. 'CHECK' not fully supported (see resources)")

    data_file = tmp_path / "acts.json"
    openstack(env, "stack", "abandon", "acts", "--output-file", str(data_file))
    data = json.loads(data_file.read_text())
    assert (data["name"], data["action"], data["status"]) == ("acts", "CHECK", "COMPLETE")
    assert {n: r["resource_id"] for n, r in data["resources"].items()} == ids(created)
    assert data["environment"]["parameters"] == {"secret": "******"}
    assert "hunter2-hidden" not in data_file.read_text()
    wait_for_status(heat, data["id"], "DELETE_COMPLETE")

    # The abandon data masks the hidden parameter, so the adopt must give it again
    # (`openstack stack adopt --parameter`).
    refused = openstack(env, "stack", "adopt", "--adopt-file", str(data_file), "adopted",
                        ok=False)
    assert refused.returncode == 1
    assert "Hidden parameters secret are masked" in refused.stderr
    adopted = openstack(env, "stack", "adopt", "--adopt-file", str(data_file), "--parameter",
                        "secret=hunter2-hidden", "--wait", "adopted", "-f", "value",
                        "-c", "stack_status")
    assert last_line(adopted) == "ADOPT_COMPLETE"
    # Taken over, not created: the same physical resources, the same random string.
    assert snapshot(env, "adopted") == (
        {n: (pid, "ADOPT_COMPLETE") for n, pid in ids(created).items()}, outputs)


# --- cancel ---------------------------------------------------------------------------


def test_cancel_rolls_back_and_cancel_no_rollback_leaves_the_update_failed(
        env: dict[str, str], heat: Any, files: pathlib.Path) -> None:
    # Rollback stays disabled (the default): a cancel rolls back all the same.
    openstack(env, "stack", "create", "-t", str(files / "updatable.yaml"), "--wait",
              "--poll", "1", "cancelled")
    created = heat_ids(heat, "cancelled")

    openstack(env, "stack", "update", "-t", str(files / "slow.yaml"), "--parameter", "v=two",
              "cancelled")
    wait_for_resource(heat, "cancelled", "a", "UPDATE_IN_PROGRESS")
    # Without --wait: OSC's cancel --wait stops at the first final stack event of any
    # action and fails on *_FAILED, and a cancelled update is UPDATE_FAILED before it
    # rolls back.
    openstack(env, "stack", "cancel", "cancelled")
    wait_for_status(heat, "cancelled", "ROLLBACK_COMPLETE", timeout=60)
    assert heat_ids(heat, "cancelled") == created
    assert heat.stacks.output_show("cancelled", "b")["output"]["output_value"] == "one"

    openstack(env, "stack", "update", "-t", str(files / "slow.yaml"), "--parameter",
              "v=three", "cancelled")
    wait_for_resource(heat, "cancelled", "a", "UPDATE_IN_PROGRESS")
    # What a tenant sees with --wait: the wait ends at UPDATE_FAILED, with exit status 1.
    stopped = openstack(env, "stack", "cancel", "--no-rollback", "--wait", "cancelled",
                        ok=False)
    assert stopped.returncode == 1, (stopped.stdout, stopped.stderr)
    assert "Stack cancelled UPDATE_FAILED" in stopped.stderr
    stack = heat.stacks.get("cancelled")
    assert (stack.stack_status, stack.stack_status_reason) == (
        "UPDATE_FAILED", "Resource UPDATE failed: Operation cancelled")
    a = heat.resources.get("cancelled", "a")
    assert (a.physical_resource_id, a.resource_status, a.resource_status_reason) == (
        created["a"], "UPDATE_FAILED", "UPDATE aborted")
