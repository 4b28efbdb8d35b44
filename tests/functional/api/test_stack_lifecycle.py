"""Create, read and delete stacks through python-heatclient, on both database backends."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import requests
from heatclient import exc as heat_exc

from tests.functional import servers, templates
from tests.functional.conftest import heat_for, settled_events, unique, wait_for_status


@pytest.fixture(scope="module", params=["sqlite-kiln-all", "postgresql-split"])
def kiln(request: pytest.FixtureRequest) -> servers.Kiln:
    name = "kiln_all" if request.param.startswith("sqlite") else "kiln_postgresql"
    return request.getfixturevalue(name)


@pytest.fixture(scope="module")
def heat(kiln: servers.Kiln) -> Any:
    return heat_for(kiln, servers.new_tenant(kiln.env, unique("tenant-")))


def _create(heat: Any, template: str, **fields: Any) -> tuple[str, str]:
    name = unique("s")
    created = heat.stacks.create(stack_name=name, template=template, **fields)
    return name, created["stack"]["id"]


def test_chain_is_created_in_order_with_outputs_and_events(heat: Any) -> None:
    name, stack_id = _create(heat, templates.CHAIN)
    stack = wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    assert stack.stack_name == name
    assert stack.parameters["secret"] == "******"
    assert stack.parameters["greeting"] == "hello"
    assert stack.parameters["OS::stack_id"] == stack_id
    outputs = {o["output_key"]: o for o in stack.outputs}
    random_value = outputs["joined"]["output_value"].split("-", 1)[1]
    assert outputs["joined"]["output_value"] == f"hello-{random_value}"
    assert len(random_value) == 8
    assert "s3cr3t-value" not in str(outputs["leaked"])

    resources = {r.resource_name: r for r in heat.resources.list(stack_id)}
    assert {n: r.resource_status for n, r in resources.items()} == {
        "first": "CREATE_COMPLETE", "second": "CREATE_COMPLETE", "third": "CREATE_COMPLETE"}
    assert resources["first"].physical_resource_id.startswith(f"{name}-first-")
    # second by depends_on, third through get_attr
    assert resources["first"].required_by == ["second", "third"]

    events = settled_events(heat, stack_id, "CREATE")
    # Lifecycle plugin calls are stack events too; their order has tests of its own.
    order = [(e.resource_name, e.resource_status) for e in events
             if not getattr(e, "lifecycle", None)]
    assert order[0] == (name, "CREATE_IN_PROGRESS")
    assert order[-1] == (name, "CREATE_COMPLETE")
    done = [n for n, status in order if status == "CREATE_COMPLETE"]
    assert done == ["first", "second", "third", name]
    stack_events = [e for e in events if e.resource_name == name]
    assert all(e.physical_resource_id == stack_id for e in stack_events)

    first_page = heat.events.list(stack_id, sort_dir="asc", limit=2)
    rest = heat.events.list(stack_id, sort_dir="asc", marker=first_page[-1].id)
    assert [e.id for e in first_page + rest] == [e.id for e in events]


def test_a_chunked_request_body_is_read(kiln: servers.Kiln, heat: Any) -> None:
    body = json.dumps({"stack_name": unique("chunked"), "template": templates.FAILING})
    response = requests.post(
        heat.http_client.endpoint + "/stacks", data=(part.encode() for part in [body[:10],
                                                                                body[10:]]),
        headers={"X-Auth-Token": heat.http_client.auth_token,
                 "Content-Type": "application/json"}, timeout=10)
    assert response.request.headers.get("Transfer-Encoding") == "chunked"
    assert response.status_code == 201, response.text


def test_outputs_and_resource_show(heat: Any) -> None:
    _, stack_id = _create(heat, templates.CHAIN)
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    keys = sorted(o["output_key"] for o in heat.stacks.output_list(stack_id)["outputs"])
    assert keys == ["joined", "leaked"]
    joined = heat.stacks.output_show(stack_id, "joined")["output"]
    assert joined["output_value"].startswith("hello-")
    second = heat.resources.get(stack_id, "second")
    assert second.resource_type == "OS::Heat::RandomString"
    assert second.attributes["value"] == joined["output_value"].split("-", 1)[1]
    first = heat.resources.get(stack_id, "first", with_attr=["nothing_like_it"])
    assert first.attributes == {"output": "hello", "nothing_like_it": None}
    detailed = {r.resource_name: r for r in heat.resources.list(stack_id, with_detail=True)}
    assert detailed["third"].attributes["output"] == joined["output_value"]
    with pytest.raises(heat_exc.HTTPNotFound):
        heat.resources.get(stack_id, "nope")


def test_independent_resources_run_in_parallel(heat: Any) -> None:
    started = time.monotonic()
    _, stack_id = _create(heat, templates.WIDE)
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    # Ten resources that each wait one second finish together, not one after another.
    assert time.monotonic() - started < 6


def test_failed_resource_fails_the_stack_and_skips_its_dependents(heat: Any) -> None:
    _, stack_id = _create(heat, templates.FAILING)
    stack = wait_for_status(heat, stack_id, "CREATE_FAILED")
    assert stack.stack_status_reason == (
        "Resource CREATE failed: ValueError: resources.broken: Test Resource failed broken")
    statuses = {r.resource_name: r.resource_status for r in heat.resources.list(stack_id)}
    assert statuses == {"ok": "CREATE_COMPLETE", "broken": "CREATE_FAILED",
                        "never": "INIT_COMPLETE"}


def test_delete_is_a_soft_delete(heat: Any) -> None:
    name, stack_id = _create(heat, templates.CHAIN)
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    heat.stacks.delete(stack_id)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        stack = heat.stacks.get(stack_id)
        if stack.stack_status != "DELETE_IN_PROGRESS":
            break
        time.sleep(0.1)
    assert stack.stack_status == "DELETE_COMPLETE"
    assert stack.deletion_time is not None
    with pytest.raises(heat_exc.HTTPNotFound):
        heat.stacks.get(name)
    assert heat.resources.list(stack_id) == []
    assert [s.id for s in heat.stacks.list() if s.id == stack_id] == []
    assert stack_id in [s.id for s in heat.stacks.list(show_deleted=True)]
    reasons = [e.resource_status_reason for e in settled_events(heat, stack_id, "DELETE")
               if e.resource_name == name and not getattr(e, "lifecycle", None)]
    assert reasons[-2:] == ["Stack DELETE started", "Stack DELETE completed successfully"]
    with pytest.raises(heat_exc.HTTPNotFound):
        heat.stacks.delete(stack_id)
    # The name is free again once the stack is deleted.
    again = heat.stacks.create(stack_name=name, template=templates.CHAIN)
    assert again["stack"]["id"] != stack_id


def test_stack_list_pages_with_limit_and_marker(heat: Any) -> None:
    for _ in range(3):
        _create(heat, templates.FAILING)
    everything = [s.id for s in heat.stacks.list()]  # newest first
    first = [s.id for s in heat.stacks.list(limit=2)]
    second = [s.id for s in heat.stacks.list(limit=2, marker=first[-1])]
    assert first + second == everything[:4]
    ascending = [s.id for s in heat.stacks.list(sort_keys="creation_time", sort_dir="asc")]
    assert ascending == list(reversed(everything))
