"""engine.template.hot: versions, sections and keys of a HOT document."""

from __future__ import annotations

import pytest

from engine.errors import InvalidTemplateVersion, StackValidationFailed
from engine.template.functions import GetParam, GetResource
from engine.template.loader import load
from engine.template.model import Template
from engine.template.parse import document, parse_text


def hot(text: str) -> Template:
    return load(parse_text(text))


def refusal(text: str) -> str:
    with pytest.raises(StackValidationFailed) as caught:
        hot(text)
    return str(caught.value)


FULL = """\
heat_template_version: 2018-08-31
description: A web server
parameters:
  flavor: {type: string, default: m1.small}
resources:
  server:
    type: OS::Nova::Server
    depends_on: volume
    metadata: {role: web}
    description: the server
    properties:
      flavor: {get_param: flavor}
      volume: {get_resource: volume}
  volume:
    type: OS::Cinder::Volume
    depends_on: [net, port]
outputs:
  server_id:
    value: {get_resource: server}
    description: The id
  bare:
    value: 1
"""


def test_full_template() -> None:
    template = hot(FULL)

    assert template.version.date == "2018-08-31"
    assert template.description == "A web server"
    assert list(template.parameters) == ["flavor"]
    server = template.resources["server"]
    assert server.type == "OS::Nova::Server"
    assert server.depends_on == ("volume",)
    assert server.metadata == {"role": "web"}
    assert server.description == "the server"
    assert isinstance(server.properties["flavor"], GetParam)
    assert isinstance(server.properties["volume"], GetResource)
    assert str(server.location) == "template:6 resources.server"
    assert template.resources["volume"].depends_on == ("net", "port")
    assert template.resources["volume"].properties == {}
    assert template.resources["volume"].metadata == {}
    assert isinstance(template.outputs["server_id"].value, GetResource)
    assert template.outputs["server_id"].description == "The id"
    assert template.outputs["bare"].description == "No description given"


def test_version_may_be_an_alias() -> None:
    assert hot("heat_template_version: rocky\n").version.date == "2018-08-31"
    assert hot("heat_template_version: newton\n").version.date == "2016-10-14"


def test_a_json_document_works_too() -> None:
    template = load(document({"heat_template_version": "2016-04-08",
                              "resources": {"r": {"type": "T"}}}))

    assert template.version.date == "2016-04-08"
    assert str(template.resources["r"].location) == "resources.r"


def test_empty_sections_are_empty() -> None:
    template = hot("heat_template_version: rocky\nparameters:\nresources:\noutputs:\n")

    assert (template.parameters, template.resources, template.outputs) == ({}, {}, {})
    assert template.description == ""


def test_unknown_version_lists_the_known_ones() -> None:
    with pytest.raises(InvalidTemplateVersion) as caught:
        hot("description: x\nheat_template_version: 2099-01-01\n")

    assert str(caught.value) == (
        'template:2 heat_template_version: The template version is invalid: '
        '"heat_template_version: 2099-01-01". "heat_template_version" should be one of: '
        "2013-05-23, 2014-10-16, 2015-04-30, 2015-10-15, 2016-04-08, 2016-10-14, 2017-02-24, "
        "2017-09-01, 2018-03-02, 2018-08-31, 2021-04-16, newton, ocata, pike, queens, rocky, "
        "wallaby"
    )


def test_missing_version() -> None:
    assert refusal("resources: {}\n") == (
        "template:1: Template not in valid format: Template format version not found."
    )


@pytest.mark.parametrize("text", ["", "[a, b]\n", "just text\n"])
def test_document_must_be_a_map(text: str) -> None:
    assert refusal(text).endswith("Template not in valid format: it must be a map.")


def test_unknown_section() -> None:
    assert refusal("heat_template_version: rocky\nresources: {}\nfoo: bar\n") == (
        "template:3 foo: The template section is invalid: foo"
    )


@pytest.mark.parametrize("section", ["resources", "outputs"])
def test_sections_must_be_maps(section: str) -> None:
    assert refusal(f"heat_template_version: rocky\n{section}: [a]\n") == (
        f'template:2 {section}: The template section "{section}" must be a map'
    )


def resource(body: str) -> str:
    """A template whose resource ``r`` (line 3) has ``body`` from line 4 on."""
    return f"heat_template_version: rocky\nresources:\n  r:\n{body}"


def test_resource_must_be_a_map() -> None:
    assert refusal("heat_template_version: rocky\nresources:\n  r: OS::Heat::None\n") == (
        'template:3 resources.r: Resource "r" must be a map'
    )


def test_unknown_resource_key() -> None:
    assert refusal(resource("    type: T\n    propreties: {}\n")) == (
        'template:5 resources.r.propreties: "propreties" is not a valid keyword inside a '
        "resource definition"
    )


@pytest.mark.parametrize("body", ["    properties: {}\n", "    type: ''\n", "    type: [T]\n"])
def test_resource_needs_a_type(body: str) -> None:
    assert refusal(resource(body)).endswith('Resource "r" has no type')


@pytest.mark.parametrize(("policy", "stored"), [("Delete", "Delete"), ("delete", "Delete"),
                                               ("Retain", "Retain"), ("retain", "Retain"),
                                               ("Snapshot", "Snapshot")])
def test_deletion_policies(policy: str, stored: str) -> None:
    template = hot(resource(f"    type: T\n    deletion_policy: {policy}\n"))

    assert template.resources["r"].deletion_policy == stored


def test_lower_case_deletion_policy_needs_newton() -> None:
    text = "heat_template_version: 2016-04-08\nresources:\n  r:\n    type: T\n" \
           "    deletion_policy: retain\n"

    assert refusal(text) == ('template:5 resources.r.deletion_policy: Invalid deletion policy '
                             '"retain"; must be one of Delete, Retain, Snapshot')


@pytest.mark.parametrize("key", ["condition: c", "external_id: x"])
def test_newton_resource_keys_are_refused_before_newton(key: str) -> None:
    text = f"heat_template_version: 2016-04-08\nresources:\n  r:\n    type: T\n    {key}\n"

    assert refusal(text).endswith(f'"{key.split(":")[0]}" is not a valid keyword inside a '
                                  "resource definition")


@pytest.mark.parametrize("depends", ["{a: b}", "[a, [b]]", "3"])
def test_depends_on_must_name_resources(depends: str) -> None:
    assert refusal(resource(f"    type: T\n    depends_on: {depends}\n")) == (
        "template:5 resources.r.depends_on: depends_on must be a resource name or a list "
        "of them"
    )


def test_properties_must_be_a_map() -> None:
    assert refusal(resource("    type: T\n    properties: [a]\n")) == (
        "template:5 resources.r.properties: properties must be a map"
    )


def test_properties_that_are_a_function_call_are_refused() -> None:
    assert refusal(resource("    type: T\n    properties: {get_param: props}\n")) == (
        "template:5 resources.r.properties: properties must be a map"
    )


def test_functions_in_properties_are_parsed_with_their_paths() -> None:
    template = hot(resource("    type: T\n    properties:\n      size:\n"
                            "        get_param: [sizes, 0]\n"))

    size = template.resources["r"].properties["size"]
    assert isinstance(size, GetParam)
    assert (size.name, size.path) == ("sizes", (0,))
    assert str(size.location) == "template:7 resources.r.properties.size.get_param"


def test_output_needs_a_value() -> None:
    assert refusal("heat_template_version: rocky\noutputs:\n  o: {description: x}\n") == (
        'template:3 outputs.o: Output "o" must be a map with a value'
    )


def test_unknown_output_key() -> None:
    assert refusal("heat_template_version: rocky\noutputs:\n  o:\n    value: 1\n"
                   "    vaule: 2\n") == (
        'template:5 outputs.o.vaule: "vaule" is not a valid keyword inside an output '
        "definition"
    )


def test_parameter_errors_surface_from_load() -> None:
    assert refusal("heat_template_version: rocky\nparameters:\n  p: {type: nope}\n") == (
        "template:3 parameters.p.type: Invalid type (nope) for parameter (p); must be one of "
        "string, number, boolean, json, comma_delimited_list"
    )


def test_an_update_policy_must_be_a_map() -> None:
    assert refusal(resource("    type: T\n    update_policy: [1]\n")) == (
        "template:5 resources.r.update_policy: Resource r update_policy type must be object")


@pytest.mark.parametrize("name", ["{repeat: p}", "[p]", "7"])
def test_a_grouped_parameter_that_is_not_a_name_names_no_parameter(name: str) -> None:
    text = ("heat_template_version: rocky\nparameters:\n  p: {type: string}\n"
            f"parameter_groups:\n- parameters: [p, {name}]\nresources: {{}}\n")
    assert refusal(text).startswith("template:5 parameter_groups[0].parameters[1]: The "
                                     "grouped parameter ")
