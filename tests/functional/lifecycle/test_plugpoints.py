"""Lifecycle plugins around real operations, driven through python-heatclient against
kiln-all with the built-in plugins and a pip-installed third-party package.

Installed order (ordinals, refined by before/after): policy 10, audit 5 after policy,
quota 20, gate 60 before placement, placement 50, hang 70. Those that support dry runs
(policy, audit, quota, placement) are also asked at the door of each create and update
(``[lifecycle_plugins] check_at_the_door``, on by default); gate and hang are asked by
the worker only, so their denials and timeouts are the worker's.
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import heat_for, settled_events, unique, wait_for_status
from tests.functional.lifecycle.conftest import PluginKiln

ORDER = ["policy", "audit", "approval", "quota", "gate", "placement", "hang"]


def none_stack(count: int) -> str:
    body = "".join(f"  r{i}:\n    type: OS::Heat::None\n" for i in range(count))
    return f"heat_template_version: 2018-08-31\nresources:\n{body}"


def typed_stack(type_name: str, count: int, properties: str = "{}") -> str:
    body = "".join(f"  r{i}:\n    type: {type_name}\n    properties: {properties}\n"
                   for i in range(count))
    return f"heat_template_version: 2018-08-31\nresources:\n{body}"


@pytest.fixture
def tenant(plugin_kiln: PluginKiln) -> servers.Credentials:
    return servers.new_tenant(plugin_kiln.env, unique("tenant-"))


@pytest.fixture
def heat(plugin_kiln: PluginKiln, tenant: servers.Credentials) -> Any:
    return heat_for(plugin_kiln.kiln, tenant)


def create(heat: Any, template: str, **fields: Any) -> tuple[str, str]:
    name = unique("s")
    created = heat.stacks.create(stack_name=name, template=template, **fields)
    return name, created["stack"]["id"]


def calls(heat: Any, stack_id: str, action: str
          ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The recorded pre-op and post-op calls of one action, once all post-ops are in."""
    records = [ev.lifecycle for ev in settled_events(heat, stack_id, action)
               if getattr(ev, "lifecycle", None) and ev.lifecycle["action"] == action]
    return ([r for r in records if r["phase"] == "pre"],
            [r for r in records if r["phase"] == "post"])


def lifecycle_report(plugin_kiln: PluginKiln, tenant: servers.Credentials, name: str,
                     stack_id: str) -> dict[str, Any]:
    url = f"{plugin_kiln.kiln.endpoint(tenant.tenant_id)}/stacks/{name}/{stack_id}/lifecycle"
    request = urllib.request.Request(url, headers={"X-Auth-Token": tenant.token})
    with urllib.request.urlopen(request, timeout=10) as response:
        body: dict[str, Any] = json.load(response)["lifecycle"]
    return body


def report_of(body: dict[str, Any], plugin: str) -> Any:
    return next(item["report"] for item in body["plugins"] if item["plugin"] == plugin)


def test_a_create_calls_every_plugin_in_order_then_post_ops_in_reverse(
        plugin_kiln: PluginKiln, heat: Any) -> None:
    _, stack_id = create(heat, none_stack(2))
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    pre, post = calls(heat, stack_id, "CREATE")

    assert [r["plugin"] for r in pre] == ORDER
    assert {r["verdict"] for r in pre} == {"allow"}
    assert [r["plugin"] for r in post] == ORDER[::-1]
    assert {(r["verdict"], r["is_stack_failure"]) for r in post} == {("done", False)}
    assert all(isinstance(r["duration_ms"], int) for r in pre + post)
    # The plugins' own account agrees, and they saw the resources and the final status;
    # audit, which supports dry runs, was first asked at the door, before the create was
    # stored, with the id the stack then got.
    door, *own = plugin_kiln.calls(stack_id)
    assert (door["plugin"], door["phase"], door["action"], door["dry_run"]) == (
        "audit", "pre", "CREATE", True)
    assert {c["dry_run"] for c in own} == {False}
    assert [(c["plugin"], c["phase"]) for c in own] == [
        ("audit", "pre"), ("gate", "pre"), ("hang", "pre"),
        ("hang", "post"), ("gate", "post"), ("audit", "post")]
    assert own[0]["resources"] == ["r0", "r1"]
    assert own[0]["status"] == "CREATE_IN_PROGRESS"
    assert own[-1]["status"] == "CREATE_COMPLETE"
    assert own[-1]["is_stack_failure"] is False


def test_a_denied_create_touches_nothing_and_unwinds_in_reverse(
        plugin_kiln: PluginKiln, heat: Any, tenant: servers.Credentials) -> None:
    name, stack_id = create(heat, none_stack(2), tags="gate-deny")
    stack = wait_for_status(heat, stack_id, "CREATE_FAILED")
    pre, post = calls(heat, stack_id, "CREATE")

    assert stack.stack_status_reason == (
        f"Lifecycle plugin gate pre-op CREATE: deny: gate closed for {name}")
    assert heat.resources.list(stack_id) == []
    assert [(r["plugin"], r["verdict"]) for r in pre] == [
        ("policy", "allow"), ("audit", "allow"), ("approval", "allow"), ("quota", "allow"),
        ("gate", "deny")]
    assert [r["plugin"] for r in post] == ["gate", "quota", "approval", "audit", "policy"]
    assert {r["is_stack_failure"] for r in post} == {True}
    own = plugin_kiln.calls(stack_id)
    assert "hang" not in {c["plugin"] for c in own}
    assert [(c["plugin"], c["phase"], c.get("is_stack_failure")) for c in own][-2:] == [
        ("gate", "post", True), ("audit", "post", True)]
    # quota reserved in its pre-op and gave the slot back in its post-op.
    assert report_of(lifecycle_report(plugin_kiln, tenant, name, stack_id), "quota") is None


def test_a_resource_failure_tells_every_post_op(heat: Any) -> None:
    template = ("heat_template_version: 2018-08-31\nresources:\n"
                "  bad:\n    type: OS::Heat::TestResource\n    properties: {fail: true}\n")
    _, stack_id = create(heat, template)
    wait_for_status(heat, stack_id, "CREATE_FAILED")
    pre, post = calls(heat, stack_id, "CREATE")

    assert [r["plugin"] for r in pre] == ORDER
    assert [r["plugin"] for r in post] == ORDER[::-1]
    assert {r["is_stack_failure"] for r in post} == {True}


def test_a_hung_plugin_times_out_and_still_gets_its_post_op(
        plugin_kiln: PluginKiln, heat: Any) -> None:
    started = time.monotonic()
    _, stack_id = create(heat, none_stack(1), tags="hang")
    stack = wait_for_status(heat, stack_id, "CREATE_FAILED")
    elapsed = time.monotonic() - started
    pre, post = calls(heat, stack_id, "CREATE")

    assert stack.stack_status_reason == (
        "Lifecycle plugin hang pre-op CREATE: timeout: no answer within 1 s")
    assert pre[-1]["verdict"] == "timeout" and pre[-1]["blocking"] is True
    assert [r["plugin"] for r in post] == ORDER[::-1]
    assert elapsed < 20, "the worker waited on the hung plugin far past its timeout"
    assert heat.resources.list(stack_id) == []


def test_warnings_are_recorded_and_the_create_goes_on(heat: Any) -> None:
    _, stack_id = create(heat, none_stack(7), tags="audit-warn")
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    pre, _ = calls(heat, stack_id, "CREATE")

    verdicts = {r["plugin"]: (r["verdict"], r["message"]) for r in pre}
    assert verdicts["audit"] == ("warn", "audit noticed 7 resources")
    assert verdicts["policy"][0] == "warn" and "big-stack" in verdicts["policy"][1]


def test_a_create_a_policy_rule_denies_is_refused_at_the_door_and_nothing_stored(
        plugin_kiln: PluginKiln, heat: Any) -> None:
    name = unique("s")
    with pytest.raises(heat_exc.HTTPBadRequest) as refused:
        heat.stacks.create(stack_name=name,
                           template=typed_stack("OS::Heat::Value", 4, "{value: 1}"))

    error = refused.value.error["error"]
    assert error["type"] == "LifecycleDenied"
    assert error["message"].startswith("Lifecycle plugin policy denied CREATE: ")
    assert "value-cap" in error["message"] and "at most three values" in error["message"]
    assert name not in [stack.stack_name for stack in heat.stacks.list()]
    # Only the door's dry runs were made: no worker ever saw the stack.
    assert [(c["plugin"], c["dry_run"]) for c in plugin_kiln.calls_named(name)] == [
        ("audit", True)]


def test_a_failing_post_op_is_recorded_and_the_rest_still_run(heat: Any) -> None:
    _, stack_id = create(heat, none_stack(1), tags="audit-post-error")
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    _, post = calls(heat, stack_id, "CREATE")

    verdicts = [(r["plugin"], r["verdict"]) for r in post]
    assert verdicts[-2:] == [("audit", "error"), ("policy", "done")]
    assert "audit post-op failed on purpose" in post[-2]["message"]
    assert heat.stacks.get(stack_id).stack_status == "CREATE_COMPLETE"


def test_delete_calls_pre_and_post_ops(heat: Any) -> None:
    _, stack_id = create(heat, none_stack(1))
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    heat.stacks.delete(stack_id)  # accepted at once, though CREATE's post-ops may still run
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")
    pre, post = calls(heat, stack_id, "DELETE")

    assert [r["plugin"] for r in pre] == ORDER
    assert [r["plugin"] for r in post] == ORDER[::-1]
    assert {r["is_stack_failure"] for r in post} == {False}


def test_placement_reserves_refuses_and_releases(
        plugin_kiln: PluginKiln, heat: Any, tenant: servers.Credentials) -> None:
    # Four slots in all, one per RandomString.
    first, first_id = create(heat, typed_stack("OS::Heat::RandomString", 3))
    wait_for_status(heat, first_id, "CREATE_COMPLETE")
    held = report_of(lifecycle_report(plugin_kiln, tenant, first, first_id), "placement")
    assert sorted(item["resource"] for item in held) == ["r0", "r1", "r2"]
    assert {item["host"] for item in held} <= {"host-a1", "host-b1"}

    # No room for two more: refused at the door, reserving nothing.
    with pytest.raises(heat_exc.HTTPBadRequest) as refused:
        create(heat, typed_stack("OS::Heat::RandomString", 2))
    assert refused.value.error["error"]["message"].startswith(
        "Lifecycle plugin placement denied CREATE: ")

    heat.stacks.delete(first_id)
    wait_for_status(heat, first_id, "DELETE_COMPLETE")
    calls(heat, first_id, "DELETE")
    assert not report_of(lifecycle_report(plugin_kiln, tenant, first, first_id), "placement")

    third, third_id = create(heat, typed_stack("OS::Heat::RandomString", 2))
    wait_for_status(heat, third_id, "CREATE_COMPLETE")
    assert len(report_of(lifecycle_report(plugin_kiln, tenant, third, third_id),
                         "placement")) == 2
    heat.stacks.delete(third_id)
    wait_for_status(heat, third_id, "DELETE_COMPLETE")
    calls(heat, third_id, "DELETE")


def test_placement_releases_what_a_failed_create_never_made(
        plugin_kiln: PluginKiln, heat: Any, tenant: servers.Credentials) -> None:
    template = """\
heat_template_version: 2018-08-31
resources:
  bad:
    type: OS::Heat::TestResource
    properties: {fail: true}
  never:
    type: OS::Heat::RandomString
    depends_on: bad
"""
    name, stack_id = create(heat, template)
    wait_for_status(heat, stack_id, "CREATE_FAILED")
    calls(heat, stack_id, "CREATE")
    assert not report_of(lifecycle_report(plugin_kiln, tenant, name, stack_id), "placement")


def test_a_tenant_cannot_read_another_tenants_lifecycle(
        plugin_kiln: PluginKiln, heat: Any) -> None:
    name, stack_id = create(heat, none_stack(1))
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    other = servers.new_tenant(plugin_kiln.env, unique("tenant-"))
    url = (f"{plugin_kiln.kiln.endpoint(other.tenant_id)}/stacks/{name}/{stack_id}"
           "/lifecycle")
    request = urllib.request.Request(url, headers={"X-Auth-Token": other.token})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 404
    caught.value.close()


@pytest.mark.parametrize("action, run, final", [
    ("SUSPEND", "suspend", "SUSPEND_COMPLETE"),
    ("CHECK", "check", "CHECK_COMPLETE"),
])
def test_stack_actions_call_pre_and_post_ops(heat: Any, action: str, run: str,
                                             final: str) -> None:
    _, stack_id = create(heat, none_stack(1))
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    calls(heat, stack_id, "CREATE")
    getattr(heat.actions, run)(stack_id)
    wait_for_status(heat, stack_id, final)
    pre, post = calls(heat, stack_id, action)

    assert [r["plugin"] for r in pre] == ORDER
    assert [r["plugin"] for r in post] == ORDER[::-1]
    assert {r["is_stack_failure"] for r in post} == {False}
    if action == "SUSPEND":
        heat.actions.resume(stack_id)
        wait_for_status(heat, stack_id, "RESUME_COMPLETE")
        pre, post = calls(heat, stack_id, "RESUME")
        assert [r["plugin"] for r in pre] == ORDER
        assert [r["plugin"] for r in post] == ORDER[::-1]


def test_a_denied_suspend_leaves_the_resources_alone(heat: Any) -> None:
    name, stack_id = create(heat, none_stack(2), tags="gate-deny-suspend")
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    calls(heat, stack_id, "CREATE")
    heat.actions.suspend(stack_id)
    stack = wait_for_status(heat, stack_id, "SUSPEND_FAILED")
    _, post = calls(heat, stack_id, "SUSPEND")

    assert stack.stack_status_reason == (
        f"Lifecycle plugin gate pre-op SUSPEND: deny: gate closed for {name}")
    assert {r.resource_status for r in heat.resources.list(stack_id)} == {"CREATE_COMPLETE"}
    assert [r["plugin"] for r in post] == ["gate", "quota", "approval", "audit", "policy"]
    assert {r["is_stack_failure"] for r in post} == {True}


def test_abandon_and_adopt_call_pre_and_post_ops(
        plugin_kiln: PluginKiln, heat: Any) -> None:
    _, stack_id = create(heat, typed_stack("OS::Heat::RandomString", 1))
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    calls(heat, stack_id, "CREATE")
    data = heat.stacks.abandon(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")
    pre, post = calls(heat, stack_id, "ABANDON")
    assert [r["plugin"] for r in pre] == ORDER
    assert [r["plugin"] for r in post] == ORDER[::-1]

    adopted = heat.stacks.create(stack_name=unique("adopted"),
                                 adopt_stack_data=json.dumps(data))["stack"]["id"]
    wait_for_status(heat, adopted, "ADOPT_COMPLETE")
    pre, post = calls(heat, adopted, "ADOPT")
    assert [r["plugin"] for r in pre] == ORDER
    assert [r["plugin"] for r in post] == ORDER[::-1]
    # The plugins saw the adopted resources, at the door (as an ADOPT) and in the
    # worker; placement holds a slot for the adopted one.
    door, real = [c for c in plugin_kiln.calls(adopted)
                  if (c["plugin"], c["phase"]) == ("audit", "pre")]
    assert (door["action"], door["dry_run"], real["dry_run"]) == ("ADOPT", True, False)
    assert door["resources"] == real["resources"] == ["r0"]
    heat.stacks.delete(adopted)
    wait_for_status(heat, adopted, "DELETE_COMPLETE")
    calls(heat, adopted, "DELETE")


def test_an_update_shows_plugins_the_stored_and_the_new_stack(
        plugin_kiln: PluginKiln, heat: Any) -> None:
    _, stack_id = create(heat, none_stack(1))
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    calls(heat, stack_id, "CREATE")
    heat.stacks.update(stack_id, template=none_stack(3))
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE")
    pre, post = calls(heat, stack_id, "UPDATE")

    assert [r["plugin"] for r in pre] == ORDER
    assert [r["plugin"] for r in post] == ORDER[::-1]
    audit = [c for c in plugin_kiln.calls(stack_id)
             if c["plugin"] == "audit" and c["action"] == "UPDATE" and c["phase"] == "pre"]
    # At the door (a dry run) and in the worker, the same two sides of the update.
    assert [c["dry_run"] for c in audit] == [True, False]
    for call in audit:
        assert call["resources"] == ["r0"]
        assert call["current_resources"] == ["r0", "r1", "r2"]


def test_a_denied_update_changes_nothing_and_does_not_roll_back(heat: Any) -> None:
    name, stack_id = create(heat, none_stack(1), tags="gate-deny-update",
                            disable_rollback=False)
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    calls(heat, stack_id, "CREATE")
    heat.stacks.update(stack_id, template=none_stack(2), tags="gate-deny-update")
    stack = wait_for_status(heat, stack_id, "UPDATE_FAILED")
    calls(heat, stack_id, "UPDATE")

    assert stack.stack_status_reason == (
        f"Lifecycle plugin gate pre-op UPDATE: deny: gate closed for {name}")
    assert [r.resource_name for r in heat.resources.list(stack_id)] == ["r0"]
    assert heat.stacks.template(stack_id)["resources"].keys() == {"r0"}


def test_a_rolled_back_update_calls_rollback_pre_and_post_ops(heat: Any) -> None:
    _, stack_id = create(heat, none_stack(1), disable_rollback=False)
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    calls(heat, stack_id, "CREATE")
    failing = none_stack(1) + ("  bad:\n    type: OS::Heat::TestResource\n"
                               "    properties: {fail: true}\n")
    heat.stacks.update(stack_id, template=failing)
    wait_for_status(heat, stack_id, "ROLLBACK_COMPLETE", timeout=60)
    _, update_post = calls(heat, stack_id, "UPDATE")
    pre, post = calls(heat, stack_id, "ROLLBACK")

    assert {r["is_stack_failure"] for r in update_post} == {True}
    assert [r["plugin"] for r in pre] == ORDER
    assert [r["plugin"] for r in post] == ORDER[::-1]
    assert {r["is_stack_failure"] for r in post} == {False}
    assert [r.resource_name for r in heat.resources.list(stack_id)] == ["r0"]


def test_a_create_cancelled_by_a_delete_tells_its_post_ops_then_deletes(heat: Any) -> None:
    template = ("heat_template_version: 2018-08-31\nresources:\n"
                "  slow:\n    type: OS::Heat::TestResource\n"
                "    properties: {action_wait_secs: {create: 30}}\n")
    _, stack_id = create(heat, template)
    deadline = time.monotonic() + 20
    while [r.resource_status for r in heat.resources.list(stack_id)] != [
            "CREATE_IN_PROGRESS"]:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")
    _, create_post = calls(heat, stack_id, "CREATE")
    delete_pre, delete_post = calls(heat, stack_id, "DELETE")

    assert [r["plugin"] for r in create_post] == ORDER[::-1]
    assert {r["is_stack_failure"] for r in create_post} == {True}
    assert [r["plugin"] for r in delete_pre] == ORDER
    assert {r["is_stack_failure"] for r in delete_post} == {False}
