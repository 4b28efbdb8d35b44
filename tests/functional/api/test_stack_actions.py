"""Stack actions (suspend, resume, check, cancel), abandon, export and adopt, through the
real python-heatclient."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import requests
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status

TEMPLATE = """\
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

SLOW = """\
heat_template_version: 2018-08-31
resources:
  slow:
    type: OS::Heat::TestResource
    properties: {action_wait_secs: {create: 30}}
"""


@pytest.fixture(scope="module")
def tenant(kiln_all: servers.Kiln) -> servers.Credentials:
    return servers.new_tenant(kiln_all.env, unique("acts-"))


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln, tenant: servers.Credentials) -> Any:
    return heat_for(kiln_all, tenant)


def create(heat: Any, template: str = TEMPLATE, **fields: Any) -> tuple[str, str]:
    name = unique("s")
    fields.setdefault("parameters", {"secret": "hunter2-hidden"} if template == TEMPLATE
                      else {})
    created = heat.stacks.create(stack_name=name, template=template, **fields)
    return name, created["stack"]["id"]


def statuses(heat: Any, stack_id: str) -> dict[str, str]:
    return {r.resource_name: r.resource_status for r in heat.resources.list(stack_id)}


def test_suspend_then_resume(heat: Any) -> None:
    _, stack_id = create(heat)
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    heat.actions.suspend(stack_id)
    assert heat.stacks.get(stack_id).stack_status in ("SUSPEND_IN_PROGRESS",
                                                      "SUSPEND_COMPLETE")
    stack = wait_for_status(heat, stack_id, "SUSPEND_COMPLETE")
    assert stack.stack_status_reason == "Stack SUSPEND completed successfully"
    assert set(statuses(heat, stack_id).values()) == {"SUSPEND_COMPLETE"}
    heat.actions.suspend(stack_id)  # a suspended stack: a no-op, as in Heat
    assert heat.stacks.get(stack_id).stack_status == "SUSPEND_COMPLETE"

    heat.actions.resume(stack_id)
    wait_for_status(heat, stack_id, "RESUME_COMPLETE")
    assert set(statuses(heat, stack_id).values()) == {"RESUME_COMPLETE"}


def test_check_reports_types_without_a_real_check(heat: Any) -> None:
    _, stack_id = create(heat)
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    heat.actions.check(stack_id)
    stack = wait_for_status(heat, stack_id, "CHECK_COMPLETE")
    assert stack.stack_status_reason == (
        "Stack CHECK completed successfully. 'CHECK' not fully supported (see resources)")
    assert set(statuses(heat, stack_id).values()) == {"CHECK_COMPLETE"}


@pytest.mark.parametrize("body, message", [
    ({}, "No action specified"),
    ({"suspend": None, "resume": None}, "Multiple actions specified"),
    ({"bogus": None}, "Invalid action bogus specified"),
    ({"cancel_update": None}, "Cancelling update when stack is CREATE_COMPLETE is not "
                              "supported."),
])
def test_bad_actions_are_400s(kiln_all: servers.Kiln, tenant: servers.Credentials,
                              heat: Any, body: dict[str, Any], message: str) -> None:
    name, stack_id = create(heat)
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    response = requests.post(
        f"{kiln_all.endpoint(tenant.tenant_id)}/stacks/{name}/{stack_id}/actions",
        data=json.dumps(body), headers={"X-Auth-Token": tenant.token,
                                        "Content-Type": "application/json"}, timeout=30)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"] == message


def test_an_action_on_a_busy_stack_is_a_409_and_cancel_stops_the_create(heat: Any) -> None:
    _, stack_id = create(heat, SLOW)
    with pytest.raises(heat_exc.HTTPConflict):
        heat.actions.suspend(stack_id)
    deadline = time.monotonic() + 20
    while statuses(heat, stack_id) != {"slow": "CREATE_IN_PROGRESS"}:
        assert time.monotonic() < deadline, statuses(heat, stack_id)
        time.sleep(0.1)
    heat.actions.cancel_without_rollback(stack_id)
    stack = wait_for_status(heat, stack_id, "CREATE_FAILED")
    assert stack.stack_status_reason == "Resource CREATE failed: Operation cancelled"
    assert statuses(heat, stack_id) == {"slow": "CREATE_FAILED"}


def test_export_then_abandon_then_adopt_takes_over_without_creating(
        heat: Any) -> None:
    name, stack_id = create(heat)
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    before = {r.resource_name: r.physical_resource_id for r in heat.resources.list(stack_id)}
    word = heat.stacks.output_show(stack_id, "word")["output"]["output_value"]

    exported = heat.stacks.export(stack_id)
    assert heat.stacks.get(stack_id).stack_status == "CREATE_COMPLETE"
    data = heat.stacks.abandon(stack_id)
    assert data == exported
    assert (data["name"], data["id"], data["action"], data["status"]) == (
        name, stack_id, "CREATE", "COMPLETE")
    assert data["environment"]["parameters"] == {"secret": "******"}
    assert "hunter2-hidden" not in json.dumps(data)
    assert {n: r["resource_id"] for n, r in data["resources"].items()} == before
    assert data["resources"]["word"]["resource_data"]["value"] == word
    gone = wait_for_status(heat, stack_id, "DELETE_COMPLETE")
    assert gone.stack_status_reason == "Stack ABANDON completed successfully"
    with pytest.raises(heat_exc.HTTPNotFound):
        heat.stacks.get(name)

    with pytest.raises(heat_exc.HTTPBadRequest, match="Hidden parameters secret are masked"):
        heat.stacks.create(stack_name=unique("adopted"), adopt_stack_data=json.dumps(data))
    adopted = heat.stacks.create(stack_name=unique("adopted"), adopt_stack_data=json.dumps(data),
                                 parameters={"secret": "hunter2-hidden"})
    new_id = adopted["stack"]["id"]
    assert heat.stacks.get(new_id).stack_status in ("ADOPT_IN_PROGRESS", "ADOPT_COMPLETE")
    wait_for_status(heat, new_id, "ADOPT_COMPLETE")
    after = {r.resource_name: r.physical_resource_id for r in heat.resources.list(new_id)}
    assert after == before
    assert set(statuses(heat, new_id).values()) == {"ADOPT_COMPLETE"}
    assert heat.stacks.output_show(new_id, "word")["output"]["output_value"] == word


def test_adopt_data_that_does_not_parse_is_a_400(heat: Any) -> None:
    with pytest.raises(heat_exc.HTTPBadRequest, match="Invalid adopt data"):
        heat.stacks.create(stack_name=unique("bad"), adopt_stack_data="{not: [json")
    with pytest.raises(heat_exc.HTTPBadRequest, match="Invalid adopt data: it has no template"):
        heat.stacks.create(stack_name=unique("bad"), adopt_stack_data='{"resources": {}}')


def test_deleting_a_stack_being_created_cancels_the_create_then_deletes(heat: Any) -> None:
    _, stack_id = create(heat, SLOW)
    deadline = time.monotonic() + 20
    while statuses(heat, stack_id) != {"slow": "CREATE_IN_PROGRESS"}:
        assert time.monotonic() < deadline, statuses(heat, stack_id)
        time.sleep(0.1)

    heat.stacks.delete(stack_id)
    assert heat.stacks.get(stack_id).stack_status == "DELETE_IN_PROGRESS"
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")
    reasons = [e.resource_status_reason for e in heat.events.list(stack_id, sort_dir="asc")
               if e.resource_name == "slow"]
    assert "CREATE aborted" in reasons
    # a delete of a stack already being deleted is refused
    with pytest.raises(heat_exc.HTTPNotFound):
        heat.stacks.delete(stack_id)
