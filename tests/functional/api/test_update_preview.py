"""Update preview (``PUT|PATCH .../preview``) through the real python-heatclient and the
``openstack stack update --dry-run`` CLI against kiln-all: Heat's ``resource_changes``,
decided as the update decides (each test then runs the update and checks that it did what
the preview said), hidden values masked, the update's 400s and 404s, the lifecycle
plugins' dry-run verdicts (a denial is a 400 naming each plugin that denies), and nothing
stored."""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status

CATEGORIES = ["added", "deleted", "replaced", "unchanged", "updated"]
PLUGINS = ["policy", "approval", "quota", "placement"]  # the built-ins, in pre-op order
OLD_SECRET, NEW_SECRET = "old-secret-4711", "new-secret-0815"

# a and its users: b (its attribute, replaced on any change), e (its attribute, changed in
# place), f (its reference id); c uses the attribute of a resource nothing changes.
BASE = """\
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
  c:
    type: OS::Heat::TestResource
    properties: {value: {get_attr: [word, value]}}
  e:
    type: OS::Heat::TestResource
    properties: {value: {get_attr: [a, output]}}
  f:
    type: OS::Heat::TestResource
    properties: {value: {get_resource: a}}
"""

SECRETIVE = """\
heat_template_version: 2018-08-31
parameters:
  password: {type: string, hidden: true}
resources:
  login:
    type: OS::Heat::TestResource
    metadata:
      note: {str_replace: {template: pw=$p, params: {$p: {get_param: password}}}}
    properties: {value: {get_param: password}}
  other:
    type: OS::Heat::TestResource
    properties: {value: {get_attr: [login, output]}}
"""


@pytest.fixture(scope="module")
def tenant(kiln_all: servers.Kiln) -> servers.Credentials:
    return servers.new_tenant(kiln_all.env, unique("upv-"))


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln, tenant: servers.Credentials) -> Any:
    return heat_for(kiln_all, tenant)


def create(heat: Any, template: str = BASE, **fields: Any) -> str:
    stack_id: str = heat.stacks.create(stack_name=unique("s"), template=template,
                                       **fields)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    return stack_id


def names(changes: dict[str, Any]) -> dict[str, list[str]]:
    resource_changes = changes["resource_changes"]
    assert sorted(resource_changes) == CATEGORIES
    return {category: [item["resource_name"] for item in items]
            for category, items in resource_changes.items()}


def items(changes: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["resource_name"]: item
            for found in changes["resource_changes"].values() for item in found}


def snapshot(heat: Any, stack_id: str) -> tuple[Any, ...]:
    """What a preview must leave as it was."""
    stack = heat.stacks.get(stack_id)
    return (stack.stack_status, stack.updated_time, stack.parameters,
            heat.stacks.template(stack_id),
            [(r.resource_name, r.resource_status, r.physical_resource_id)
             for r in heat.resources.list(stack_id)],
            [e.id for e in heat.events.list(stack_id)])


def last_event(heat: Any, stack_id: str) -> str:
    event_id: str = heat.events.list(stack_id, sort_dir="asc")[-1].id
    return event_id


def what_the_update_did(heat: Any, stack_id: str, after: str,
                        resources: set[str]) -> dict[str, list[str]]:
    """The categories of a finished update, read from its resource events."""
    events = heat.events.list(stack_id, sort_dir="asc")
    ids = [e.id for e in events]
    seen: dict[str, set[str]] = {name: set() for name in resources}
    for event in events[ids.index(after) + 1:]:
        if event.resource_name in seen and not getattr(event, "lifecycle", None):
            seen[event.resource_name].add(event.resource_status.split("_")[0])
    found: dict[str, list[str]] = {category: [] for category in CATEGORIES}
    for name, actions in sorted(seen.items()):
        if "UPDATE" in actions:
            found["updated"].append(name)
        elif actions >= {"CREATE", "DELETE"}:
            found["replaced"].append(name)
        elif "CREATE" in actions:
            found["added"].append(name)
        elif "DELETE" in actions:
            found["deleted"].append(name)
        else:
            found["unchanged"].append(name)
    return found


def no_less_disturbing(previewed: dict[str, list[str]], done: dict[str, list[str]]
                       ) -> bool:
    """Whether the preview promised at least the disturbance the update caused."""
    rank = {"unchanged": 0, "updated": 1, "replaced": 2, "added": 3, "deleted": 4}
    said = {name: category for category, listed in previewed.items() for name in listed}
    did = {name: category for category, listed in done.items() for name in listed}
    return said.keys() == did.keys() and all(
        rank[said[name]] >= rank[did[name]] and (rank[did[name]] < 3 or said[name] == did[name])
        for name in said)


def all_names(found: dict[str, list[str]]) -> set[str]:
    return {name for listed in found.values() for name in listed}


def dry_run_verdicts(changes: dict[str, Any]) -> dict[str, str]:
    lifecycle = changes["lifecycle"]
    assert [v["plugin"] for v in lifecycle] == PLUGINS
    for verdict in lifecycle:
        assert (verdict["phase"], verdict["action"], verdict["dry_run"]) == (
            "pre", "UPDATE", True)
    return {v["plugin"]: v["verdict"] for v in lifecycle}


# --- what changes ------------------------------------------------------------------------


def test_a_patch_that_changes_nothing_changes_nothing_and_stores_nothing(heat: Any) -> None:
    stack_id = create(heat)
    before = snapshot(heat, stack_id)

    changes = heat.stacks.preview_update(stack_id, existing=True, parameters={})

    assert names(changes) == {"added": [], "deleted": [], "replaced": [],
                              "unchanged": ["a", "b", "c", "e", "f", "word"], "updated": []}
    assert dry_run_verdicts(changes) == dict.fromkeys(PLUGINS, "allow")
    assert snapshot(heat, stack_id) == before


def test_a_parameter_patch_is_previewed_as_the_update_then_does_it(heat: Any) -> None:
    stack_id = create(heat)
    name = heat.stacks.get(stack_id).stack_name
    physical = {r.resource_name: r.physical_resource_id for r in heat.resources.list(stack_id)}
    before = snapshot(heat, stack_id)

    changes = heat.stacks.preview_update(stack_id, existing=True, parameters={"v": "two"})

    # a changes in place. b and e read its attribute, which only the update will know:
    # counted as changed, so b (update_replace) is replaced and e changed in place. f uses
    # a's reference id, which an in-place update keeps, and c an unchanged resource's
    # attribute, read from what is stored.
    expected = {"added": [], "deleted": [], "replaced": ["b"],
                "unchanged": ["c", "f", "word"], "updated": ["a", "e"]}
    assert names(changes) == expected
    assert snapshot(heat, stack_id) == before

    # Updated (and deleted) resources are shown as stored, the others as the new stack
    # has them (Heat's convention), in the engine's raw format.
    shown = items(changes)
    a = shown["a"]
    assert (a["resource_action"], a["resource_status"]) == ("CREATE", "COMPLETE")
    assert a["physical_resource_id"] == physical["a"]
    assert a["creation_time"] and a["updated_time"]
    assert a["attributes"] == {"output": "one"}
    assert a["required_by"] == ["b", "e", "f"]
    identity = {"tenant": heat.http_client.endpoint.rsplit("/", 1)[-1], "stack_name": name,
                "stack_id": stack_id}
    assert a["resource_identity"] == {**identity, "path": "/resources/a"}
    assert a["stack_identity"] == {**identity, "path": ""}
    assert a["stack_name"] == name
    assert "properties" not in a
    b = shown["b"]
    assert (b["resource_action"], b["resource_status"]) == ("INIT", "COMPLETE")
    assert b["physical_resource_id"] == "" and b["creation_time"] is None
    assert b["attributes"] == {"output": None}
    assert b["resource_type"] == "OS::Heat::TestResource"

    mark = last_event(heat, stack_id)
    heat.stacks.update(stack_id, existing=True, parameters={"v": "two"})
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE")
    assert what_the_update_did(heat, stack_id, mark, all_names(expected)) == expected


def test_a_put_that_adds_drops_and_retypes_resources(heat: Any) -> None:
    stack_id = create(heat)
    word = heat.resources.get(stack_id, "word")
    template = BASE.replace(
        "  word:\n    type: OS::Heat::RandomString\n    properties: {length: 10}\n",
        "  extra:\n    type: OS::Heat::None\n").replace(
        "  c:\n    type: OS::Heat::TestResource\n"
        "    properties: {value: {get_attr: [word, value]}}\n",
        "  c:\n    type: OS::Heat::None\n")

    changes = heat.stacks.preview_update(stack_id, template=template)

    expected = {"added": ["extra"], "deleted": ["word"], "replaced": ["c"],
                "unchanged": ["a", "b", "e", "f"], "updated": []}
    assert names(changes) == expected
    deleted = items(changes)["word"]
    assert deleted["physical_resource_id"] == word.physical_resource_id
    assert deleted["resource_action"] == "CREATE"
    assert deleted["attributes"]["value"] == word.attributes["value"]
    assert items(changes)["c"]["resource_type"] == "OS::Heat::None"

    mark = last_event(heat, stack_id)
    heat.stacks.update(stack_id, template=template)
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE")
    assert what_the_update_did(heat, stack_id, mark, all_names(expected)) == expected


def test_a_resource_marked_unhealthy_is_replaced(heat: Any) -> None:
    stack_id = create(heat)
    heat.resources.mark_unhealthy(stack_id, "a", True, "broken")

    changes = heat.stacks.preview_update(stack_id, existing=True)

    # The replacement's attribute and reference id are not known before the update.
    expected = {"added": [], "deleted": [], "replaced": ["a", "b"],
                "unchanged": ["c", "word"], "updated": ["e", "f"]}
    assert names(changes) == expected
    mark = last_event(heat, stack_id)
    heat.stacks.update(stack_id, existing=True)
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE")
    done = what_the_update_did(heat, stack_id, mark, all_names(expected))
    # Where a value was not known the preview errs towards more disturbance: the new a
    # has the same output, so b and e did not change after all; f moved to the new a.
    assert done == {"added": [], "deleted": [], "replaced": ["a"],
                    "unchanged": ["b", "c", "e", "word"], "updated": ["f"]}
    assert no_less_disturbing(names(changes), done)


def test_hidden_values_are_masked_on_both_sides(heat: Any) -> None:
    stack_id = create(heat, SECRETIVE, parameters={"password": OLD_SECRET})

    changes = heat.stacks.preview_update(stack_id, existing=True,
                                         parameters={"password": NEW_SECRET})

    assert names(changes)["updated"] == ["login", "other"]
    login = items(changes)["login"]
    assert login["attributes"] == {"output": "******"}
    assert login["metadata"] == {"note": "pw=******"}
    text = json.dumps(changes)
    assert OLD_SECRET not in text and NEW_SECRET not in text
    assert dry_run_verdicts(changes) == dict.fromkeys(PLUGINS, "allow")


def test_a_busy_stack_may_be_previewed_as_in_heat(heat: Any) -> None:
    busy = heat.stacks.create(
        stack_name=unique("busy"),
        template="heat_template_version: 2018-08-31\nresources:\n"
                 "  slow: {type: OS::Heat::TestResource, properties: {wait_secs: 60}}\n"
    )["stack"]["id"]
    assert heat.stacks.get(busy).stack_status == "CREATE_IN_PROGRESS"

    changes = heat.stacks.preview_update(busy, existing=True)

    assert all_names(names(changes)) == {"slow"}
    with pytest.raises(heat_exc.HTTPConflict):
        heat.stacks.update(busy, existing=True)


# --- what is refused, as update refuses it -----------------------------------------------


def send(kiln: servers.Kiln, creds: servers.Credentials, method: str, path: str,
         body: Any) -> requests.Response:
    return requests.request(method, f"{kiln.endpoint(creds.tenant_id)}{path}",
                            data=json.dumps(body), timeout=60, allow_redirects=False,
                            headers={"X-Auth-Token": creds.token,
                                     "Content-Type": "application/json"})


@pytest.mark.parametrize("method, body, error", [
    ("PUT", {"parameters": {}}, "No template specified"),
    ("PUT", {"template": "heat_template_version: 2018-08-31\nresources:\n"
                         "  a:\n    type: OS::Nope\n"},
     "template:4 resources.a.type: The Resource Type (OS::Nope) could not be found."),
    ("PATCH", {"parameters": {"nope": 1}}, "The Parameter (nope) was not defined in template."),
    ("PATCH", {"timeout_mins": "soon"}, "Only integer is acceptable by 'timeout_mins'."),
])
def test_bad_requests_fail_as_the_update_does(kiln_all: servers.Kiln,
                                              tenant: servers.Credentials, heat: Any,
                                              method: str, body: dict[str, Any],
                                              error: str) -> None:
    stack_id = create(heat)
    path = f"/stacks/{heat.stacks.get(stack_id).stack_name}/{stack_id}"
    before = snapshot(heat, stack_id)

    response = send(kiln_all, tenant, method, path + "/preview", body)

    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"].startswith(error)
    updated = send(kiln_all, tenant, method, path, body)
    assert (updated.status_code, updated.json()["error"]) == (400, response.json()["error"])
    assert snapshot(heat, stack_id) == before


def test_missing_stacks_and_bad_flags(kiln_all: servers.Kiln, tenant: servers.Credentials,
                                      heat: Any) -> None:
    stack_id = create(heat)
    name = heat.stacks.get(stack_id).stack_name
    body = {"template": BASE}
    unknown = send(kiln_all, tenant, "PUT", f"/stacks/{name}/{'0' * 8}-0000-4000-8000-"
                                            f"{'0' * 12}/preview", body)
    assert unknown.status_code == 404
    assert unknown.json()["error"]["message"] == f"The Stack ({name}) could not be found."
    bad_flag = send(kiln_all, tenant, "PUT", f"/stacks/{name}/{stack_id}/preview"
                                             "?show_nested=maybe", body)
    assert bad_flag.status_code == 400
    # show_nested is accepted (heatclient sends it) and ignored: the preview covers the
    # top stack.
    assert heat.stacks.preview_update(stack_id, template=BASE, show_nested=True)

    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")
    gone = send(kiln_all, tenant, "PATCH", f"/stacks/{name}/{stack_id}/preview", {})
    assert gone.status_code == 404
    with pytest.raises(heat_exc.HTTPNotFound):
        heat.stacks.preview_update(f"{name}/{stack_id}", existing=True)


# --- the openstack CLI ------------------------------------------------------------------


def test_openstack_stack_update_dry_run(kiln_all: servers.Kiln, tenant: servers.Credentials,
                                        heat: Any, tmp_path: pathlib.Path) -> None:
    stack_id = create(heat)
    name = heat.stacks.get(stack_id).stack_name
    before = snapshot(heat, stack_id)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(OS_AUTH_TYPE="admin_token", OS_ENDPOINT=kiln_all.endpoint(tenant.tenant_id),
               OS_TOKEN=tenant.token)
    template = tmp_path / "t.yaml"
    template.write_text(BASE)

    result = servers.openstack_forked(env, "stack", "update", "--dry-run", "-t",
                                      str(template), "--parameter", "v=two", "-f", "json",
                                      name)

    shown = json.loads(result.stdout)
    assert {key: [item["resource_name"] for item in value]
            for key, value in shown.items()} == {
        "added": [], "deleted": [], "replaced": ["b"], "unchanged": ["c", "f", "word"],
        "updated": ["a", "e"]}
    assert snapshot(heat, stack_id) == before


# --- lifecycle verdicts on the new definition --------------------------------------------

POLICY = """\
rules:
  - name: no-random
    effect: deny
    denied_types: ["OS::Heat::RandomString"]
    message: random strings are not allowed here
"""


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Kiln]:
    """kiln-all that denies RandomString and allows three resources per tenant."""
    state = tmp_path_factory.mktemp("kiln-strict-update")
    rules = state / "policy.yaml"
    rules.write_text(POLICY)
    kiln = servers.start_all(state, None, OS_LIFECYCLE_POLICY__RULES_FILE=str(rules),
                             OS_LIFECYCLE_QUOTA__MAX_RESOURCES_PER_TENANT="3")
    yield kiln
    kiln.stop()


def test_plugins_judge_the_new_definition_and_reserve_nothing(strict: servers.Kiln) -> None:
    heat = heat_for(strict, servers.new_tenant(strict.env, unique("strict-")))
    two = ("heat_template_version: 2018-08-31\nresources:\n"
           "  a: {type: OS::Heat::None}\n  b: {type: OS::Heat::None}\n")
    stack_id = create(heat, two)
    grown = two + ("  c: {type: OS::Heat::RandomString}\n"
                   "  d: {type: OS::Heat::None}\n")

    with pytest.raises(heat_exc.HTTPBadRequest) as refused:
        heat.stacks.preview_update(stack_id, template=grown)

    error = refused.value.error["error"]
    assert error["type"] == "LifecycleDenied"
    policy, quota = error["message"].split("; ")
    assert policy.startswith("Lifecycle plugin policy denied UPDATE: no-random")
    assert quota.startswith("Lifecycle plugin quota denied UPDATE: ")
    assert "resource quota exceeded" in quota

    # Nothing was reserved: the tenant's last resource is still free.
    third = two.replace("  b: {type: OS::Heat::None}\n", "")
    other = heat.stacks.create(stack_name=unique("s"), template=third)["stack"]["id"]
    wait_for_status(heat, other, "CREATE_COMPLETE")
    assert dry_run_verdicts(heat.stacks.preview_update(stack_id, template=two)) == (
        dict.fromkeys(PLUGINS, "allow"))
