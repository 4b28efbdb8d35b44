"""The read side of a stack as Heat shows it: environment, files, outputs, resources
(filters, detail, attributes, metadata) and events (paging, sorting, filters, 404s)."""

from __future__ import annotations

import json
import os
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
  greeting: {type: string, default: hello}
  secret: {type: string, hidden: true}
resources:
  first:
    type: OS::Heat::TestResource
    metadata:
      plain: {a: [1, 2]}
      greeting: {get_param: greeting}
      secret: {get_param: secret}
      embedded: {str_replace: {template: "[$s]", params: {$s: {get_param: secret}}}}
      stack: {get_param: OS::stack_name}
      ref: {get_resource: second}
      attr: {get_attr: [second, value]}
      mixed: {list_join: ["-", [{get_param: greeting}, {get_resource: second}]]}
    properties:
      value: {get_param: greeting}
  second:
    type: OS::Heat::RandomString
    properties: {length: 8}
outputs:
  said:
    description: what first stored
    value: {get_attr: [first, output]}
  plain:
    value: {get_param: greeting}
"""


@pytest.fixture(scope="module")
def setup(kiln_all: servers.Kiln) -> dict[str, Any]:
    creds = servers.new_tenant(kiln_all.env, unique("reads-"))
    heat = heat_for(kiln_all, creds)
    name = unique("s")
    stack_id = heat.stacks.create(
        stack_name=name, template=TEMPLATE, parameters={"secret": "pa55word-x"},
        files={"file:///tmp/notes.txt": "some notes"})["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    url = f"{kiln_all.endpoint(creds.tenant_id)}/stacks/{name}/{stack_id}"
    return {"heat": heat, "name": name, "id": stack_id, "url": url,
            "headers": {"X-Auth-Token": creds.token, "Content-Type": "application/json"},
            "cli": {**{k: v for k, v in os.environ.items() if not k.startswith("OS_")},
                    "OS_AUTH_TYPE": "admin_token", "OS_TOKEN": creds.token,
                    "OS_ENDPOINT": kiln_all.endpoint(creds.tenant_id)}}


def get(setup: dict[str, Any], path: str, **params: Any) -> requests.Response:
    return requests.get(setup["url"] + path, params=params, headers=setup["headers"],
                        timeout=10)


# --- stack: environment, files, outputs ----------------------------------------------


def test_environment_has_heat_sections_and_masks_hidden_values(setup: dict[str, Any]
                                                                ) -> None:
    environment = setup["heat"].stacks.environment(setup["name"])
    assert environment == {
        "parameters": {"secret": "******"}, "parameter_defaults": {},
        "resource_registry": {"resources": {}}, "encrypted_param_names": [],
        "event_sinks": []}


def test_files_come_back_as_given(setup: dict[str, Any]) -> None:
    assert setup["heat"].stacks.files(setup["name"]) == {
        "file:///tmp/notes.txt": "some notes"}


def test_outputs_list_show_and_resolve_outputs_false(setup: dict[str, Any]) -> None:
    heat = setup["heat"]
    listed = heat.stacks.output_list(setup["id"])["outputs"]
    assert sorted(listed, key=lambda o: o["output_key"]) == [
        {"output_key": "plain", "description": "No description given"},
        {"output_key": "said", "description": "what first stored"}]
    assert heat.stacks.output_show(setup["id"], "said")["output"] == {
        "output_key": "said", "description": "what first stored", "output_value": "hello"}
    with pytest.raises(heat_exc.HTTPNotFound):
        heat.stacks.output_show(setup["id"], "nosuch")
    unresolved = heat.stacks.get(setup["id"], resolve_outputs=False).to_dict()
    assert "outputs" not in unresolved and unresolved["stack_name"] == setup["name"]
    assert len(heat.stacks.get(setup["id"]).outputs) == 2
    refused = get(setup, "", resolve_outputs="perhaps")
    assert refused.status_code == 400


LATER = """\
heat_template_version: 2018-08-31
resources:
  slow: {type: OS::Heat::TestResource, properties: {value: ready, attr_wait_secs: 1.5}}
  word: {type: OS::Heat::Value, properties: {value: 'a,b'}}
outputs:
  later: {value: {get_attr: [slow, output]}}
  broken: {value: {str_split: [',', {get_attr: [word, value]}, 3]}}
"""


def test_outputs_are_resolved_when_shown_and_one_that_cannot_be_carries_its_error(
        setup: dict[str, Any]) -> None:
    """Heat resolves outputs on show: one whose attribute is known only after a while
    (attr_wait_secs) is null when the create completes and has its value later."""
    heat = setup["heat"]
    stack_id = heat.stacks.create(stack_name=unique("later-"),
                                  template=LATER)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    assert heat.stacks.output_show(stack_id, "later")["output"] == {
        "output_key": "later", "description": "No description given", "output_value": None}

    broken = heat.stacks.output_show(stack_id, "broken")["output"]
    assert broken == {"output_key": "broken", "description": "No description given",
                      "output_value": None, "output_error": (
                          'outputs.broken.value.str_split: Incorrect index to "str_split" '
                          "should be between 0 and 1")}
    failed = servers.openstack_forked(setup["cli"], "stack", "output", "show", stack_id,
                                      "broken", check=False)
    assert failed.returncode == 1
    assert f"Output error: {broken['output_error']}" in failed.stderr

    deadline = time.monotonic() + 10
    while heat.stacks.output_show(stack_id, "later")["output"]["output_value"] is None:
        assert time.monotonic() < deadline, "the output never got its value"
        time.sleep(0.1)
    shown = servers.openstack_forked(setup["cli"], "stack", "output", "show", stack_id,
                                     "later", "-f", "json")
    assert json.loads(shown.stdout) == {"output_key": "later", "output_value": "ready",
                                        "description": "No description given"}
    outputs = {o["output_key"]: o for o in heat.stacks.get(stack_id).outputs}
    assert outputs["later"]["output_value"] == "ready"
    assert outputs["broken"] == broken


# --- resources ------------------------------------------------------------------------


@pytest.mark.parametrize("filters, expected", [
    ({}, ["first", "second"]),
    ({"type": "Random"}, ["second"]),  # a substring of the type, as in Heat
    ({"type": ["Random", "TestRes"]}, ["first", "second"]),
    ({"name": "first"}, ["first"]),
    ({"status": "COMPLETE"}, ["first", "second"]),
    ({"status": "CREATE_COMPLETE"}, ["first", "second"]),
    ({"status": "UPDATE_COMPLETE"}, []),
    ({"action": "DELETE"}, []),
    ({"id": "999999"}, []),  # Heat's internal row id: accepted, never shown
])
def test_resource_filters(setup: dict[str, Any], filters: dict[str, Any],
                          expected: list[str]) -> None:
    found = setup["heat"].resources.list(setup["id"], filters=filters)
    assert sorted(r.resource_name for r in found) == expected


def test_resource_filter_by_physical_id_and_detail(setup: dict[str, Any]) -> None:
    heat = setup["heat"]
    second = heat.resources.get(setup["id"], "second")
    found = heat.resources.list(setup["id"], with_detail=True, nested_depth=2,
                                filters={"physical_resource_id": second.physical_resource_id})
    assert [r.resource_name for r in found] == ["second"]
    assert len(found[0].attributes["value"]) == 8
    assert found[0].description == ""
    plain = heat.resources.list(setup["id"])[0].to_dict()
    assert "attributes" not in plain and "metadata" not in plain


@pytest.mark.parametrize("params, message", [
    ({"bogus": "x"}, "Invalid filter parameters ['bogus']"),
    ({"nested_depth": "deep"}, "Only integer is acceptable by 'nested_depth'."),
    ({"with_detail": "yes"}, 'Unrecognized value "yes" for "with_detail", acceptable values '
                             "are: true, false."),
])
def test_bad_resource_list_queries(setup: dict[str, Any], params: dict[str, str],
                                   message: str) -> None:
    response = get(setup, "/resources", **params)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == message


def test_resource_show_with_attr(setup: dict[str, Any]) -> None:
    shown = setup["heat"].resources.get(setup["id"], "first", with_attr=["output", "nosuch"])
    assert shown.attributes["output"] == "hello"
    assert shown.attributes["nosuch"] is None
    assert "metadata" not in shown.to_dict()


def test_metadata_resolves_parameters_and_masks_hidden_values(setup: dict[str, Any]
                                                              ) -> None:
    metadata = setup["heat"].resources.metadata(setup["name"], "first")
    assert metadata == {
        "plain": {"a": [1, 2]},
        "greeting": "hello",
        "secret": "******",
        "embedded": "[******]",
        "stack": setup["name"],
        # Functions of resources are shown as written, their arguments evaluated.
        "ref": {"get_resource": "second"},
        "attr": {"get_attr": ["second", "value"]},
        "mixed": {"list_join": ["-", ["hello", {"get_resource": "second"}]]},
    }
    assert setup["heat"].resources.metadata(setup["name"], "second") == {}
    response = get(setup, "/resources/nosuch/metadata")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == (
        f"The Resource (nosuch) could not be found in Stack {setup['name']}.")


# --- events ---------------------------------------------------------------------------


def test_event_order_paging_and_sort_keys(setup: dict[str, Any]) -> None:
    heat = setup["heat"]
    ascending = heat.events.list(setup["id"], sort_dir="asc")
    assert [e.id for e in heat.events.list(setup["id"])] == [e.id for e in ascending][::-1]
    # sort_keys without a direction sorts ascending; event_time is the written order.
    assert [e.id for e in heat.events.list(setup["id"], sort_keys="event_time")] == [
        e.id for e in ascending]
    # By type, pages of two joined by markers give the whole list, each once.
    by_type = get(setup, "/events", sort_keys="resource_type", sort_dir="desc").json()
    whole = [e["id"] for e in by_type["events"]]
    shown = {e.id: e for e in heat.events.list(setup["id"], sort_dir="asc")}
    types = [heat.events.get(setup["id"], shown[i].resource_name, i).resource_type
             for i in whole]
    assert types == sorted(types, reverse=True)
    pages: list[str] = []
    marker = None
    while True:
        params = {"sort_keys": "resource_type", "sort_dir": "desc", "limit": 2,
                  **({"marker": marker} if marker else {})}
        page = [e["id"] for e in get(setup, "/events", **params).json()["events"]]
        if not page:
            break
        pages += page
        marker = page[-1]
    assert pages == whole


def test_event_filters_compare_the_stored_columns(setup: dict[str, Any]) -> None:
    heat = setup["heat"]
    created = heat.events.list(setup["id"], filters={"resource_action": "CREATE",
                                                     "resource_status": "COMPLETE"})
    # Lifecycle plugin calls are stack events too; they have tests of their own.
    assert sorted(e.resource_name for e in created
                  if not getattr(e, "lifecycle", None)) == sorted(["first", "second",
                                                                   setup["name"]])
    assert heat.events.list(setup["id"], filters={"resource_status": "CREATE_COMPLETE"}) == []
    randoms = heat.events.list(setup["id"], filters={"resource_type": "OS::Heat::RandomString"})
    assert {e.resource_name for e in randoms} == {"second"}
    # Unknown keys are ignored here, as in Heat.
    assert len(heat.events.list(setup["id"], filters={"bogus": "x"})) == len(
        heat.events.list(setup["id"]))


def test_resource_events_and_their_404s(setup: dict[str, Any]) -> None:
    heat = setup["heat"]
    events = heat.events.list(setup["id"], resource_name="first", sort_dir="asc")
    assert [e.resource_status for e in events] == ["CREATE_IN_PROGRESS", "CREATE_COMPLETE"]
    shown = heat.events.get(setup["id"], "first", events[0].id)
    assert shown.resource_type == "OS::Heat::TestResource"
    assert shown.resource_properties == {}
    response = get(setup, "/resources/nosuch/events")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "No events found for resource nosuch"
    for path in ("/resources/second/events/" + events[0].id,
                 "/resources/first/events/00000000-0000-0000-0000-000000000000"):
        response = get(setup, path)
        assert response.status_code == 404
        event_id = path.rsplit("/", 1)[1]
        assert response.json()["error"]["message"] == f"No event {event_id} found"


def test_nested_depth_adds_the_root_stack_link(setup: dict[str, Any]) -> None:
    plain = get(setup, "/events").json()["events"][0]
    assert [link["rel"] for link in plain["links"]] == ["self", "resource", "stack"]
    nested = get(setup, "/events", nested_depth=1).json()["events"][0]
    assert nested["links"][-1] == {"href": setup["url"], "rel": "root_stack"}
    assert get(setup, "/events", nested_depth="x").status_code == 400


def test_a_deleted_stack_stays_readable_by_id(kiln_all: servers.Kiln) -> None:
    creds = servers.new_tenant(kiln_all.env, unique("deleted-"))
    heat = heat_for(kiln_all, creds)
    name = unique("s")
    stack_id = heat.stacks.create(
        stack_name=name, template=TEMPLATE, parameters={"secret": "pa55word-x"},
        files={"f": "x"})["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")

    with pytest.raises(heat_exc.HTTPNotFound):
        heat.stacks.get(name)
    events = heat.events.list(stack_id, sort_dir="asc")
    assert events[-1].resource_status == "DELETE_COMPLETE"
    assert heat.events.get(stack_id, name, events[-1].id).resource_name == name
    assert heat.stacks.template(stack_id)["resources"]["second"]["type"] == (
        "OS::Heat::RandomString")
    assert heat.stacks.environment(stack_id)["parameters"] == {"secret": "******"}
    assert heat.stacks.files(stack_id) == {"f": "x"}
    assert "outputs" not in heat.stacks.get(stack_id).to_dict()
