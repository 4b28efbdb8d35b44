"""The template language through python-heatclient: conditions, the newer functions,
get_file with ``files``, environments with a resource registry, parameter defaults and
environment_files, and the errors that point at the template line."""

from __future__ import annotations

from typing import Any

import pytest
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status

TEMPLATE = """\
heat_template_version: wallaby
parameters:
  env: {type: string, default: dev}
  names: {type: comma_delimited_list, default: "a,b"}
  zone: {type: string}
conditions:
  prod: {equals: [{get_param: env}, prod]}
  dev: {not: prod}
resources:
  server:
    type: OS::Nova::Server
  big_disk:
    type: OS::Heat::None
    condition: prod
  script:
    type: OS::Heat::Value
    properties:
      value:
        str_replace_strict:
          template: {get_file: boot.sh}
          params: {$ZONE: {get_param: zone}}
  word:
    type: OS::Heat::RandomString
    properties:
      length: {if: [prod, 32, 8]}
outputs:
  script: {value: {get_attr: [script, value]}}
  names: {value: {repeat: {for_each: {"%n%": {get_param: names}}, template: "host-%n%"}}}
  total: {value: {yaql: {expression: $.data.sum(), data: [1, 2, 3]}}}
  disk: {value: {get_resource: big_disk}, condition: prod}
  url: {value: {make_url: {scheme: https, host: example.com, port: 8443, path: a b}}}
  word_length: {value: {str_split: ["-", {list_join: ["-", [x, y, z]]}, 2]}}
  optional: {value: [1, {if: [prod, 2]}, 3]}
"""


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln) -> Any:
    return heat_for(kiln_all, servers.new_tenant(kiln_all.env, unique("tpl-")))


def outputs(heat: Any, stack_id: str) -> dict[str, Any]:
    shown = heat.stacks.get(stack_id)
    return {o["output_key"]: o["output_value"] for o in shown.outputs}


def test_a_template_with_conditions_functions_files_and_an_environment(heat: Any) -> None:
    stack_id = heat.stacks.create(
        stack_name=unique("lang"), template=TEMPLATE,
        files={"boot.sh": "echo zone=$ZONE\n"},
        environment={"resource_registry": {"OS::Nova::Server": "OS::Heat::None"},
                     "parameter_defaults": {"zone": "z1"}})["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    resources = {r.resource_name: r.resource_type for r in heat.resources.list(stack_id)}
    assert resources == {"server": "OS::Heat::None", "script": "OS::Heat::Value",
                         "word": "OS::Heat::RandomString"}  # big_disk: its condition is false
    assert outputs(heat, stack_id) == {
        "script": "echo zone=z1\n", "names": ["host-a", "host-b"], "total": 6,
        "disk": None, "url": "https://example.com:8443/a%20b", "word_length": "z",
        "optional": [1, 3]}
    assert len(heat.resources.get(stack_id, "word").attributes["value"]) == 8
    environment = heat.stacks.environment(stack_id)
    assert environment["resource_registry"] == {"OS::Nova::Server": "OS::Heat::None",
                                                "resources": {}}
    assert environment["parameter_defaults"] == {"zone": "z1"}


def test_an_update_that_turns_a_condition_on_adds_its_resource(heat: Any) -> None:
    fields = {"template": TEMPLATE, "files": {"boot.sh": "$ZONE"},
              "environment": {"resource_registry": {"OS::Nova::Server": "OS::Heat::None"}},
              "parameters": {"zone": "z2"}}
    stack_id = heat.stacks.create(stack_name=unique("cond"), **fields)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    heat.stacks.update(stack_id, existing=True, parameters={"env": "prod"})
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE")

    names = {r.resource_name for r in heat.resources.list(stack_id)}
    assert names == {"server", "big_disk", "script", "word"}
    shown = outputs(heat, stack_id)
    assert shown["disk"] == heat.resources.get(stack_id, "big_disk").physical_resource_id
    assert shown["optional"] == [1, 2, 3]
    assert len(heat.resources.get(stack_id, "word").attributes["value"]) == 32


def test_environment_files_are_merged_from_files(heat: Any) -> None:
    stack_id = heat.stacks.create(
        stack_name=unique("envf"), template=TEMPLATE,
        files={"boot.sh": "$ZONE", "base.yaml": "parameters: {zone: base, env: prod}\n"
                                                "resource_registry:\n"
                                                "  OS::Nova::Server: OS::Heat::None\n",
               "site.yaml": "parameters: {zone: site}\n"},
        environment_files=["base.yaml", "site.yaml"])["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    assert outputs(heat, stack_id)["script"] == "site"
    assert "big_disk" in {r.resource_name for r in heat.resources.list(stack_id)}


@pytest.mark.parametrize(("template", "message"), [
    (TEMPLATE.replace("condition: prod", "condition: prd"),
     'template:14 resources.big_disk.condition: Invalid condition "prd"'),
    (TEMPLATE.replace("$ZONE: {get_param: zone}", "$ZONE: {get_param: zone}, $NO: x"),
     "The following params were not found in the template: $NO"),
    (TEMPLATE.replace("boot.sh}", "missing.sh}"),
     'template:20 resources.script.properties.value.str_replace_strict.template.get_file: '
     'No content found in the "files" section for get_file path: missing.sh'),
    (TEMPLATE.replace("heat_template_version: wallaby", "heat_template_version: 2016-04-08"),
     "template:6 conditions: The template section is invalid: conditions"),
])
def test_template_errors_name_the_line(heat: Any, template: str, message: str) -> None:
    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(stack_name=unique("bad"), template=template,
                           files={"boot.sh": "$ZONE"}, parameters={"zone": "z"},
                           environment={"resource_registry": {
                               "OS::Nova::Server": "OS::Heat::None"}})

    assert message in str(caught.value)


def test_an_unknown_environment_section_is_refused(heat: Any) -> None:
    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(stack_name=unique("bad"), template=TEMPLATE,
                           files={"boot.sh": "x"}, environment={"paramters": {}})

    assert 'environment has wrong section "paramters"' in str(caught.value)


RETAIN = """\
heat_template_version: rocky
resources:
  kept: {type: OS::Heat::TestResource, deletion_policy: retain}
  gone: {type: OS::Heat::TestResource}
"""


def test_a_retained_resource_is_left_in_place_when_removed(heat: Any) -> None:
    stack_id = heat.stacks.create(stack_name=unique("retain"), template=RETAIN)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    heat.stacks.update(stack_id, template="heat_template_version: rocky\nresources: {}\n")
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE")

    deletes = {e.resource_name: e.resource_status_reason
               for e in heat.events.list(stack_id, sort_dir="asc")
               if e.resource_status == "DELETE_COMPLETE"}
    assert deletes == {"kept": "Retained", "gone": "state changed"}


def test_snapshot_deletion_policy_is_refused(heat: Any) -> None:
    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(stack_name=unique("snap"),
                           template=RETAIN.replace("retain", "Snapshot"))

    assert ('template:3 resources.kept.deletion_policy: "Snapshot" deletion policy not '
            "supported") in str(caught.value)


IMMUTABLE = """\
heat_template_version: rocky
parameters:
  size: {type: number, default: 1, immutable: true}
  name: {type: string, default: a}
resources:
  r: {type: OS::Heat::None}
"""


def test_an_immutable_parameter_cannot_be_changed_by_an_update(heat: Any) -> None:
    stack_id = heat.stacks.create(stack_name=unique("imm"), template=IMMUTABLE)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.update(stack_id, existing=True, parameters={"size": 2})
    assert ("The following parameters are immutable and may not be updated: size"
            in str(caught.value))

    heat.stacks.update(stack_id, existing=True, parameters={"size": "1", "name": "b"})
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE")


EXTERNAL = """\
heat_template_version: rocky
parameters:
  existing: {type: string}
resources:
  taken:
    type: OS::Heat::None
    external_id: {get_param: existing}
outputs:
  id: {value: {get_resource: taken}}
"""


def test_an_external_id_is_taken_over_and_left_in_place(heat: Any) -> None:
    stack_id = heat.stacks.create(stack_name=unique("ext"), template=EXTERNAL,
                                  parameters={"existing": "thing-42"})["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    taken = heat.resources.get(stack_id, "taken")
    assert (taken.resource_status, taken.physical_resource_id) == ("ADOPT_COMPLETE",
                                                                   "thing-42")
    assert heat.stacks.get(stack_id).outputs[0]["output_value"] == "thing-42"

    heat.stacks.update(stack_id, existing=True, parameters={"existing": "thing-43"})
    stack = wait_for_status(heat, stack_id, "UPDATE_FAILED")
    assert ("Update to property external_id of taken (OS::Heat::None) is not supported."
            in stack.stack_status_reason)

    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")
    deletes = [e.resource_status_reason for e in heat.events.list(stack_id)
               if e.resource_name == "taken" and e.resource_status == "DELETE_COMPLETE"]
    assert deletes == ["Retained"]


def test_an_external_resource_cannot_depend_on_another(heat: Any) -> None:
    template = (EXTERNAL.replace("resources:\n", "resources:\n  other: {type: OS::Heat::None}\n")
                .replace("    external_id:", "    depends_on: other\n    external_id:"))

    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(stack_name=unique("ext"), template=template,
                           parameters={"existing": "thing-1"})

    assert ("resources.taken.external_id: Invalid dependency with external OS::Heat::None "
            "resource: thing-1") in str(caught.value)
