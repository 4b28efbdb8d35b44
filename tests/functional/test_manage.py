"""``kiln-manage`` against real databases, populated through the API (python-heatclient)
and the engine: what an operator does from the control host.

Most commands run kiln-manage's own ``main`` in the test's process
(``servers.manage_here``): the same parsing, wiring and output, without a new
interpreter's second of imports for each of some hundred commands. The executable itself
is run where the process matters: its help and usage exit codes, its working directory,
and a follow that streams while another process writes."""

from __future__ import annotations

import csv
import io
import json
import pathlib
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import fresh_database, heat_for, wait_for_status

PLAIN = """heat_template_version: 2018-08-31
parameters:
  secret: {type: string, hidden: true, default: hunter2}
resources:
  base: {type: OS::Heat::None}
  app:
    type: OS::Heat::TestResource
    depends_on: base
    properties: {value: {get_param: secret}, action_wait_secs: {update: 4}}
  front: {type: OS::Heat::None, properties: {x: {get_attr: [app, output]}}}
"""
BROKEN = """heat_template_version: 2018-08-31
resources:
  fine: {type: OS::Heat::None}
  doomed: {type: OS::Heat::TestResource, depends_on: fine, properties: {fail: true}}
"""


def waiting(seconds: int) -> str:
    return ("heat_template_version: 2018-08-31\nresources:\n"
            f"  slow: {{type: OS::Heat::TestResource, properties: "
            f"{{action_wait_secs: {{create: {seconds}}}}}}}\n")


def manage(env: dict[str, str], *args: str, check: bool = True
           ) -> subprocess.CompletedProcess[str]:
    return servers.manage_here(env, *args, check=check)


def as_json(env: dict[str, str], *args: str) -> Any:
    return json.loads(manage(env, *args, "-f", "json").stdout)


def failed(env: dict[str, str], *args: str, code: int = 1) -> str:
    result = manage(env, *args, check=False)
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    return result.stderr


class Site:
    """kiln-all on SQLite with two tenants: acme has ``web`` (complete) and ``broken``
    (failed), beta has another ``web``."""

    def __init__(self, kiln: servers.Kiln) -> None:
        self.kiln = kiln
        self.env = kiln.env
        self.acme_creds = servers.new_tenant(self.env, "acme")
        self.beta_creds = servers.new_tenant(self.env, "beta")
        self.acme = heat_for(kiln, self.acme_creds)
        self.beta = heat_for(kiln, self.beta_creds)
        self.web = self.create(self.acme, "web", PLAIN, "CREATE_COMPLETE")
        self.broken = self.create(self.acme, "broken", BROKEN, "CREATE_FAILED")
        self.beta_web = self.create(self.beta, "web", PLAIN, "CREATE_COMPLETE")

    @staticmethod
    def create(heat: Any, name: str, template: str, wanted: str) -> str:
        stack_id: str = heat.stacks.create(stack_name=name, template=template)["stack"]["id"]
        wait_for_status(heat, stack_id, wanted)
        return stack_id


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    kiln = servers.start_all(tmp_path_factory.mktemp("manage"), None)
    try:
        yield Site(kiln)
    finally:
        kiln.stop()


# --- schema, tenants, tokens ------------------------------------------------------------


def test_db_commands_and_a_schema_behind(tmp_path: pathlib.Path) -> None:
    env = servers.kiln_environment(tmp_path, None)
    database = tmp_path / "kiln.sqlite"
    refused = failed(env, "db", "current")
    assert f"There is no Kiln database at {database}" in refused
    assert "Run `kiln-manage db upgrade` to create it there" in refused
    assert not database.exists()  # refused, never created empty

    manage(env, "db", "upgrade")
    assert "Database at revision 0012" in manage(env, "db", "downgrade", "0012").stdout
    assert "is at 0012, but this Kiln needs 0019" in failed(env, "worker", "list")
    manage(env, "db", "upgrade")
    assert "matches the models" in manage(env, "db", "check").stdout
    assert as_json(env, "db", "current")["up_to_date"] is True
    assert as_json(env, "stack", "list") == []

    # From another directory, with no state path in the environment: the user's
    # ~/.kiln/kiln.conf (what `make run` writes) leads to the same database.
    home = tmp_path / "home"
    (home / ".kiln").mkdir(parents=True)
    (home / ".kiln" / "kiln.conf").write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n")
    elsewhere = {name: value for name, value in env.items()
                 if name != "OS_DEFAULT__STATE_PATH"} | {"HOME": str(home)}
    found = servers.manage(elsewhere, "stack", "list", "-f", "json", cwd=home)
    assert json.loads(found.stdout) == []


def test_tenant_and_token_commands(site: Site) -> None:
    env = site.env
    tenant = as_json(env, "tenant", "create", "gamma")
    assert tenant["name"] == "gamma"
    assert "already exists" in failed(env, "tenant", "create", "gamma")

    issued = as_json(env, "token", "create", "--tenant", "gamma", "--role", "admin",
                     "--expires-in", "30d")
    assert issued["role"] == "admin" and len(issued["token"]) >= 40
    assert issued["token"].startswith("kiln_") and issued["expires_at"] is not None
    heat = heat_for(site.kiln, servers.Credentials(tenant["id"], issued["token"]))
    stack_id = Site.create(heat, "only", PLAIN, "CREATE_COMPLETE")
    listed = as_json(env, "token", "list", "--tenant", "gamma")
    assert [t["id"] for t in listed] == [issued["id"]]
    assert listed[0]["last_used_at"] is not None  # the create above used it
    assert issued["token"] not in json.dumps(listed)
    shown = as_json(env, "tenant", "show", "gamma")
    assert (shown["id"], shown["tokens"], shown["live_tokens"], shown["stacks"]) == (
        tenant["id"], 1, 1, 1)

    assert "still has 1 stacks" in failed(env, "tenant", "delete", "gamma")
    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")
    revoked = as_json(env, "token", "revoke", issued["id"])
    assert revoked["revoked_at"] is not None
    with pytest.raises(heat_exc.HTTPUnauthorized):
        list(heat.stacks.list())
    assert "The Token (nope) could not be found." in failed(env, "token", "revoke", "nope")

    assert "Deleted tenant gamma" in manage(env, "tenant", "delete", "gamma").stdout
    names = manage(env, "tenant", "list", "-f", "value", "-c", "name").stdout.split()
    assert "acme" in names and "gamma" not in names
    assert "The Tenant (gamma) could not be found." in failed(
        env, "token", "create", "--tenant", "gamma")
    failed(env, "token", "create", "--tenant", "acme", "--role", "root", code=2)


def test_demo_env_is_stable_and_private(tmp_path: pathlib.Path) -> None:
    env = servers.kiln_environment(tmp_path, None, 18123)
    servers.migrate(env)  # in this process: test_db_commands_and_a_schema_behind runs it
    first = manage(env, "demo-env").stdout.strip()
    second = manage(env, "demo-env").stdout.strip()
    assert first == second
    assert first.startswith("export OS_AUTH_TYPE=admin_token "
                            "OS_ENDPOINT=http://127.0.0.1:18123/v1/")
    credentials = tmp_path / "demo-credentials.json"
    assert credentials.stat().st_mode & 0o777 == 0o600


# --- finding a failed stack across tenants -------------------------------------------------


def test_stack_list_finds_failed_stacks_across_tenants_in_every_format(site: Site) -> None:
    # Other tests add stacks to this site, in other tenants or with other names.
    env = site.env
    failed_stacks = as_json(env, "stack", "list", "--status", "FAILED")
    assert {s["status"] for s in failed_stacks} == {"FAILED"}
    broken = next(s for s in failed_stacks if s["id"] == site.broken)
    assert (broken["name"], broken["tenant"], broken["action"]) == ("broken", "acme", "CREATE")
    assert "doomed" in broken["status_reason"]

    acme = as_json(env, "stack", "list", "--tenant", "acme", "--name", "web", "--name",
                   "broken", "--sort", "name", "--asc")
    assert [s["id"] for s in acme] == [site.broken, site.web]
    webs = as_json(env, "stack", "list", "--name", "web", "--status", "CREATE_COMPLETE",
                   "--older-than", "0s")
    assert {(s["id"], s["tenant"]) for s in webs} == {(site.web, "acme"),
                                                      (site.beta_web, "beta")}
    assert as_json(env, "stack", "list", "--older-than", "1h") == []

    documents = yaml.safe_load(manage(env, "stack", "list", "-f", "yaml").stdout)
    assert {site.web, site.broken, site.beta_web} <= {d["id"] for d in documents}
    rows = list(csv.DictReader(io.StringIO(
        manage(env, "stack", "list", "-f", "csv", "--tenant", "beta").stdout)))
    assert [(r["id"], r["tenant"]) for r in rows] == [(site.beta_web, "beta")]
    assert "last_change" in rows[0]
    values = manage(env, "stack", "list", "-f", "value", "-c", "id", "--status", "FAILED",
                    "--tenant", "acme", "--name", "broken")
    assert values.stdout.split() == [site.broken]
    table = manage(env, "stack", "list", "--tenant", "acme").stdout
    assert "| id " in table and "broken" in table

    assert "status BOGUS" in failed(env, "stack", "list", "--status", "BOGUS")
    failed(env, "stack", "list", "--sort", "bogus", code=2)
    failed(env, "stack", "list", "--older-than", "soon", code=2)


def test_stack_show_says_which_resource_failed_and_masks_hidden_values(site: Site) -> None:
    env = site.env
    shown = as_json(env, "stack", "show", "broken")
    assert (shown["id"], shown["tenant"], shown["status"]) == (site.broken, "acme", "FAILED")
    doomed = next(r for r in shown["resources"] if r["resource_name"] == "doomed")
    assert doomed["status"] == "CREATE_FAILED" and doomed["status_reason"]
    assert shown["operation_id"] is None  # nothing is running on it
    assert {(c["plugin"], c["phase"], c["verdict"]) for c in shown["lifecycle"]} >= {
        ("policy", "pre", "allow"), ("quota", "post", "done")}
    assert any(e["status"] == "FAILED" for e in shown["last_events"])

    web = as_json(env, "stack", "show", "web", "--tenant", "acme", "--events", "3")
    assert web["parameters"]["secret"] == "******"
    assert len(web["last_events"]) == 3
    assert "hunter2" not in manage(env, "stack", "show", site.web).stdout
    assert yaml.safe_load(manage(env, "stack", "show", site.web, "-f", "yaml").stdout)[
        "id"] == site.web
    value = manage(env, "stack", "show", site.web, "-f", "value", "-c", "status").stdout
    assert value.strip() == "COMPLETE"

    ambiguous = failed(env, "stack", "show", "web")
    assert site.web in ambiguous and site.beta_web in ambiguous and "--tenant" in ambiguous
    assert "The Stack (nothing) could not be found." in failed(env, "stack", "show", "nothing")


def test_stack_resources_events_graph_and_template(site: Site) -> None:
    env = site.env
    resources = as_json(env, "stack", "resources", site.web)
    assert {(r["resource_name"], r["status"]) for r in resources} == {
        ("base", "COMPLETE"), ("app", "COMPLETE"), ("front", "COMPLETE")}
    assert [r["resource_name"] for r in as_json(env, "stack", "resources", "broken",
                                                "--status", "FAILED")] == ["doomed"]

    events = as_json(env, "stack", "events", site.web)
    assert events[-1]["resource_name"] == "web"  # oldest first: the stack's own last
    assert ("app", "CREATE", "COMPLETE") in {
        (e["resource_name"], e["action"], e["status"]) for e in events}
    assert [e["resource_name"] for e in as_json(env, "stack", "events", site.web,
                                                "--resource", "app")] == ["app", "app"]

    tree = manage(env, "stack", "graph", site.web).stdout.splitlines()
    assert tree == ["base (OS::Heat::None, CREATE_COMPLETE)",
                    "    app (OS::Heat::TestResource, CREATE_COMPLETE)",
                    "        front (OS::Heat::None, CREATE_COMPLETE)"]
    dot = manage(env, "stack", "graph", site.web, "-f", "dot").stdout
    assert dot.startswith(f'digraph "{site.web}" {{') and '"front" -> "app";' in dot
    edges = {e["resource_name"]: e["requires"]
             for e in as_json(env, "stack", "graph", site.web)}
    assert edges == {"base": [], "app": ["base"], "front": ["app"]}

    template = yaml.safe_load(manage(env, "stack", "template", site.web).stdout)
    assert template == site.acme.stacks.template(site.web)  # as the API returns it
    assert json.loads(manage(env, "stack", "template", site.web, "--json").stdout) == template


def test_plugins_and_resource_types(site: Site, tmp_path: pathlib.Path) -> None:
    env = site.env
    plugins = as_json(env, "plugins", "list")
    assert [(p["position"], p["name"], p["enabled"], p["distribution"]) for p in plugins] == [
        (1, "policy", True, "kiln"), (2, "approval", True, "kiln"), (3, "quota", True, "kiln"),
        (4, "placement", True, "kiln")]
    assert {p["tree_scope"] for p in plugins} == {"every"}  # each counts every nested stack
    assert "4 lifecycle plugins enabled, in order: policy, approval, quota, placement" in manage(
        env, "plugins", "check").stdout
    held = {r["plugin"]: r for r in as_json(env, "plugins", "describe", site.web,
                                             "--tenant", "acme")}
    assert set(held) == {"policy", "approval", "quota", "placement"}
    assert held["quota"]["error"] is None

    types = {t["name"]: t for t in as_json(env, "resource-types", "list")}
    assert types["OS::Heat::None"]["distribution"] == "kiln"
    assert types["OS::Heat::None"]["entry_point"] == \
        "plugins.resources.none_resource:NoneResource"

    without = {**env, "OS_LIFECYCLE_PLUGINS__DISABLED": "placement"}
    listed = {p["name"]: p for p in as_json(without, "plugins", "list")}
    assert (listed["placement"]["enabled"], listed["placement"]["position"]) == (False, None)
    assert listed["placement"]["reason"] == "listed in [lifecycle_plugins] disabled"

    broken = {**env, "OS_LIFECYCLE_PLUGINS__ENABLED": "policy,qouta"}
    reason = failed(broken, "plugins", "check")
    assert "[lifecycle_plugins] enabled: qouta: no such lifecycle plugin" in reason
    assert "Traceback" not in reason


# --- watching and repairing --------------------------------------------------------------


def test_events_follow_streams_until_the_operation_ends(site: Site) -> None:
    # Its update outlasts the follow's first reads on a loaded machine (kiln-manage runs
    # in this process: no start-up to wait out) and the 2 s asserted below.
    slow = PLAIN.replace("{update: 4}", "{update: 5}")
    watched = Site.create(site.acme, "watched", slow, "CREATE_COMPLETE")
    site.acme.stacks.update(watched, template=slow, parameters={"secret": "swordfish"})
    started = time.monotonic()
    result = manage(site.env, "stack", "events", "watched", "--tenant", "acme", "--follow",
                    "--interval", "0.2", "--limit", "1")
    lines = result.stdout.splitlines()
    assert time.monotonic() - started >= 2.0
    assert any(line.startswith("progress: UPDATE RUNNING: ") for line in lines), lines
    assert lines[-1] == "progress: UPDATE COMPLETE: 6/6 steps done, 0 running, 0 failed"
    assert any(line.endswith("watched  UPDATE_COMPLETE  Stack UPDATE completed successfully")
               for line in lines)
    assert site.acme.stacks.get(watched).stack_status == "UPDATE_COMPLETE"

    again = manage(site.env, "stack", "events", watched, "--follow")
    assert again.returncode == 0 and "progress" not in again.stdout  # nothing running


def test_operations_can_be_listed_shown_and_cancelled(site: Site) -> None:
    env = site.env
    heat = heat_for(site.kiln, servers.new_tenant(env, "ops"))
    stack_id = heat.stacks.create(stack_name="slow", template=waiting(60))["stack"]["id"]
    operation = _held_operation(env, stack_id)
    assert (operation["action"], operation["state"], operation["holder_alive"]) == (
        "CREATE", "RUNNING", True)
    worker = as_json(env, "worker", "list")[0]
    assert operation["held_by"] == [worker["id"]] and worker["steps_held"] >= 1

    shown = as_json(env, "operation", "show", operation["id"][:8])
    assert (shown["id"], shown["stack_name"], shown["steps_total"]) == (
        operation["id"], "slow", 1)
    assert "is being worked on by live worker" in failed(
        env, "stack", "reset-state", stack_id, "--to", "FAILED", "--reason", "x")
    assert "is alive; only a dead worker can be forgotten" in failed(
        env, "worker", "forget", worker["id"])

    follow = subprocess.Popen(
        [str(servers.BIN / "kiln-manage"), "stack", "events", stack_id, "--follow",
         "--interval", "0.2", "-f", "json"], env=env, text=True, stdout=subprocess.PIPE)
    assert follow.stdout is not None
    records = []
    while not records or "progress" not in records[-1]:  # following before the cancel
        records.append(json.loads(follow.stdout.readline()))
    assert records[0]["resource_name"] == "slow"
    cancelled = as_json(env, "operation", "cancel", operation["id"])
    assert cancelled["cancel_requested"] is True
    output, _ = follow.communicate(timeout=60)
    assert follow.returncode == 1  # the stack ended FAILED
    records += [json.loads(line) for line in output.splitlines()]
    progress = [r["progress"] for r in records if "progress" in r]
    assert progress[0]["state"] == "RUNNING" and progress[-1]["state"] == "FAILED"
    assert any(r.get("reason") == "Resource CREATE failed: Operation cancelled"
               for r in records)
    stack = wait_for_status(heat, stack_id, "CREATE_FAILED")
    assert "Operation cancelled" in stack.stack_status_reason
    assert "has already finished (FAILED)" in failed(env, "operation", "cancel",
                                                     operation["id"])
    assert operation["id"] not in {o["id"] for o in as_json(env, "operation", "list")}
    assert operation["id"] in {o["id"] for o in as_json(env, "operation", "list", "--all")}


def test_force_reset_of_a_stack_a_live_worker_holds_sticks(site: Site) -> None:
    env = site.env
    heat = heat_for(site.kiln, servers.new_tenant(env, "forcing"))
    # Long enough for the kiln-manage calls below on a loaded machine: in this process
    # they took 1.1 s together on a busy two-core machine; six times that and some.
    wait = 7
    started = time.monotonic()
    stack_id = heat.stacks.create(stack_name="forced", template=waiting(wait))["stack"]["id"]
    _held_operation(env, stack_id)
    reset = as_json(env, "stack", "reset-state", stack_id, "--to", "FAILED",
                    "--reason", "testing force", "--force")
    assert (reset["action"], reset["status"]) == ("CREATE", "FAILED")
    assert time.monotonic() - started < wait, "the reset came after the step had finished"
    # The worker's step finishes waiting, and must not overwrite the reset.
    time.sleep(started + wait + 1.5 - time.monotonic())
    stack = heat.stacks.get(stack_id)
    assert stack.stack_status == "CREATE_FAILED"
    assert stack.stack_status_reason.endswith(": testing force")


def _held_operation(env: dict[str, str], stack_id: str) -> Any:
    """The stack's running operation once a worker holds one of its steps."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        # RUNNING: a worker holds a PENDING one too, while it calls the pre-ops.
        found = [o for o in as_json(env, "operation", "list", "--stack", stack_id)
                 if o["held_by"] and o["state"] == "RUNNING"]
        if found:
            return found[0]
        time.sleep(0.2)
    raise AssertionError(f"no worker took up stack {stack_id}")


def test_purge_deleted_removes_old_deleted_stacks_in_batches(site: Site) -> None:
    env = site.env
    heat = heat_for(site.kiln, servers.new_tenant(env, "delta"))
    gone = [Site.create(heat, f"gone{i}", PLAIN, "CREATE_COMPLETE") for i in range(3)]
    kept = Site.create(heat, "kept", PLAIN, "CREATE_COMPLETE")
    for stack_id in gone:
        heat.stacks.delete(stack_id)
    for stack_id in gone:
        wait_for_status(heat, stack_id, "DELETE_COMPLETE")

    assert as_json(env, "purge-deleted", "--older-than", "1d") == []
    planned = as_json(env, "purge-deleted", "--older-than", "0s", "--dry-run",
                      "--batch-size", "2")
    mine = [p for p in planned if p["id"] in gone]  # other tests delete stacks too
    assert len(mine) == 3 and all(p["events"] > 0 for p in mine)  # a delete keeps events
    assert as_json(env, "stack", "show", gone[0])["status"] == "COMPLETE"

    purged = as_json(env, "purge-deleted", "--older-than", "0s", "--batch-size", "2")
    assert set(gone) <= {p["id"] for p in purged}
    assert "could not be found" in failed(env, "stack", "show", gone[0])
    assert [s["id"] for s in as_json(env, "stack", "list", "--deleted",
                                     "--tenant", "delta")] == [kept]
    assert heat.stacks.get(kept).stack_status == "CREATE_COMPLETE"


@pytest.mark.postgresql
def test_a_stack_left_by_a_dead_worker_is_repaired(tmp_path: pathlib.Path) -> None:
    with fresh_database() as url:  # its own: every worker and operation in it is this test's
        _repair_a_stack_left_by_a_dead_worker(tmp_path, url)


def _repair_a_stack_left_by_a_dead_worker(tmp_path: pathlib.Path, url: str) -> None:
    kiln = servers.start_split(tmp_path, url, engines=1, OS_ENGINE__LEASE_SECONDS="2")
    try:
        env = kiln.env
        heat = heat_for(kiln, servers.new_tenant(env, "acme"))
        stack_id = heat.stacks.create(stack_name="stuck", template=waiting(600))["stack"]["id"]
        operation = _held_operation(env, stack_id)
        engine = kiln.processes[1]
        engine.popen.kill()  # SIGKILL: the worker is gone with its leases
        engine.popen.wait()

        deadline = time.monotonic() + 20
        while as_json(env, "worker", "list", "--dead") == []:
            assert time.monotonic() < deadline, "the killed worker never showed dead"
            time.sleep(0.3)
        shown = as_json(env, "stack", "show", "stuck")
        assert (shown["status"], shown["operation_id"]) == ("IN_PROGRESS", operation["id"])

        reset = as_json(env, "stack", "reset-state", "stuck", "--to", "FAILED",
                        "--reason", "engine host lost")
        assert (reset["action"], reset["status"]) == ("CREATE", "FAILED")
        assert "by operator " in reset["status_reason"]
        stack = heat.stacks.get(stack_id)
        assert stack.stack_status == "CREATE_FAILED"
        assert stack.stack_status_reason == reset["status_reason"]
        resource = heat.resources.get(stack_id, "slow")
        assert resource.resource_status == "CREATE_FAILED"
        assert "Reset by operator" in resource.resource_status_reason
        # The plugins' post-ops are owed: the next engine calls them (no engine is alive).
        assert [o["state"] for o in as_json(env, "operation", "list", "--all")] == [
            "NOTIFYING"]

        dead = as_json(env, "worker", "list", "--dead")[0]
        assert as_json(env, "worker", "forget", dead["id"][:8])["id"] == dead["id"]
        assert as_json(env, "worker", "list") == []

        # The repaired stack is the tenant's again: a new engine deletes it.
        kiln.processes.append(servers.Process([str(servers.BIN / "kiln-engine")], env,
                                              tmp_path / "kiln-engine-2.log"))
        heat.stacks.delete(stack_id)
        wait_for_status(heat, stack_id, "DELETE_COMPLETE")
        reset_op = next(o for o in as_json(env, "operation", "list", "--all")
                        if o["id"] == operation["id"])
        assert reset_op["state"] == "FAILED"  # its post-ops called before the delete's
        posts = [e.lifecycle for e in heat.events.list(stack_id)
                 if getattr(e, "lifecycle", None) and e.lifecycle["phase"] == "post"
                 and e.lifecycle["action"] == "CREATE"]
        assert posts and all(p["verdict"] == "done" and p["is_stack_failure"]
                             for p in posts)
    finally:
        kiln.stop()


# --- help and usage -------------------------------------------------------------------------


def test_help_lists_every_command_and_usage_errors_exit_2(tmp_path: pathlib.Path) -> None:
    env = servers.kiln_environment(tmp_path, None)
    listing = servers.manage(env, "--help").stdout  # the executable itself
    for command in ("stack list", "stack show", "stack events", "stack graph",
                    "stack reset-state", "operation cancel", "operation approve",
                    "plugins check", "resource-types list", "worker forget",
                    "purge-deleted"):
        assert f"  {command} " in listing, command
    assert "example:" in manage(env, "stack", "reset-state", "--help").stdout
    for args, words in (((), "usage:"), (("stack", "reset-state", "web"), "--to")):
        result = servers.manage(env, *args, check=False)
        assert (result.returncode, words in result.stderr) == (2, True), result
    failed(env, "frobnicate", code=2)
