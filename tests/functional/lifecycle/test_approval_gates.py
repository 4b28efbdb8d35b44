"""Plan-aware plugins from a real third-party package (``tests/dists/kiln-test-plan-aware``,
built and installed with pip) in kiln-api and a kiln-engine on PostgreSQL, driven by
heatclient, the ``openstack`` CLI and kiln-manage: an update parked for approval then
approved through the API, a rejection through kiln-manage unwinding the plugins in
reverse, an engine killed while an operation is parked and the approval taken up by
another, an expired window, a replacement refused at the door, and an unchanged update
skipping the cached plugin."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import (
    fresh_database,
    heat_for,
    settled_events,
    unique,
    wait_for_status,
)
from tests.functional.dists import pip_install, with_path

TEMPLATE = """\
heat_template_version: 2018-08-31
parameters:
  length: {type: number, default: 8}
resources:
  db: {type: OS::Heat::RandomString, properties: {length: {get_param: length}}}
  web: {type: OS::Heat::None}
"""


class Gated:
    """kiln-api and one kiln-engine with the plan-aware plugins, and their call log."""

    def __init__(self, kiln: servers.Kiln, root: pathlib.Path) -> None:
        self.kiln, self.root = kiln, root
        self.member = servers.new_tenant(kiln.env, "gated")
        self.admin = servers.new_token(kiln.env, self.member.tenant_id, "admin")
        self.heat = heat_for(kiln, self.member)

    def calls(self, stack_id: str) -> list[tuple[str, str, str]]:
        path = self.root / "calls.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        return [(c["plugin"], c["phase"], c["action"]) for c in map(json.loads, lines)
                if c["stack_id"] == stack_id and not c["dry_run"]]

    def approval(self, stack_id: str, decision: dict[str, str] | None = None,
                 token: str | None = None) -> tuple[int, dict[str, Any]]:
        """GET (or POST ``decision`` to) the stack's approval URL."""
        stack = self.heat.stacks.get(stack_id)
        url = (f"{self.kiln.endpoint(self.member.tenant_id)}/stacks/{stack.stack_name}/"
               f"{stack_id}/approval")
        request = urllib.request.Request(
            url, method="POST" if decision else "GET",
            data=json.dumps(decision).encode() if decision else None,
            headers={"X-Auth-Token": token or self.admin.token,
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def engine(self) -> servers.Process:
        """A new kiln-engine on the same database."""
        process = servers.Process([str(servers.BIN / "kiln-engine")], self.kiln.env,
                                  self.root / f"engine-{len(self.kiln.processes)}.log")
        self.kiln.processes.append(process)
        return process


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gated]:
    root = tmp_path_factory.mktemp("kiln-gated")
    site = pip_install("kiln-test-plan-aware", root / "site")
    path = with_path({}, site, root / "cache")
    with fresh_database() as url:
        kiln = servers.start_split(
            root / "state", url, engines=1, PYTHONPATH=path["PYTHONPATH"],
            XDG_CACHE_HOME=path["XDG_CACHE_HOME"], KILN_TEST_PLAN_LOG=str(root / "calls.jsonl"),
            OS_LIFECYCLE_PLUGINS__ENABLED="guard,ask,cached")
        try:
            yield Gated(kiln, root)
        finally:
            kiln.stop()


def waiting(heat: Any, stack_id: str, timeout: float = 30.0) -> Any:
    """The stack once its operation is parked at an approval gate."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stack = heat.stacks.get(stack_id)
        if stack.stack_status_reason.startswith("Waiting for approval"):
            return stack
        time.sleep(0.1)
    raise AssertionError(f"stack {stack_id} never waited for approval: {stack.stack_status}")


def test_an_update_waits_for_approval_and_goes_on_once_a_tenant_admin_approves(
        gated: Gated) -> None:
    heat = gated.heat
    stack_id = heat.stacks.create(stack_name=unique("gate"), template=TEMPLATE)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    heat.stacks.update(stack_id, template=TEMPLATE + "  cache: {type: OS::Heat::None}\n",
                       tags="needs-approval")

    stack = waiting(heat, stack_id)
    assert stack.stack_status == "UPDATE_IN_PROGRESS"
    assert "update of" in stack.stack_status_reason
    status, shown = gated.approval(stack_id, token=gated.member.token)
    assert (status, shown["approval"]["plugin"], shown["approval"]["decision"]) == (
        200, "ask", None)
    status, refused = gated.approval(stack_id, {"decision": "approve"}, gated.member.token)
    assert (status, refused["error"]["type"]) == (403, "ApprovalForbidden")
    # Parked: the plugin after the gate is not asked until someone decides.
    assert ("cached", "pre", "UPDATE") not in gated.calls(stack_id)

    status, decided = gated.approval(stack_id, {"decision": "approve", "comment": "CHG-4411"})
    assert (status, decided["approval"]["decision"]) == (200, "approved")
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE")
    events = [e.resource_status_reason for e in settled_events(heat, stack_id, "UPDATE")]
    assert any(reason.startswith("Approval gate: approved by") and "CHG-4411" in reason
               for reason in events), events
    assert [c for c in gated.calls(stack_id) if c[2] == "UPDATE"] == [
        ("guard", "pre", "UPDATE"), ("ask", "pre", "UPDATE"), ("cached", "pre", "UPDATE"),
        ("cached", "post", "UPDATE"), ("ask", "post", "UPDATE"), ("guard", "post", "UPDATE")]


def test_a_rejection_through_kiln_manage_fails_the_create_and_unwinds_in_reverse(
        gated: Gated) -> None:
    heat = gated.heat
    stack_id = heat.stacks.create(stack_name=unique("reject"), template=TEMPLATE,
                                  tags="needs-approval")["stack"]["id"]
    waiting(heat, stack_id)
    operation = json.loads(servers.manage_here(
        gated.kiln.env, "operation", "list", "--stack", stack_id, "-f", "json").stdout)[0]
    shown = json.loads(servers.manage_here(
        gated.kiln.env, "operation", "reject", operation["id"], "--comment", "no change today",
        "-f", "json").stdout)
    assert (shown["decision"], shown["comment"]) == ("rejected", "no change today")

    stack = wait_for_status(heat, stack_id, "CREATE_FAILED")
    assert stack.stack_status_reason.startswith(
        "Lifecycle plugin ask pre-op CREATE: rejected: by operator ")
    assert heat.resources.list(stack_id) == []
    settled_events(heat, stack_id, "CREATE")
    assert gated.calls(stack_id) == [
        ("guard", "pre", "CREATE"), ("ask", "pre", "CREATE"),
        ("ask", "post", "CREATE"), ("guard", "post", "CREATE")]


def test_an_engine_killed_while_an_operation_is_parked_leaves_it_to_another(
        gated: Gated) -> None:
    heat = gated.heat
    stack_id = heat.stacks.create(stack_name=unique("kill"), template=TEMPLATE,
                                  tags="needs-approval")["stack"]["id"]
    waiting(heat, stack_id)
    # Every engine so far dies at once: nothing is handed back, nothing held.
    for process in gated.kiln.processes[1:]:
        if process.popen.poll() is None:
            process.popen.send_signal(signal.SIGKILL)
            process.popen.wait()
    status, _ = gated.approval(stack_id, {"decision": "approve", "comment": "after the crash"})
    assert status == 200
    gated.engine()

    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    settled_events(heat, stack_id, "CREATE")
    assert [c[:2] for c in gated.calls(stack_id)] == [
        ("guard", "pre"), ("ask", "pre"), ("cached", "pre"),
        ("cached", "post"), ("ask", "post"), ("guard", "post")]


def test_an_expired_window_fails_the_create_and_unwinds_in_reverse(gated: Gated) -> None:
    heat = gated.heat
    stack_id = heat.stacks.create(stack_name=unique("expire"), template=TEMPLATE,
                                  tags="needs-approval,approval-window-1")["stack"]["id"]
    stack = wait_for_status(heat, stack_id, "CREATE_FAILED")

    assert stack.stack_status_reason.startswith(
        "Lifecycle plugin ask pre-op CREATE: expired: no decision by ")
    reasons = [e.resource_status_reason for e in settled_events(heat, stack_id, "CREATE")]
    assert any("expired at" in reason for reason in reasons), reasons
    assert gated.calls(stack_id) == [
        ("guard", "pre", "CREATE"), ("ask", "pre", "CREATE"),
        ("ask", "post", "CREATE"), ("guard", "post", "CREATE")]


def test_a_replacement_of_a_database_is_refused_at_the_door_by_the_plan_aware_plugin(
        gated: Gated, tmp_path: pathlib.Path) -> None:
    heat = gated.heat
    name = unique("door")
    stack_id = heat.stacks.create(stack_name=name, template=TEMPLATE)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    # RandomString replaces on any property change: the plan says REPLACE for db.
    with pytest.raises(heat_exc.HTTPBadRequest) as refused:
        heat.stacks.update(stack_id, template=TEMPLATE, parameters={"length": 12})
    assert "guard: databases are never replaced or deleted: db (REPLACE)" in str(refused.value)
    # The openstack CLI exits 1 with the plugin's words, and nothing was stored.
    template = tmp_path / "t.yaml"
    template.write_text(TEMPLATE)
    result = servers.openstack_forked(_cli_env(gated), "stack", "update", "-t",
                                      str(template), "--parameter", "length=12", name,
                                      check=False)
    assert result.returncode == 1, result
    assert "guard: databases are never replaced or deleted: db (REPLACE)" in result.stderr
    assert heat.stacks.get(stack_id).stack_status == "CREATE_COMPLETE"
    assert [c for c in gated.calls(stack_id) if c[2] == "UPDATE"] == []


def test_an_unchanged_update_skips_the_cached_plugin(gated: Gated) -> None:
    heat = gated.heat
    stack_id = heat.stacks.create(stack_name=unique("cache"), template=TEMPLATE)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    for _ in range(2):
        heat.stacks.update(stack_id, template=TEMPLATE)
        wait_for_status(heat, stack_id, "UPDATE_COMPLETE")
        settled_events(heat, stack_id, "UPDATE")

    updates = [c[:2] for c in gated.calls(stack_id) if c[2] == "UPDATE"]
    # First update: all three; the second: cached skipped, owed nothing.
    assert updates.count(("cached", "pre")) == 1
    assert updates.count(("guard", "pre")) == 2
    skipped = [e.lifecycle for e in heat.events.list(stack_id)
               if getattr(e, "lifecycle", None) and e.lifecycle["verdict"] == "skipped"]
    assert [(s["plugin"], s["action"]) for s in skipped] == [("cached", "UPDATE")]


def _cli_env(gated: Gated) -> dict[str, str]:
    """The ``openstack`` CLI's environment for the tenant, as ``kiln-manage demo-env``
    prints it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(OS_AUTH_TYPE="admin_token", OS_TOKEN=gated.member.token,
               OS_ENDPOINT=gated.kiln.endpoint(gated.member.tenant_id))
    return env
