"""Nested stacks through python-heatclient: provider templates (a type that is a file, or a
registry entry mapping a type to one) and OS::Heat::Stack make real child stacks that
are updated and deleted with their parent."""

from __future__ import annotations

import time
from typing import Any

import pytest
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status

WEB = """\
heat_template_version: rocky
parameters:
  label: {type: string}
  size: {type: number, default: 1}
resources:
  word:
    type: OS::Heat::RandomString
    properties: {length: {get_param: size}}
  tag:
    type: OS::Heat::Value
    properties: {value: {list_join: ["-", [{get_param: label}, {get_attr: [word, value]}]]}}
outputs:
  tag: {value: {get_attr: [tag, value]}}
  length: {value: {get_param: size}}
"""

PARENT = """\
heat_template_version: rocky
parameters:
  size: {type: number, default: 4}
resources:
  web:
    type: web.yaml
    properties: {label: front, size: {get_param: size}}
  db:
    type: My::Db
    properties: {label: back}
  inline:
    type: OS::Heat::Stack
    properties:
      template: {get_file: web.yaml}
      parameters: {label: inline, size: 2}
  user:
    type: OS::Heat::Value
    properties: {value: {get_attr: [web, tag]}}
outputs:
  web: {value: {get_attr: [web, tag]}}
  db_length: {value: {get_attr: [db, length]}}
  inline: {value: {get_attr: [inline, outputs, tag]}}
  user: {value: {get_attr: [user, value]}}
"""


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln) -> Any:
    return heat_for(kiln_all, servers.new_tenant(kiln_all.env, unique("nest-")))


def outputs(heat: Any, stack_id: str) -> dict[str, Any]:
    return {o["output_key"]: o["output_value"] for o in heat.stacks.get(stack_id).outputs}


def children(heat: Any, stack_id: str) -> list[Any]:
    return list(heat.stacks.list(filters={"parent": stack_id}))


def test_nested_stacks_are_created_updated_and_deleted_with_their_parent(heat: Any) -> None:
    name = unique("parent")
    stack_id = heat.stacks.create(
        stack_name=name, template=PARENT, files={"web.yaml": WEB},
        environment={"resource_registry": {"My::Db": "web.yaml"}})["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=60)

    shown = outputs(heat, stack_id)
    assert shown["web"].startswith("front-") and len(shown["web"]) == len("front-") + 4
    assert shown["db_length"] == 1
    assert shown["inline"].startswith("inline-") and len(shown["inline"]) == 9
    assert shown["user"] == shown["web"]

    kids = children(heat, stack_id)
    assert len(kids) == 3
    assert {k.parent for k in kids} == {stack_id}
    assert all(k.stack_name.startswith(f"{name}-") for k in kids)
    assert stack_id not in {s.id for s in kids}
    top_level = {s.id for s in heat.stacks.list()}
    assert stack_id in top_level and not top_level & {k.id for k in kids}
    assert {k.id for k in heat.stacks.list(show_nested=True)} >= {k.id for k in kids}
    web_child = heat.resources.get(stack_id, "web").physical_resource_id
    assert web_child in {k.id for k in kids}
    assert {r.resource_name for r in heat.resources.list(web_child)} == {"word", "tag"}
    # A template resource's attributes are its template's outputs.
    assert heat.resources.get(stack_id, "web").attributes["tag"] == shown["web"]

    heat.stacks.update(stack_id, existing=True, parameters={"size": 6})
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE", timeout=60)
    assert len(outputs(heat, stack_id)["web"]) == len("front-") + 6
    assert heat.resources.get(stack_id, "web").physical_resource_id == web_child

    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE", timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and children(heat, stack_id):
        time.sleep(0.2)
    assert children(heat, stack_id) == []


def test_suspend_resume_and_check_reach_the_children(heat: Any) -> None:
    parent = ("heat_template_version: rocky\nresources:\n  web:\n    type: web.yaml\n"
              "    properties: {label: x}\n")
    stack_id = heat.stacks.create(stack_name=unique("acts"), template=parent,
                                  files={"web.yaml": WEB})["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=60)
    child = heat.resources.get(stack_id, "web").physical_resource_id

    for act, status in ((heat.actions.suspend, "SUSPEND_COMPLETE"),
                        (heat.actions.resume, "RESUME_COMPLETE"),
                        (heat.actions.check, "CHECK_COMPLETE")):
        act(stack_id)
        shown = wait_for_status(heat, stack_id, status, timeout=60)
        assert heat.stacks.get(child).stack_status == status
        assert heat.resources.get(stack_id, "web").resource_status == status
        assert {r.resource_status for r in heat.resources.list(child)} == {status}
    # The nested resource really checks (its child did), so the parent's check is full;
    # the child's own types do not, and it says so.
    assert "not fully supported" not in shown.stack_status_reason
    assert "not fully supported" in heat.stacks.get(child).stack_status_reason


def test_an_error_in_a_nested_template_names_its_file_and_line(heat: Any) -> None:
    broken = WEB.replace("OS::Heat::Value", "OS::Heat::Valeu")

    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(stack_name=unique("bad"), template=PARENT,
                           files={"web.yaml": broken},
                           environment={"resource_registry": {"My::Db": "web.yaml"}})

    assert ("web.yaml:10 resources.tag.type: The Resource Type (OS::Heat::Valeu) could not "
            "be found.") in str(caught.value)


def test_a_failing_child_fails_its_parent_resource(heat: Any) -> None:
    failing = ("heat_template_version: rocky\nresources:\n"
               "  boom: {type: OS::Heat::TestResource, properties: {fail: true}}\n")
    parent = "heat_template_version: rocky\nresources:\n  child: {type: boom.yaml}\n"

    stack_id = heat.stacks.create(stack_name=unique("fail"), template=parent,
                                  files={"boom.yaml": failing})["stack"]["id"]
    stack = wait_for_status(heat, stack_id, "CREATE_FAILED", timeout=60)

    assert "Test Resource failed boom" in stack.stack_status_reason


GROUP = """\
heat_template_version: rocky
parameters:
  count: {type: number, default: 3}
resources:
  group:
    type: OS::Heat::ResourceGroup
    properties:
      count: {get_param: count}
      resource_def:
        type: OS::Heat::Value
        properties: {value: "member-%index%"}
  chain:
    type: OS::Heat::ResourceChain
    properties:
      resources: [OS::Heat::RandomString, OS::Heat::RandomString]
      resource_properties: {length: 5}
outputs:
  values: {value: {get_attr: [group, value]}}
  refs: {value: {get_attr: [group, refs]}}
  second: {value: {get_attr: [group, resource.1.value]}}
  by_member: {value: {get_attr: [group, attributes, value]}}
  removed: {value: {get_attr: [group, removed_rsrc_list]}}
  chain: {value: {get_attr: [chain, value]}}
"""


def test_a_resource_group_and_a_chain(heat: Any) -> None:
    stack_id = heat.stacks.create(stack_name=unique("group"), template=GROUP)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=60)

    shown = outputs(heat, stack_id)
    assert shown["values"] == ["member-0", "member-1", "member-2"]
    assert len(shown["refs"]) == 3 and all(shown["refs"])
    assert shown["second"] == "member-1"
    assert shown["by_member"] == {"0": "member-0", "1": "member-1", "2": "member-2"}
    assert [len(v) for v in shown["chain"]] == [5, 5]
    group_child = heat.resources.get(stack_id, "group").physical_resource_id
    assert {r.resource_name for r in heat.resources.list(group_child)} == {"0", "1", "2"}
    chain_child = heat.resources.get(stack_id, "chain").physical_resource_id
    second = heat.resources.get(chain_child, "1")
    assert second.required_by == []
    assert heat.resources.get(chain_child, "0").required_by == ["1"]  # a chain, in order

    heat.stacks.update(stack_id, existing=True, parameters={"count": 1})
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE", timeout=60)
    assert outputs(heat, stack_id)["values"] == ["member-0"]
    assert {r.resource_name for r in heat.resources.list(group_child)} == {"0"}


FACADE_CHILD = """\
heat_template_version: rocky
outputs:
  role: {value: {resource_facade: metadata}}
  policy: {value: {resource_facade: deletion_policy}}
  updates: {value: {resource_facade: update_policy}}
"""


def test_resource_facade_shows_the_owning_resource(heat: Any) -> None:
    parent = ("heat_template_version: rocky\nresources:\n  child:\n    type: child.yaml\n"
              "    metadata: {role: web}\n"
              "outputs:\n  role: {value: {get_attr: [child, role]}}\n"
              "  policy: {value: {get_attr: [child, policy]}}\n"
              "  updates: {value: {get_attr: [child, updates]}}\n")
    stack_id = heat.stacks.create(stack_name=unique("facade"), template=parent,
                                  files={"child.yaml": FACADE_CHILD})["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=60)

    assert outputs(heat, stack_id) == {"role": {"role": "web"}, "policy": "Delete",
                                       "updates": {}}


def test_resource_facade_shows_a_deletion_policy_decided_from_parameters(heat: Any) -> None:
    parent = ("heat_template_version: wallaby\nparameters:\n  keep: {type: boolean}\n"
              "conditions:\n  kept: {get_param: keep}\n"
              "resources:\n  child:\n    type: child.yaml\n"
              "    deletion_policy: {if: [kept, Retain]}\n"
              "outputs:\n  policy: {value: {get_attr: [child, policy]}}\n")
    stack_id = heat.stacks.create(stack_name=unique("facade"), template=parent,
                                  parameters={"keep": "yes"},
                                  files={"child.yaml": FACADE_CHILD})["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=60)

    assert outputs(heat, stack_id) == {"policy": "Retain"}


def test_resource_facade_outside_a_nested_stack_is_refused(heat: Any) -> None:
    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(stack_name=unique("facade"), template=FACADE_CHILD)

    assert ('template:3 outputs.role.value.resource_facade: "resource_facade" is only '
            "valid in a nested stack") in str(caught.value)


def test_resources_of_nested_stacks_with_nested_depth(heat: Any) -> None:
    stack_id = heat.stacks.create(stack_name=unique("depth"), template=GROUP)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=60)
    group_child = heat.resources.get(stack_id, "group").physical_resource_id

    top = {r.resource_name for r in heat.resources.list(stack_id)}
    deep = heat.resources.list(stack_id, nested_depth=1)

    assert top == {"group", "chain"}
    listed = {(getattr(r, "parent_resource", None), r.resource_name) for r in deep}
    assert listed == {(None, "group"), (None, "chain"), ("group", "0"), ("group", "1"),
                      ("group", "2"), ("chain", "0"), ("chain", "1")}
    member = next(r for r in deep if getattr(r, "parent_resource", None) == "group")
    assert any(link["rel"] == "stack" and link["href"].endswith(group_child)
               for link in member.links)
    group = heat.resources.get(stack_id, "group")
    assert any(link["rel"] == "nested" and link["href"].endswith(group_child)
               for link in group.links)


def test_events_of_nested_stacks_with_nested_depth(heat: Any) -> None:
    parent = ("heat_template_version: rocky\nresources:\n  outer:\n    type: outer.yaml\n")
    outer = ("heat_template_version: rocky\nresources:\n  inner:\n    type: web.yaml\n"
             "    properties: {label: deep}\n")
    stack_id = heat.stacks.create(stack_name=unique("events"), template=parent,
                                  files={"outer.yaml": outer, "web.yaml": WEB})["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=60)
    outer_id = heat.resources.get(stack_id, "outer").physical_resource_id
    inner_id = heat.resources.get(outer_id, "inner").physical_resource_id

    def stacks_of(events: list[Any]) -> set[str]:
        return {next(link["href"] for link in e.links if link["rel"] == "stack"
                     ).rsplit("/", 1)[1] for e in events}

    assert stacks_of(heat.events.list(stack_id)) == {stack_id}
    one = heat.events.list(stack_id, nested_depth=1)
    assert stacks_of(one) == {stack_id, outer_id}
    two = heat.events.list(stack_id, nested_depth=2, sort_dir="asc")
    assert stacks_of(two) == {stack_id, outer_id, inner_id}
    assert {"word", "tag"} <= {e.resource_name for e in two}
    for event in two:
        root = [link["href"] for link in event.links if link["rel"] == "root_stack"]
        assert len(root) == 1 and root[0].endswith(stack_id)
    # One page across the stacks, in the order the events were written. The stack shows
    # COMPLETE before its operation's last writes end, so a page read later may hold
    # more: each listing is a prefix of the next.
    first = heat.events.list(stack_id, nested_depth=2, sort_dir="asc", limit=3)
    rest = heat.events.list(stack_id, nested_depth=2, sort_dir="asc", marker=first[-1].id)
    paged = [e.id for e in first + rest]
    after = [e.id for e in heat.events.list(stack_id, nested_depth=2, sort_dir="asc")]
    assert paged[:len(two)] == [e.id for e in two]
    assert after[:len(paged)] == paged


# --- Heat parity (issue 17): group members by index, and references ----------------------

def tenant_of(heat: Any) -> str:
    return str(heat.http_client.endpoint).rstrip("/").rsplit("/", 1)[-1]


MEMBER = """\
heat_template_version: rocky
parameters:
  index: {type: string}
resources:
  inner: {type: OS::Heat::None}
outputs:
  value: {value: {name: {list_join: ["-", [m, {get_param: index}]]}, ports: [1, 2]}}
"""

MEMBERS = """\
heat_template_version: rocky
resources:
  values:
    type: OS::Heat::ResourceGroup
    properties:
      count: 2
      resource_def:
        type: OS::Heat::Value
        properties: {value: {name: "v-%index%", ports: [1, 2]}}
  providers:
    type: OS::Heat::ResourceGroup
    properties:
      count: 2
      resource_def:
        type: My::Member
        properties: {index: "%index%"}
outputs:
  second: {value: {get_attr: [values, resource.1, value]}}
  name: {value: {get_attr: [values, resource.0, value, name]}}
  port: {value: {get_attr: [values, resource.0, value, ports, 1]}}
  dotted: {value: {get_attr: [values, resource.1.value, name]}}
  names: {value: {get_attr: [values, value, name]}}
  by_member: {value: {get_attr: [values, attributes, value, name]}}
  provider: {value: {get_attr: [providers, resource.1, value, name]}}
  provider_ref: {value: {get_attr: [providers, resource.1]}}
  beyond: {value: {get_attr: [values, resource.2, value]}}
"""


def test_group_members_by_index_with_a_path(heat: Any) -> None:
    stack_id = heat.stacks.create(
        stack_name=unique("members"), template=MEMBERS, files={"member.yaml": MEMBER},
        environment={"resource_registry": {"My::Member": "member.yaml"}})["stack"]["id"]
    stack = wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=60)

    shown = {o["output_key"]: o for o in stack.outputs}
    values = {key: o["output_value"] for key, o in shown.items()}
    assert values["second"] == {"name": "v-1", "ports": [1, 2]}
    assert (values["name"], values["port"], values["dotted"]) == ("v-0", 2, "v-1")
    assert values["names"] == ["v-0", "v-1"]
    assert values["by_member"] == {"0": "v-0", "1": "v-1"}
    assert values["provider"] == "m-1"
    # A member that is a template resource is referred to by its child's ARN, as in Heat.
    providers_child = heat.resources.get(stack_id, "providers").physical_resource_id
    member_child = heat.stacks.get(heat.resources.get(providers_child, "1")
                                   .physical_resource_id)
    assert values["provider_ref"] == (f"arn:openstack:heat::{tenant_of(heat)}:stacks/"
                                      f"{member_child.stack_name}/{member_child.id}")
    # Beyond the group's size: Heat's output error, not null.
    assert shown["beyond"]["output_value"] is None
    assert shown["beyond"]["output_error"] == (
        "Member '2' not found in group resource 'values'.")


REFERENCES = """\
heat_template_version: rocky
resources:
  provider: {type: child.yaml}
  mapped: {type: My::Child}
  stack:
    type: OS::Heat::Stack
    properties: {template: {get_file: child.yaml}}
  cfn:
    type: AWS::CloudFormation::Stack
    properties: {TemplateURL: child.yaml}
  group:
    type: OS::Heat::ResourceGroup
    properties: {count: 1, resource_def: {type: OS::Heat::None}}
outputs:
  provider: {value: {get_resource: provider}}
  mapped: {value: {get_resource: mapped}}
  stack: {value: {get_resource: stack}}
  cfn: {value: {get_resource: cfn}}
  group: {value: {get_resource: group}}
"""


def test_how_each_kind_of_nested_stack_is_referred_to(heat: Any) -> None:
    # Heat 27: a template resource and an AWS::CloudFormation::Stack by the child's ARN,
    # OS::Heat::Stack and a group by the child's id; every physical id is the child's id.
    stack_id = heat.stacks.create(
        stack_name=unique("refs"), template=REFERENCES,
        files={"child.yaml": "heat_template_version: rocky\n"},
        environment={"resource_registry": {"My::Child": "child.yaml"}})["stack"]["id"]
    stack = wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=60)

    refs = {o["output_key"]: o["output_value"] for o in stack.outputs}
    tenant = tenant_of(heat)
    kids = {k.id: k.stack_name for k in heat.stacks.list(filters={"parent": stack_id})}
    listed = {r.resource_name: r.physical_resource_id for r in heat.resources.list(stack_id)}
    assert set(listed.values()) == set(kids)
    for name in ("provider", "mapped", "cfn"):
        child = listed[name]
        assert refs[name] == f"arn:openstack:heat::{tenant}:stacks/{kids[child]}/{child}"
    assert refs["stack"] == listed["stack"]
    assert refs["group"] == listed["group"]
