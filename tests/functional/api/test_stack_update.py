"""Stack update (PUT and PATCH), rollback of failed updates and creates, cancel_update:
through the real python-heatclient against kiln-all."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from heatclient import exc as heat_exc

from tests.functional import servers, templates
from tests.functional.conftest import heat_for, unique, wait_for_status

BASE = templates.UPDATABLE


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln) -> Any:
    return heat_for(kiln_all, servers.new_tenant(kiln_all.env, unique("upd-")))


def create(heat: Any, template: str = BASE, **fields: Any) -> str:
    stack_id: str = heat.stacks.create(stack_name=unique("s"), template=template,
                                       **fields)["stack"]["id"]
    return stack_id


def physical(heat: Any, stack_id: str) -> dict[str, str]:
    return {r.resource_name: r.physical_resource_id for r in heat.resources.list(stack_id)}


def output(heat: Any, stack_id: str, key: str) -> Any:
    return heat.stacks.output_show(stack_id, key)["output"]["output_value"]


def events_of(heat: Any, stack_id: str, after: str) -> list[tuple[str, str, str]]:
    """(resource, status, physical id) of the resource events after the event ``after``."""
    events = heat.events.list(stack_id, sort_dir="asc")
    ids = [e.id for e in events]
    return [(e.resource_name, e.resource_status, e.physical_resource_id)
            for e in events[ids.index(after) + 1:]
            if not getattr(e, "lifecycle", None) and e.physical_resource_id != stack_id
            and e.resource_name != ""]


def last_event(heat: Any, stack_id: str) -> str:
    event_id: str = heat.events.list(stack_id, sort_dir="asc")[-1].id
    return event_id


def test_a_parameter_only_patch_touches_only_what_uses_the_parameter(heat: Any) -> None:
    stack_id = create(heat)
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    before, word, mark = physical(heat, stack_id), output(heat, stack_id, "word"), \
        last_event(heat, stack_id)

    heat.stacks.update(stack_id, existing=True, parameters={"v": "two"})
    stack = wait_for_status(heat, stack_id, "UPDATE_COMPLETE")

    after = physical(heat, stack_id)
    assert output(heat, stack_id, "word") == word  # the RandomString was not regenerated
    assert after["word"] == before["word"] and after["a"] == before["a"]
    assert after["b"] != before["b"]  # update_replace: a new one, then the old deleted
    assert output(heat, stack_id, "b") == "two"
    assert stack.parameters["v"] == "two"
    changes = events_of(heat, stack_id, mark)
    assert ("a", "UPDATE_COMPLETE", before["a"]) in changes
    assert ("b", "CREATE_COMPLETE", after["b"]) in changes
    assert ("b", "DELETE_COMPLETE", before["b"]) in changes
    assert not [c for c in changes if c[0] == "word"]


def test_heatclient_reads_an_update_and_a_lookup_without_a_decode_error(
        heat: Any, caplog: pytest.LogCaptureFixture) -> None:
    """heatclient's HTTPClient (an endpoint and a token, as the benchmarks use it) parses
    every answer that says JSON, and logs "Could not decode response body as JSON" at
    ERROR for one that is not: the 202 of an update and the 302 of a lookup carry webob's
    JSON status document, as Heat's do."""
    name = unique("s")
    stack_id = heat.stacks.create(stack_name=name, template=BASE)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    with caplog.at_level(logging.ERROR, logger="heatclient"):
        heat.stacks.update(name, template=BASE, parameters={"v": "two"})  # 302, then 202
        wait_for_status(heat, stack_id, "UPDATE_COMPLETE")
        heat.stacks.update(stack_id, existing=True, parameters={"v": "three"})
        wait_for_status(heat, stack_id, "UPDATE_COMPLETE")
        heat.stacks.export(name)  # the lookup's 302 read as it is, not followed

    assert [r.getMessage() for r in caplog.records if r.name.startswith("heatclient")] == []


def test_put_adds_and_removes_resources_and_keeps_the_rest(heat: Any) -> None:
    stack_id = create(heat)
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    before = physical(heat, stack_id)
    template = BASE.replace("  word:\n    type: OS::Heat::RandomString\n"
                            "    properties: {length: 10}\n",
                            "  extra:\n    type: OS::Heat::None\n").replace(
        "  word: {value: {get_attr: [word, value]}}\n", "")

    heat.stacks.update(stack_id, template=template)
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE")

    after = physical(heat, stack_id)
    assert set(after) == {"a", "b", "extra"}
    assert after["a"] == before["a"] and after["b"] == before["b"]
    assert heat.stacks.template(stack_id)["resources"].keys() == {"a", "b", "extra"}


def test_a_failed_update_rolls_back_to_the_exact_previous_resources(heat: Any) -> None:
    stack_id = create(heat, disable_rollback=False)
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    before, b_value = physical(heat, stack_id), output(heat, stack_id, "b")
    # a changes in place, b is replaced, and a new resource fails after both.
    failing = BASE.replace("outputs:", "  broken:\n    type: OS::Heat::TestResource\n"
                           "    depends_on: b\n    properties: {fail: true}\noutputs:")

    heat.stacks.update(stack_id, template=failing, parameters={"v": "two"})
    stack = wait_for_status(heat, stack_id, "ROLLBACK_COMPLETE", timeout=60)

    assert stack.stack_status_reason == "Stack ROLLBACK completed successfully"
    assert physical(heat, stack_id) == before  # b's replacement undone, broken deleted
    assert output(heat, stack_id, "b") == b_value == "one"
    assert heat.stacks.template(stack_id)["resources"].keys() == {"word", "a", "b"}
    statuses = [e.resource_status for e in heat.events.list(stack_id, sort_dir="asc")
                if e.resource_name == stack.stack_name and e.physical_resource_id == stack_id
                and not getattr(e, "lifecycle", None)]
    assert statuses[-3:] == ["UPDATE_FAILED", "ROLLBACK_IN_PROGRESS", "ROLLBACK_COMPLETE"]


def test_a_failed_update_without_rollback_stays_failed_and_deletes_cleanly(
        heat: Any) -> None:
    stack_id = create(heat)  # rollback disabled: Heat's default
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    failing = BASE.replace("      update_replace: true\n",
                           "      update_replace: true\n      fail: true\n")

    heat.stacks.update(stack_id, template=failing)
    stack = wait_for_status(heat, stack_id, "UPDATE_FAILED")
    # b's value did not change, so update_replace does not apply: b fails in place.
    assert stack.stack_status_reason.startswith(
        "Resource UPDATE failed: ValueError: resources.b: Test Resource failed b")

    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")


def test_a_failed_create_with_rollback_deletes_what_it_made(heat: Any) -> None:
    template = BASE.replace("outputs:", "  broken:\n    type: OS::Heat::TestResource\n"
                            "    depends_on: b\n    properties: {fail: true}\noutputs:")
    stack_id = create(heat, template, disable_rollback=False)
    stack = wait_for_status(heat, stack_id, "ROLLBACK_COMPLETE", timeout=60)
    assert stack.stack_status_reason == "Stack ROLLBACK completed successfully"
    assert heat.resources.list(stack_id) == []


def test_cancel_update_rolls_back(heat: Any) -> None:
    stack_id = create(heat)
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    before = physical(heat, stack_id)
    slow = BASE.replace("    properties: {value: {get_param: v}}\n",
                        "    properties: {value: {get_param: v}, wait_secs: 30}\n")
    heat.stacks.update(stack_id, template=slow, parameters={"v": "two"})
    deadline = time.monotonic() + 20
    while {r.resource_name: r.resource_status for r in heat.resources.list(stack_id)}.get(
            "a") != "UPDATE_IN_PROGRESS":
        assert time.monotonic() < deadline
        time.sleep(0.1)

    heat.actions.cancel_update(stack_id)
    wait_for_status(heat, stack_id, "ROLLBACK_COMPLETE", timeout=60)
    assert physical(heat, stack_id) == before


def test_a_second_update_while_one_runs_is_a_409(heat: Any) -> None:
    slow = BASE.replace("    properties: {value: {get_param: v}}\n",
                        "    properties: {value: {get_param: v}, wait_secs: 2}\n")
    stack_id = create(heat, slow)
    with pytest.raises(heat_exc.HTTPConflict):
        heat.stacks.update(stack_id, existing=True, parameters={"v": "x"})
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")


def test_patch_keeps_the_template_and_clears_parameters(heat: Any) -> None:
    stack_id = create(heat, parameters={"v": "custom"})
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    heat.stacks.update(stack_id, existing=True, template=None, clear_parameters=["v"])
    stack = wait_for_status(heat, stack_id, "UPDATE_COMPLETE")
    assert stack.parameters["v"] == "one"


def test_a_suspended_stack_cannot_be_updated(heat: Any) -> None:
    stack_id = create(heat)
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    heat.actions.suspend(stack_id)
    wait_for_status(heat, stack_id, "SUSPEND_COMPLETE")
    with pytest.raises(heat_exc.HTTPBadRequest, match="suspended is not supported"):
        heat.stacks.update(stack_id, existing=True, parameters={"v": "x"})
