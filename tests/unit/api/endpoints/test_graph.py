"""``GET .../stacks/{name}/{id}/graph`` (engine.api.endpoints.graph) through the real app:
nodes keyed across the nested tree, edges from prerequisite to dependent, each node's
line in its stack's ``/source`` text, the resources an update is deleting and the ones it
replaced, the template's resources not planned yet, and tenancy."""

from __future__ import annotations

from typing import Any

import pytest

from engine.context import ADMIN_ROLE
from engine.db.session import Database
from engine.resources.registry import ResourceTypeRegistry
from tests.unit.api.endpoints.console_api import ConsoleApi
from tests.unit.conftest import Clock

TEMPLATE = """\
heat_template_version: 2018-08-31
resources:
  base:
    type: OS::Heat::TestResource
    properties: {value: a, update_replace: true}
  user:
    type: OS::Heat::TestResource
    properties: {value: {get_attr: [base, output]}}
  old: {type: OS::Heat::None}
"""
# base is replaced (its value changes); user waits a minute on its update, so the
# replaced base is not cleaned up yet; old is being deleted.
UPDATED = """\
heat_template_version: 2018-08-31
resources:
  base:
    type: OS::Heat::TestResource
    properties: {value: b, update_replace: true}
  user:
    type: OS::Heat::TestResource
    properties: {value: {get_attr: [base, output]}, wait_secs: 60}
"""
PARENT = """\
heat_template_version: 2018-08-31
resources:
  first: {type: OS::Heat::None}
  child:
    type: OS::Heat::Stack
    depends_on: first
    properties: {template: {get_file: child.yaml}}
"""
CHILD = """\
heat_template_version: 2018-08-31
resources:
  inner: {type: OS::Heat::None}
  inner/two:
    type: OS::Heat::Stack
    depends_on: inner
    properties: {template: {get_file: grandchild.yaml}}
"""
GRANDCHILD = """\
heat_template_version: 2018-08-31
resources:
  leaf: {type: OS::Heat::None}
"""
FIRST = """\
heat_template_version: 2018-08-31
resources:
  first: {type: OS::Heat::None}
"""
# An update of FIRST that adds a child stack of two resources, one needing the other.
GROWN = """\
heat_template_version: 2018-08-31
resources:
  first: {type: OS::Heat::None}
  child:
    type: OS::Heat::Stack
    depends_on: first
    properties: {template: {get_file: pair.yaml}}
"""
PAIR = """\
heat_template_version: 2018-08-31
resources:
  a: {type: OS::Heat::None}
  b:
    type: OS::Heat::TestResource
    properties: {value: {get_attr: [a, show]}}
"""


@pytest.fixture
def api(db: Database, registry: ResourceTypeRegistry, clock: Clock) -> ConsoleApi:
    return ConsoleApi(db, registry, clock)


def graph_of(api: ConsoleApi, path: str, **params: str) -> dict[str, Any]:
    result = api.call("GET", path + "/graph", params=params)
    assert result.status_code == 200, result.text
    graph: dict[str, Any] = result.json["graph"]
    return graph


def nodes_by_key(graph: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {node["key"]: node for node in graph["nodes"]}


def test_a_stack_is_its_nodes_and_edges_each_node_at_its_line(api: ConsoleApi) -> None:
    path = api.create("web", TEMPLATE)
    graph = graph_of(api, path)

    stack_id = path.rsplit("/", 1)[1]
    assert graph["stack"] == {"id": stack_id, "name": "web", "action": "CREATE",
                              "status": "COMPLETE",
                              "status_reason": "Stack CREATE completed successfully"}
    nodes = nodes_by_key(graph)
    assert set(nodes) == {"base", "user", "old"}
    assert {(edge["from"], edge["to"]) for edge in graph["edges"]} == {("base", "user")}
    listed = {r["resource_name"]: r for r in
              api.call("GET", path + "/resources").json["resources"]}
    for key, node in nodes.items():
        resource = listed[key]
        assert node["name"] == key and node["type"] == resource["resource_type"]
        assert f"{node['action']}_{node['status']}" == resource["resource_status"]
        assert node["status_reason"] == resource["resource_status_reason"]
        assert node["physical_resource_id"] == resource["physical_resource_id"]
        assert (node["stack_id"], node["parent"], node["nested_stack_id"]) == (
            stack_id, None, None)
        assert (node["in_template"], node["replaced"]) == (True, None)

    source = api.call("GET", path + "/source").json["source"]
    text = source["text"].splitlines()
    for key, node in nodes.items():
        assert node["line"] == source["lines"]["resources"][key]
        assert text[node["line"] - 1] == f"  {key}:"


def test_an_update_shows_what_it_deletes_and_what_it_replaced(api: ConsoleApi) -> None:
    path = api.create("web", TEMPLATE)
    before = nodes_by_key(graph_of(api, path))
    updated = api.call("PUT", path, body={"template": UPDATED})
    assert updated.status_code == 202, updated.text
    loop = api.worker()
    for _ in range(10):  # the clock stands still: user's update waits
        loop.run_once()

    graph = graph_of(api, path)
    assert (graph["stack"]["action"], graph["stack"]["status"]) == ("UPDATE", "IN_PROGRESS")
    nodes = nodes_by_key(graph)
    assert nodes["old"]["in_template"] is False
    assert nodes["old"]["line"] is None  # the current template has no line for it
    assert nodes["base"]["in_template"] is True
    assert nodes["base"]["replaced"] == {
        "physical_resource_id": before["base"]["physical_resource_id"]}
    assert nodes["base"]["physical_resource_id"] != before["base"]["physical_resource_id"]
    assert nodes["user"]["replaced"] is None

    api.settle(90)
    nodes = nodes_by_key(graph_of(api, path))
    assert set(nodes) == {"base", "user"}
    assert nodes["base"]["replaced"] is None


def test_nested_depth_brings_the_child_stacks_keyed_under_their_owner(
        api: ConsoleApi) -> None:
    path = api.create("web", PARENT, files={"child.yaml": CHILD,
                                            "grandchild.yaml": GRANDCHILD})
    top = graph_of(api, path)
    assert set(nodes_by_key(top)) == {"first", "child"}
    child_id = nodes_by_key(top)["child"]["nested_stack_id"]
    assert child_id

    graph = graph_of(api, path, nested_depth="2")
    nodes = nodes_by_key(graph)
    assert set(nodes) == {"first", "child", "child/inner", "child/inner%2Ftwo",
                          "child/inner%2Ftwo/leaf"}
    inner = nodes["child/inner"]
    assert (inner["name"], inner["parent"], inner["stack_id"]) == ("inner", "child", child_id)
    leaf = nodes["child/inner%2Ftwo/leaf"]
    assert (leaf["name"], leaf["parent"]) == ("leaf", "child/inner%2Ftwo")
    assert leaf["stack_id"] == nodes["child/inner%2Ftwo"]["nested_stack_id"]
    assert {(edge["from"], edge["to"]) for edge in graph["edges"]} == {
        ("first", "child"), ("child/inner", "child/inner%2Ftwo")}

    # A child's line is in the child's own /source.
    child = api.call("GET", f"/stacks/{inner['stack_id']}").headers["location"]
    child_path = child.split(f"/v1/{api.a.id}", 1)[1]
    source = api.call("GET", child_path + "/source").json["source"]
    assert inner["line"] == source["lines"]["resources"]["inner"]
    assert source["text"].splitlines()[inner["line"] - 1] == "  inner:"

    one = nodes_by_key(graph_of(api, path, nested_depth="1"))
    assert set(one) == {"first", "child", "child/inner", "child/inner%2Ftwo"}


def test_a_queued_create_shows_the_templates_resources_init_complete(
        api: ConsoleApi) -> None:
    created = api.call("POST", "/stacks", body={"stack_name": "web", "template": TEMPLATE})
    assert created.status_code == 201, created.text
    path = f"/stacks/web/{created.json['stack']['id']}"  # no worker has planned it

    graph = graph_of(api, path)
    assert (graph["stack"]["action"], graph["stack"]["status"]) == ("CREATE", "IN_PROGRESS")
    nodes = nodes_by_key(graph)
    assert set(nodes) == {"base", "user", "old"}
    assert {(edge["from"], edge["to"]) for edge in graph["edges"]} == {("base", "user")}
    lines = api.call("GET", path + "/source").json["source"]["lines"]["resources"]
    for key, node in nodes.items():
        assert (node["action"], node["status"], node["status_reason"]) == (
            "INIT", "COMPLETE", "")
        assert (node["physical_resource_id"], node["nested_stack_id"]) == ("", None)
        assert (node["in_template"], node["replaced"], node["parent"]) == (True, None, None)
        assert node["line"] == lines[key]
    assert nodes["old"]["type"] == "OS::Heat::None"
    # Heat's resource list is the rows': none yet.
    assert api.call("GET", path + "/resources").json["resources"] == []
    assert api.call("GET", path + "/graph", tenant=api.b.id).status_code == 404

    api.settle()  # the rows take over, the same nodes and edges
    planned = graph_of(api, path)
    assert {n["key"]: n["status"] for n in planned["nodes"]} == dict.fromkeys(nodes,
                                                                             "COMPLETE")
    assert {n["action"] for n in planned["nodes"]} == {"CREATE"}
    assert planned["edges"] == graph["edges"]

    assert api.call("DELETE", path).status_code == 204
    api.settle()  # a deleted stack's resources are gone, not waiting
    assert graph_of(api, path)["nodes"] == []


def test_a_partly_planned_update_shows_its_rows_and_the_templates_other_resources(
        api: ConsoleApi) -> None:
    path = api.create("web", FIRST)
    updated = api.call("PUT", path, body={"template": GROWN, "files": {"pair.yaml": PAIR}})
    assert updated.status_code == 202, updated.text
    loop = api.worker()
    for _ in range(10):  # until the child stack is created, before its plan
        loop.run_once()
        nodes = nodes_by_key(graph_of(api, path, nested_depth="1"))
        if nodes.get("child", {}).get("nested_stack_id"):
            break
    else:
        pytest.fail("the child stack was never created")

    graph = graph_of(api, path, nested_depth="1")
    assert {n["key"]: f"{n['action']}_{n['status']}" for n in graph["nodes"]} == {
        "first": "CREATE_COMPLETE", "child": "CREATE_IN_PROGRESS",
        "child/a": "INIT_COMPLETE", "child/b": "INIT_COMPLETE"}
    assert {(edge["from"], edge["to"]) for edge in graph["edges"]} == {
        ("first", "child"), ("child/a", "child/b")}  # depends_on; get_attr in the child
    b = nodes_by_key(graph)["child/b"]
    assert (b["parent"], b["stack_id"], b["physical_resource_id"]) == (
        "child", nodes["child"]["nested_stack_id"], "")
    child_path = api.call("GET", f"/stacks/{b['stack_id']}").headers["location"].split(
        f"/v1/{api.a.id}", 1)[1]
    assert b["line"] == api.call("GET", child_path + "/source").json[
        "source"]["lines"]["resources"]["b"]
    # The resource list is unchanged: the child has no rows yet.
    listed = api.call("GET", path + "/resources", params={"nested_depth": "1"})
    assert {r["resource_name"] for r in listed.json["resources"]} == {"first", "child"}
    # A child deeper than nested_depth stays out, rows or not.
    assert set(nodes_by_key(graph_of(api, path))) == {"first", "child"}
    theirs = api.call("GET", path + "/graph", tenant=api.b.id,
                      params={"nested_depth": "1"})
    assert theirs.status_code == 404

    api.settle()
    done = nodes_by_key(graph_of(api, path, nested_depth="1"))
    assert {key: node["action"] for key, node in done.items()} == dict.fromkeys(
        ("first", "child", "child/a", "child/b"), "CREATE")


@pytest.mark.parametrize("depth", ["-1", "x", "1.5"])
def test_a_bad_nested_depth_is_a_400(api: ConsoleApi, depth: str) -> None:
    path = api.create("web", TEMPLATE)
    result = api.call("GET", path + "/graph", params={"nested_depth": depth})
    assert result.status_code == 400
    assert result.json["error"]["type"] == "BadRequest"


def test_another_tenants_member_finds_no_graph_an_admin_does(api: ConsoleApi) -> None:
    path = api.create("web", TEMPLATE)
    theirs = api.call("GET", path + "/graph", tenant=api.b.id)
    assert theirs.status_code == 404
    assert theirs.json["error"]["message"] == "The Stack (web) could not be found."
    # A member of B naming tenant A in the path: refused before any lookup.
    crossing = api.call("GET", path + "/graph", token=api.tokens[(api.b.id, "member")])
    assert (crossing.status_code, crossing.json["error"]["type"]) == (403, "InvalidTenant")
    admin = api.call("GET", path + "/graph", token=api.tokens[(api.b.id, ADMIN_ROLE)])
    assert admin.status_code == 200, admin.text
    assert set(nodes_by_key(admin.json["graph"])) == {"base", "user", "old"}
    assert api.call("GET", path + "/graph", token="").status_code == 401
