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


def test_a_deletion_policy_from_a_parameter_is_honoured(heat: Any) -> None:
    # Heat resolves functions of parameters in deletion_policy (get_param, if).
    template = RETAIN.replace("deletion_policy: retain", "deletion_policy: {get_param: keep}"
                              ).replace("resources:", "parameters:\n  keep: {type: string}\n"
                                                      "resources:")
    stack_id = heat.stacks.create(stack_name=unique("retain"), template=template,
                                  parameters={"keep": "Retain"})["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")

    deletes = {e.resource_name: e.resource_status_reason
               for e in heat.events.list(stack_id, sort_dir="asc")
               if e.resource_status == "DELETE_COMPLETE" and e.resource_name in ("kept", "gone")}
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


# --- Heat parity (issue 17): behaviours measured against Heat 27 ---------------------------

ELIDED = """\
heat_template_version: wallaby
parameters:
  env: {type: string, default: dev}
conditions:
  prod: {equals: [{get_param: env}, prod]}
resources:
  value:
    type: OS::Heat::Value
    properties:
      value: {list_join: [",", [a, {if: [prod, b]}, c]]}
      type: {if: [prod, number]}
  taken:
    type: OS::Heat::None
    external_id: {if: [prod, thing-1]}
outputs:
  gone: {value: {if: [prod, x]}}
  kept: {value: {if: [prod, x, y]}}
  joined: {value: {get_attr: [value, value]}}
  items: {value: [1, {if: [prod, 2]}, {a: {if: [prod, 3]}}]}
"""


def test_a_one_branch_if_leaves_its_value_out_and_the_stack_completes(heat: Any) -> None:
    # Heat: an output the if leaves out is null, a property is as if not given, a list
    # item or map key is dropped; the stack completes (Kiln once wedged IN_PROGRESS).
    stack_id = heat.stacks.create(stack_name=unique("elide"), template=ELIDED)["stack"]["id"]
    stack = wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    assert {o["output_key"]: o["output_value"] for o in stack.outputs} == {
        "gone": None, "kept": "y", "joined": "a,c", "items": [1, {}]}
    assert not [o for o in stack.outputs if "output_error" in o]
    taken = heat.resources.get(stack_id, "taken")
    assert taken.resource_status == "CREATE_COMPLETE"  # no external_id: made, not adopted


PARAMETERS = """\
heat_template_version: wallaby
parameters:
  names: {type: comma_delimited_list}
  doc: {type: json}
  flag: {type: boolean}
  label: {type: string}
  size: {type: number}
  size_list: {type: comma_delimited_list, constraints: [{allowed_values: [a, b]}]}
resources:
  typed:
    type: OS::Heat::Value
    properties: {value: "12.5", type: number}
  truth:
    type: OS::Heat::Value
    properties: {value: "true", type: boolean}
outputs:
  names: {value: {get_param: names}}
  doc: {value: {get_param: doc}}
  flag: {value: {get_param: flag}}
  label: {value: {get_param: label}}
  size: {value: {get_param: size}}
  typed: {value: {get_attr: [typed, value]}}
  truth: {value: {get_attr: [truth, value]}}
"""


def test_parameters_and_typed_values_read_as_heat_reads_them(heat: Any) -> None:
    stack_id = heat.stacks.create(
        stack_name=unique("params"), template=PARAMETERS,
        parameters={"names": "a,b, c", "doc": "[1, 2]", "flag": "Yes", "label": "x",
                    "size": " 1e3 ", "size_list": "a,b"})["stack"]["id"]
    stack = wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    assert {o["output_key"]: o["output_value"] for o in stack.outputs} == {
        "names": ["a", "b", " c"],  # split on commas, items kept as written
        "doc": [1, 2], "flag": True, "label": "x", "size": 1000.0,
        "typed": "12.5", "truth": "true"}  # a Value's type is checked, not applied


@pytest.mark.parametrize(("parameters", "message"), [
    ({"size_list": "a, b"},
     "Parameter 'size_list' is invalid: \"a, b\" is not an allowed value [\"a\", \"b\"]"),
    ({"flag": "maybe"}, "Parameter 'flag' is invalid: Unrecognized value 'maybe', "
                        "acceptable values are: '0', '1', 'f', 'false'"),
    ({"size": "nan"}, "Parameter 'size' is invalid: Value 'nan' is not a finite number"),
])
def test_a_parameter_heat_refuses_is_a_400(heat: Any, parameters: dict[str, str],
                                          message: str) -> None:
    given = {"names": "a", "doc": "{}", "flag": "true", "label": "x", "size": "1",
             "size_list": "a", **parameters}
    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(stack_name=unique("params"), template=PARAMETERS,
                           parameters=given)

    assert message in str(caught.value)


def test_a_value_not_of_its_type_is_a_400_at_its_line(heat: Any) -> None:
    template = PARAMETERS.replace('value: "true", type: boolean', "value: maybe, type: boolean")
    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(stack_name=unique("params"), template=template,
                           parameters={"names": "a", "doc": "{}", "flag": "1", "label": "x",
                                       "size": "1", "size_list": "a"})

    assert ('template:15 resources.truth.properties: Property error: value: "maybe" is not '
            "a valid boolean") in str(caught.value)


RUN_TIME_ERROR = """\
heat_template_version: wallaby
parameters:
  index: {type: number, default: 5}
resources:
  source:
    type: OS::Heat::Value
    properties: {value: "a,b"}
  split:
    type: OS::Heat::Value
    properties:
      value: {str_split: [",", {get_attr: [source, value]}, {get_param: index}]}
"""


def test_a_function_that_fails_at_run_time_fails_the_stack_with_its_reason(
        heat: Any) -> None:
    stack_id = heat.stacks.create(stack_name=unique("runtime"),
                                  template=RUN_TIME_ERROR)["stack"]["id"]
    stack = wait_for_status(heat, stack_id, "CREATE_FAILED")

    split = heat.resources.get(stack_id, "split")
    assert split.resource_status == "CREATE_FAILED"
    assert split.resource_status_reason == ('StackValidationFailed: resources.split: '
                                            'Incorrect index to "str_split" should be '
                                            "between 0 and 1")
    assert "str_split" in stack.stack_status_reason


def test_a_function_that_fails_on_known_values_is_a_400_at_its_line(heat: Any) -> None:
    template = RUN_TIME_ERROR.replace("{get_attr: [source, value]}", '"a,b"')
    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(stack_name=unique("runtime"), template=template)

    assert ('template:11 resources.split.properties.value.str_split: Incorrect index to '
            '"str_split" should be between 0 and 1') in str(caught.value)


def nested_json(depth: int) -> str:
    """JSON text of ``depth`` nested lists."""
    return "[" * depth + '"x"' + "]" * depth


def wrapped(name: str) -> str:
    """``get_attr`` of ``name``'s value in as many lists as a template may hold there."""
    return "[" * 57 + f"{{get_attr: [{name}, value]}}" + "]" * 57


DEEP = f"""\
heat_template_version: 2018-08-31
parameters:
  doc: {{type: json}}
resources:
  first:
    type: OS::Heat::Value
    properties: {{value: {{get_param: doc}}}}
  second:
    type: OS::Heat::Value
    properties: {{value: {wrapped("first")}}}
  third:
    type: OS::Heat::Value
    properties: {{value: {wrapped("second")}}}
"""


@pytest.mark.parametrize("given", ["parameters", "parameter_defaults", "default"])
@pytest.mark.parametrize("depth", [65, 600, 5000])
def test_a_json_parameter_deeper_than_a_template_is_a_400(heat: Any, given: str,
                                                         depth: int) -> None:
    # 600 created a stack whose every operation, its delete too, then failed (the
    # plugins' view recursed through the value); 5000 was a RecursionError, a 500.
    text, fields = nested_json(depth), {}
    template = DEEP
    if given == "parameters":
        fields = {"parameters": {"doc": text}}
    elif given == "parameter_defaults":
        fields = {"environment": {"parameter_defaults": {"doc": text}}}
    else:
        template = DEEP.replace("doc: {type: json}", f"doc: {{type: json, default: '{text}'}}")
    for call in (heat.stacks.validate, heat.stacks.create):
        with pytest.raises(heat_exc.HTTPBadRequest) as caught:
            call(stack_name=unique("deep"), template=template, **fields)

        assert ("Parameter 'doc' is invalid: Value must be valid JSON: nested deeper than 64 "
                "levels") in str(caught.value)


def test_a_value_grown_past_its_bound_fails_its_resource_and_the_stack_deletes(
        heat: Any) -> None:
    # first: 64 levels (a json parameter's most); second wraps it in 57 more (a template's
    # most): 121; third would be 178, past twice a template's depth. Without the bound a
    # chain grew a value until storing it, or any walk of it, failed for good.
    stack_id = heat.stacks.create(stack_name=unique("deep"), template=DEEP,
                                  parameters={"doc": nested_json(64)})["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_FAILED")

    statuses = {r.resource_name: (r.resource_status, r.resource_status_reason)
                for r in heat.resources.list(stack_id)}
    assert statuses["first"][0] == statuses["second"][0] == "CREATE_COMPLETE"
    assert statuses["third"] == ("CREATE_FAILED", "StackValidationFailed: resources.third: "
                                 "Property error: value: the value nests deeper than 128 "
                                 "levels")
    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")
