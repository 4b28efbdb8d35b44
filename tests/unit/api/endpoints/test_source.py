"""``GET .../stacks/{name}/{id}/source`` (engine.api.endpoints.source) through the real
app: the stored template as YAML text, the lines of its resources, parameters and outputs
pointing at their keys in that text, hidden parameters' defaults masked, CFN's section
names, and tenancy."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from engine.context import ADMIN_ROLE
from engine.db.session import Database
from engine.resources.registry import ResourceTypeRegistry
from tests.unit.api.endpoints.console_api import ConsoleApi
from tests.unit.conftest import Clock

TEMPLATE = """\
heat_template_version: 2018-08-31
description: A web tier  # comments are not kept
parameters:
  password: {type: string, hidden: true, default: s3cret-default}
  size: {type: number, default: 3}
resources:
  word:
    type: OS::Heat::RandomString
    properties: {length: {get_param: size}}
  gate: {type: OS::Heat::None, depends_on: [word]}
outputs:
  value: {value: {get_attr: [word, value]}}
"""
CFN = """\
AWSTemplateFormatVersion: '2010-09-09'
Parameters:
  Secret: {Type: String, NoEcho: 'true', Default: cfn-default}
Resources:
  Nothing: {Type: 'OS::Heat::None'}
Outputs:
  Out: {Value: x}
"""


@pytest.fixture
def api(db: Database, registry: ResourceTypeRegistry, clock: Clock) -> ConsoleApi:
    return ConsoleApi(db, registry, clock)


def source_of(api: ConsoleApi, path: str) -> dict[str, Any]:
    result = api.call("GET", path + "/source")
    assert result.status_code == 200, result.text
    source: dict[str, Any] = result.json["source"]
    return source


def test_the_text_is_the_stored_template_with_the_lines_of_its_sections(
        api: ConsoleApi) -> None:
    path = api.create("web", TEMPLATE)
    source = source_of(api, path)

    stored = api.call("GET", path + "/template").json
    shown = yaml.safe_load(source["text"])
    assert list(shown) == list(stored)  # the template's order
    assert shown["resources"] == stored["resources"]
    assert shown["outputs"] == stored["outputs"]
    text = source["text"].splitlines()
    assert set(source["lines"]) == {"resources", "parameters", "outputs"}
    for section, entries in source["lines"].items():
        assert set(entries) == set(stored[section])
        for name, line in entries.items():
            assert text[line - 1] == f"  {name}:", (section, name)
            assert text[:line - 1].count(f"{section}:") == 1  # below its section's key


def test_a_hidden_parameters_default_is_masked(api: ConsoleApi) -> None:
    path = api.create("web", TEMPLATE)
    source = source_of(api, path)

    assert "s3cret-default" not in source["text"]
    parameters = yaml.safe_load(source["text"])["parameters"]
    assert parameters["password"]["default"] == "******"
    assert parameters["size"]["default"] == 3


def test_a_cfn_template_keeps_its_section_names_under_hots_keys(api: ConsoleApi) -> None:
    path = api.create("cfn", CFN)
    source = source_of(api, path)

    assert "cfn-default" not in source["text"]
    text = source["text"].splitlines()
    assert source["lines"] == {"resources": {"Nothing": text.index("  Nothing:") + 1},
                               "parameters": {"Secret": text.index("  Secret:") + 1},
                               "outputs": {"Out": text.index("  Out:") + 1}}
    assert yaml.safe_load(source["text"])["Parameters"]["Secret"]["Default"] == "******"


def test_another_tenants_member_finds_no_source_an_admin_does(api: ConsoleApi) -> None:
    path = api.create("web", TEMPLATE)
    theirs = api.call("GET", path + "/source", tenant=api.b.id)
    assert theirs.status_code == 404
    assert theirs.json["error"]["message"] == "The Stack (web) could not be found."
    crossing = api.call("GET", path + "/source", token=api.tokens[(api.b.id, "member")])
    assert crossing.status_code == 403
    admin = api.call("GET", path + "/source", token=api.tokens[(api.b.id, ADMIN_ROLE)])
    assert admin.status_code == 200
    assert "s3cret-default" not in admin.text
