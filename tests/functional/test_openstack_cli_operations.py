"""The unchanged `openstack stack …` CLI drives Kiln's stack operations: update (PATCH and
PUT), rollback of failed updates and creates, suspend, resume, check, abandon, adopt and
cancel.

Each CLI call costs about a second of Python start-up, and OSC's ``--wait`` on update and
on the stack actions polls every 5 s (it has no ``--poll`` option there), so one stack
serves several checks wherever the checks allow it. Waits the test does for itself go
through python-heatclient as the same tenant, which is quicker than `openstack stack show`
in a loop.
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

UPDATABLE = """\
heat_template_version: 2018-08-31
parameters:
  v: {type: string, default: one}
resources:
  word:
    type: OS::Heat::RandomString
    properties: {length: 10}
  a:
    type: OS::Heat::TestResource
    properties: {value: {get_param: v}}
  b:
    type: OS::Heat::TestResource
    properties:
      value: {get_attr: [a, output]}
      update_replace: true
outputs:
  word: {value: {get_attr: [word, value]}}
  b: {value: {get_attr: [b, output]}}
"""

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
    started = time.monotonic()
    result = subprocess.run([str(servers.BIN / "openstack"), *args], env=env, text=True,
                            capture_output=True, timeout=120)
    print("TIMING", round(time.monotonic() - started, 2), args[:3])
    if ok:
        assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result


def value(env: dict[str, str], *args: str) -> str:
    """One field of a show command, as `-f value -c <field>` prints it."""
    return openstack(env, *args, "-f", "value").stdout.strip()


def resources(env: dict[str, str], stack: str) -> dict[str, tuple[str, str]]:
    """name: (physical id, status), from `openstack stack resource list -f json`."""
    listed = json.loads(openstack(env, "stack", "resource", "list", stack, "-f", "json").stdout)
    return {r["resource_name"]: (r["physical_resource_id"], r["resource_status"])
            for r in listed}


def physical(env: dict[str, str], stack: str) -> dict[str, str]:
    return {name: pid for name, (pid, _) in resources(env, stack).items()}


def output(env: dict[str, str], stack: str, key: str) -> str:
    return value(env, "stack", "output", "show", stack, key, "-c", "output_value")


def wait_for_resource(heat: Any, stack: str, name: str, wanted: str) -> None:
    deadline = time.monotonic() + 20
    while {r.resource_name: r.resource_status for r in heat.resources.list(stack)}.get(
            name) != wanted:
        assert time.monotonic() < deadline, f"{name} never reached {wanted}"
        time.sleep(0.1)


# --- update ---------------------------------------------------------------------------


def test_update_patch_put_and_a_failed_update_rolled_back(
        env: dict[str, str], heat: Any, files: pathlib.Path) -> None:
    openstack(env, "stack", "create", "-t", str(files / "updatable.yaml"), "--enable-rollback",
              "--wait", "--poll", "1", "upd")
    created, word = physical(env, "upd"), output(env, "upd", "word")

    # PATCH, parameters only: the RandomString keeps its value, a changes in place, and
    # b (update_replace) is replaced since its value follows a's.
    shown = openstack(env, "stack", "update", "--existing", "--parameter", "v=two", "--wait",
                      "upd", "-f", "value", "-c", "stack_status").stdout
    assert shown.strip().splitlines()[-1] == "UPDATE_COMPLETE"
    patched = physical(env, "upd")
    assert output(env, "upd", "word") == word
    assert (patched["word"], patched["a"]) == (created["word"], created["a"])
    assert patched["b"] != created["b"]
    assert output(env, "upd", "b") == "two"

    # PUT of a new template: b gets a value of its own and is replaced again; v is back
    # to its default (a PUT does not keep parameters), which a takes in place.
    openstack(env, "stack", "update", "-t", str(files / "fresh.yaml"), "--wait", "upd")
    put = resources(env, "upd")
    assert {n: pid for n, (pid, _) in put.items()} == {
        "word": created["word"], "a": created["a"], "b": put["b"][0]}
    assert put["b"][0] not in (created["b"], patched["b"])
    assert (put["a"][1], put["b"][1]) == ("UPDATE_COMPLETE", "CREATE_COMPLETE")
    assert output(env, "upd", "b") == "fresh"
    assert output(env, "upd", "word") == word

    # A failing PUT on a stack created with --enable-rollback: OSC's --wait stops at
    # UPDATE_FAILED (exit 1); the rollback then restores the exact previous resources.
    failed = openstack(env, "stack", "update", "-t", str(files / "failing-update.yaml"),
                       "--wait", "upd", ok=False)
    assert failed.returncode == 1, (failed.stdout, failed.stderr)
    assert "Stack upd UPDATE_FAILED" in failed.stderr
    stack = wait_for_status(heat, "upd", "ROLLBACK_COMPLETE", timeout=60)
    assert stack.stack_status_reason == "Stack ROLLBACK completed successfully"
    # b's replacement undone (the same physical id as before), broken deleted.
    assert physical(env, "upd") == {n: pid for n, (pid, _) in put.items()}
    assert output(env, "upd", "b") == "fresh"
    assert output(env, "upd", "word") == word


def test_create_with_enable_rollback_of_a_failing_template(
        env: dict[str, str], heat: Any, files: pathlib.Path) -> None:
    failed = openstack(env, "stack", "create", "-t", str(files / "failing-create.yaml"),
                       "--enable-rollback", "--wait", "--poll", "1", "doomed", ok=False)
    assert failed.returncode == 1, (failed.stdout, failed.stderr)
    assert "Stack doomed CREATE_FAILED" in failed.stderr
    wait_for_status(heat, "doomed", "ROLLBACK_COMPLETE", timeout=60)
    assert value(env, "stack", "show", "doomed", "-c", "stack_status") == "ROLLBACK_COMPLETE"
    assert json.loads(openstack(env, "stack", "resource", "list", "doomed", "-f", "json"
                                ).stdout) == []


# --- actions, abandon and adopt -------------------------------------------------------


def test_suspend_resume_check_then_abandon_and_adopt(
        env: dict[str, str], files: pathlib.Path, tmp_path: pathlib.Path) -> None:
    openstack(env, "stack", "create", "-t", str(files / "secret.yaml"), "--parameter",
              "secret=hunter2-hidden", "--wait", "--poll", "1", "acts")
    created, word = physical(env, "acts"), output(env, "acts", "word")

    for verb, state in (("suspend", "SUSPEND"), ("resume", "RESUME"), ("check", "CHECK")):
        # The action commands list the stack as it is once the wait is over.
        shown = openstack(env, "stack", verb, "--wait", "acts", "-f", "json").stdout
        [row] = json.loads(shown[shown.index("[\n"):])
        assert (row["Stack Name"], row["Stack Status"]) == ("acts", f"{state}_COMPLETE")
        assert {s for _, s in resources(env, "acts").values()} == {f"{state}_COMPLETE"}
    assert value(env, "stack", "show", "acts", "-c", "stack_status_reason") == (
        "Stack CHECK completed successfully. 'CHECK' not fully supported (see resources)")
    assert physical(env, "acts") == created

    data_file = tmp_path / "acts.json"
    openstack(env, "stack", "abandon", "acts", "--output-file", str(data_file))
    data = json.loads(data_file.read_text())
    assert (data["name"], data["action"], data["status"]) == ("acts", "CHECK", "COMPLETE")
    assert {n: r["resource_id"] for n, r in data["resources"].items()} == created
    assert data["environment"]["parameters"] == {"secret": "******"}
    assert "hunter2-hidden" not in data_file.read_text()

    # The abandon data masks the hidden parameter, so the adopt must give it again.
    refused = openstack(env, "stack", "adopt", "--adopt-file", str(data_file), "adopted",
                        ok=False)
    assert refused.returncode == 1
    assert "Hidden parameters secret are masked" in refused.stderr
    shown = openstack(env, "stack", "adopt", "--adopt-file", str(data_file), "--parameter",
                      "secret=hunter2-hidden", "--wait", "adopted", "-f", "value",
                      "-c", "stack_status").stdout
    assert shown.strip().splitlines()[-1] == "ADOPT_COMPLETE"
    assert resources(env, "adopted") == {n: (pid, "ADOPT_COMPLETE")
                                         for n, pid in created.items()}
    assert output(env, "adopted", "word") == word
    names = openstack(env, "stack", "list", "-f", "value", "-c", "Stack Name").stdout.split()
    assert "adopted" in names and "acts" not in names


# --- cancel ---------------------------------------------------------------------------


def test_cancel_rolls_back_and_cancel_no_rollback_leaves_the_update_failed(
        env: dict[str, str], heat: Any, files: pathlib.Path) -> None:
    # Rollback stays disabled (the default): a cancel rolls back all the same.
    openstack(env, "stack", "create", "-t", str(files / "updatable.yaml"), "--wait",
              "--poll", "1", "cancelled")
    created = physical(env, "cancelled")

    openstack(env, "stack", "update", "-t", str(files / "slow.yaml"), "--parameter", "v=two",
              "cancelled")
    wait_for_resource(heat, "cancelled", "a", "UPDATE_IN_PROGRESS")
    # Without --wait: OSC's cancel --wait stops at the first final stack event of any
    # action and fails on *_FAILED, and a cancelled update is UPDATE_FAILED before it
    # rolls back.
    openstack(env, "stack", "cancel", "cancelled")
    wait_for_status(heat, "cancelled", "ROLLBACK_COMPLETE", timeout=60)
    assert physical(env, "cancelled") == created
    assert output(env, "cancelled", "b") == "one"

    openstack(env, "stack", "update", "-t", str(files / "slow.yaml"), "--parameter",
              "v=three", "cancelled")
    wait_for_resource(heat, "cancelled", "a", "UPDATE_IN_PROGRESS")
    # That is what a tenant sees with --wait: the wait ends, at UPDATE_FAILED, exit 1.
    stopped = openstack(env, "stack", "cancel", "--no-rollback", "--wait", "cancelled",
                        ok=False)
    assert stopped.returncode == 1, (stopped.stdout, stopped.stderr)
    assert "Stack cancelled UPDATE_FAILED" in stopped.stderr
    assert value(env, "stack", "show", "cancelled", "-c", "stack_status",
                 "-c", "stack_status_reason").splitlines() == [
        "UPDATE_FAILED", "Resource UPDATE failed: Operation cancelled"]
    after = resources(env, "cancelled")
    assert after["a"] == (created["a"], "UPDATE_FAILED")
    assert value(env, "stack", "resource", "show", "cancelled", "a",
                 "-c", "resource_status_reason") == "UPDATE aborted"

    # Nothing to cancel now: OSC refuses before asking Kiln.
    refused = openstack(env, "stack", "cancel", "cancelled", ok=False)
    assert refused.returncode == 1
    assert "not in cancelable state" in refused.stderr
