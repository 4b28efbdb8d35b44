"""Template ("provider") resources in the IR: the file's parameters are the properties,
its outputs the attributes, and an error inside it names the file and line."""

from __future__ import annotations

import pytest

from engine.errors import StackValidationFailed
from engine.ir.build import build
from engine.ir.model import ResolvedStack
from engine.ir.provider import ProviderType, provider_type
from engine.template.environment import Environment
from engine.template.loader import load
from engine.template.parse import parse_text
from tests.unit.ir.conftest import PSEUDO, lookup

WEB = """\
heat_template_version: rocky
parameters:
  size: {type: number}
  label: {type: string, default: web}
resources:
  port:
    type: Test::Plain
    properties: {value: {get_param: label}}
outputs:
  address: {value: {get_attr: [port, value]}}
"""

PARENT = """\
heat_template_version: rocky
resources:
  web:
    type: web.yaml
    properties: {size: 2}
  user:
    type: Test::Plain
    properties: {value: {get_attr: [web, address]}}
"""


def make(text: str, files: dict[str, str], env: Environment | None = None) -> ResolvedStack:
    return build(load(parse_text(text), files), {}, PSEUDO, lookup, environment=env)


def test_a_file_type_is_a_provider_with_the_template_schema() -> None:
    stack = make(PARENT, {"web.yaml": WEB})

    assert stack.resources["web"].type_name == "web.yaml"
    assert stack.resources["user"].requires == frozenset({"web"})


def test_a_registry_entry_maps_a_type_to_a_template() -> None:
    text = PARENT.replace("type: web.yaml", "type: My::Web")
    env = Environment(resource_registry={"My::Web": "web.yaml"})

    stack = make(text, {"web.yaml": WEB}, env)

    assert stack.resources["web"].type_name == "web.yaml"


@pytest.mark.parametrize(("parent", "files", "message"), [
    (PARENT.replace("{size: 2}", "{}"), {"web.yaml": WEB},
     "template:3 resources.web: Property size not assigned"),
    (PARENT.replace("{size: 2}", "{size: 2, colour: red}"), {"web.yaml": WEB},
     "template:5 resources.web.properties.colour: Unknown Property colour"),
    (PARENT.replace("[web, address]", "[web, nope]"), {"web.yaml": WEB},
     "template:8 resources.user.properties.value.get_attr: The Referenced Attribute (web "
     "nope) is incorrect."),
    (PARENT, {"web.yaml": WEB.replace("Test::Plain", "Test::Nope")},
     "web.yaml:7 resources.port.type: The Resource Type (Test::Nope) could not be found."),
    (PARENT, {"web.yaml": WEB.replace("get_param: label", "get_param: lable")},
     'web.yaml:8 resources.port.properties.value.get_param: The specified reference '
     '"lable" (in resources.port) is incorrect.'),
    (PARENT, {}, 'template:4 resources.web.type: Could not fetch remote template "web.yaml": '
                 'it is not in the request\'s "files"'),
])
def test_errors_name_the_right_file_and_line(parent: str, files: dict[str, str],
                                             message: str) -> None:
    with pytest.raises(StackValidationFailed) as caught:
        make(parent, files)

    assert str(caught.value) == message


def test_a_template_that_uses_itself_stops_at_the_depth_limit() -> None:
    loop = "heat_template_version: rocky\nresources:\n  again: {type: loop.yaml}\n"

    with pytest.raises(StackValidationFailed, match="Recursion depth exceeds 5."):
        make(loop, {"loop.yaml": loop})


def test_the_provider_schema() -> None:
    template = load(parse_text(PARENT), {"web.yaml": WEB})

    schema: ProviderType = provider_type("web.yaml", template.files)

    assert schema.properties_schema["size"].required
    assert not schema.properties_schema["label"].required
    assert set(schema.attributes_schema) == {"address"}
