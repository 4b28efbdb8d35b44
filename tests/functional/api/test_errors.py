"""Bad input gets a clear 4xx in Heat's fault body naming the template line, never a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from tests.functional import servers
from tests.functional.conftest import unique

GOOD = "heat_template_version: 2018-08-31\nresources:\n  a: {type: OS::Heat::None}\n"


@pytest.fixture(scope="module")
def api(kiln_all: servers.Kiln) -> Any:
    creds = servers.new_tenant(kiln_all.env, unique("errors-"))

    class Api:
        base = kiln_all.endpoint(creds.tenant_id)
        headers = {"X-Auth-Token": creds.token, "Content-Type": "application/json"}

        def post(self, body: Any, **kw: Any) -> requests.Response:
            data = body if isinstance(body, (str, bytes)) else json.dumps(body)
            return requests.post(f"{self.base}/stacks", data=data, headers=self.headers,
                                 timeout=10, **kw)

        def get(self, path: str, **kw: Any) -> requests.Response:
            return requests.get(self.base + path, headers=self.headers, timeout=10,
                                allow_redirects=False, **kw)

    return Api()


def fault(response: requests.Response, status: int, error_type: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["code"] == status
    assert body["title"] and body["explanation"]
    assert body["error"]["type"] == error_type
    assert body["error"]["traceback"] is None
    message: str = body["error"]["message"]
    return message


def stack(template: str, **extra: Any) -> dict[str, Any]:
    return {"stack_name": unique("bad"), "template": template, **extra}


@pytest.mark.parametrize("template, error_type, expected", [
    ("heat_template_version: 2018-08-31\nresources:\n  a: {type: OS::Heat::None\n",
     "StackValidationFailed", "template:4: Error parsing template"),
    ("heat_template_version: 2018-08-31\nresources:\n  a:\n    type: OS::Nope\n",
     "ResourceTypeNotFound",
     "template:4 resources.a.type: The Resource Type (OS::Nope) could not be found."),
    ("heat_template_version: 2018-08-31\nresources:\n  a:\n    type: OS::Heat::None\n"
     "    depends_on: b\n  b:\n    type: OS::Heat::None\n    depends_on: a\n",
     "CircularDependency", "template:3 resources.a: Circular Dependency Found: a -> b -> a"),
    ("heat_template_version: 2018-08-31\nparameters:\n  size: {type: number}\n"
     "resources:\n  a: {type: OS::Heat::None}\n",
     "UserParameterMissing", "template:3 parameters.size: The Parameter (size) was not "
                             "provided."),
    ("heat_template_version: 2018-08-31\nresources:\n  a: {type: OS::Heat::TestResource}\n"
     "outputs:\n  o:\n    value: {get_attr: [a, nonexistent]}\n",
     "StackValidationFailed", "template:6 outputs.o.value.get_attr: The Referenced Attribute "
                              "(a nonexistent) is incorrect."),
    ("heat_template_version: 2018-08-31\nresources:\n  a:\n    type: OS::Heat::TestResource\n"
     "    properties:\n      wait_secs: soon\n",
     "StackValidationFailed", "template:6 resources.a.properties.wait_secs: Property error"),
    ("heat_template_version: 2018-08-31\nresources:\n  pw:\n    type: OS::Heat::RandomString\n"
     "    properties:\n      length: 2\n      character_classes: [{class: digits, min: 3}]\n",
     "StackValidationFailed", "template:5 resources.pw.properties: Length property cannot be "
                              "smaller than combined character class and character sequence "
                              "minimums"),
    ("heat_template_version: 2018-08-31\nresources:\n  v:\n    type: OS::Heat::Value\n"
     "    properties: {value: abc, type: number}\n",
     "StackValidationFailed", "template:5 resources.v.properties: Property error: value: "
                              "Value 'abc' is not a number"),
    ("heat_template_version: 2099-01-01\n", "InvalidTemplateVersion",
     'template:1 heat_template_version: The template version is invalid'),
    ("heat_template_version: 2018-08-31\nresourcez: {}\n", "StackValidationFailed",
     "template:2 resourcez: The template section is invalid: resourcez"),
])
def test_bad_template_names_file_line_and_path(api: Any, template: str, error_type: str,
                                               expected: str) -> None:
    message = fault(api.post(stack(template)), 400, error_type)
    assert message.startswith(expected), message


def test_template_sent_as_an_object_gets_the_path(api: Any) -> None:
    template = {"heat_template_version": "2018-08-31",
                "resources": {"a": {"type": "OS::Nope"}}}
    message = fault(api.post(stack(template)), 400, "ResourceTypeNotFound")
    assert message == "resources.a.type: The Resource Type (OS::Nope) could not be found."


def test_unknown_parameter(api: Any) -> None:
    message = fault(api.post(stack(GOOD, parameters={"bogus": 1})), 400, "UnknownUserParameter")
    assert message == "The Parameter (bogus) was not defined in template."


def test_parameter_constraint(api: Any) -> None:
    template = ("heat_template_version: 2018-08-31\nparameters:\n  n:\n    type: number\n"
                "    constraints:\n      - range: {min: 1, max: 5}\n")
    message = fault(api.post(stack(template, parameters={"n": 9})), 400,
                    "StackValidationFailed")
    assert message.startswith("template:3 parameters.n: Parameter 'n' is invalid")


@pytest.mark.parametrize("body, expected", [
    ({"template": GOOD}, "No stack name specified"),
    ({"stack_name": "ok"}, "No template specified"),
    ({"stack_name": "1bad", "template": GOOD}, "Invalid stack name 1bad"),
    ({"stack_name": "ok", "template": GOOD, "timeout_mins": "x"},
     "Only integer is acceptable by 'timeout_mins'."),
])
def test_bad_request_fields(api: Any, body: dict[str, Any], expected: str) -> None:
    response = api.post(body)
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith(expected)


def test_malformed_json_body(api: Any) -> None:
    message = fault(api.post("{not json"), 400, "BadRequest")
    assert message.startswith("The request body is not valid JSON")


def test_oversized_body(api: Any) -> None:
    body = json.dumps(stack(GOOD + "#" + "x" * 1_100_000 + "\n"))
    message = fault(api.post(body), 400, "RequestLimitExceeded")
    assert "exceeds maximum allowed size (1048576 bytes)" in message


def test_oversized_template(api: Any) -> None:
    message = fault(api.post(stack(GOOD + "#" + "x" * 600_000 + "\n")), 400,
                    "RequestLimitExceeded")
    assert "Template size" in message


def test_a_yaml_alias_bomb_is_refused(api: Any) -> None:
    lines = ["heat_template_version: 2018-08-31", "x0: &x0 [a, a, a, a, a, a, a, a, a, a]"]
    lines += [f"x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * 10)}]" for i in range(1, 9)]

    message = fault(api.post(stack("\n".join(lines) + "\n")), 400, "RequestLimitExceeded")

    assert message.endswith("Template expands to more than 200000 values (YAML aliases "
                            "included); refused.")
    assert message.startswith("template:")


@pytest.mark.parametrize("depth", [100, 100_000])
def test_deeply_nested_bodies_are_refused(api: Any, depth: int) -> None:
    body = '{"stack_name": "deep", "template": ' + '{"x": ' * depth + "1" + "}" * depth + "}"

    message = fault(api.post(body), 400, "RequestLimitExceeded")

    assert message == ("Request limit exceeded: The request body nests too deeply."
                       if depth > 1000 else
                       "x.x: Request limit exceeded: Template nesting is deeper than 64 "
                       "levels; refused.")


def test_a_chain_of_10000_resources_is_refused_for_the_resource_limit(api: Any) -> None:
    """``r0`` depends on ``r1`` ... ``r9999``: once a RecursionError (a 500) in the cycle
    check; now counted against ``max_resources_per_stack`` (1000) before any resource is
    read. A 400, as Heat answers every ``RequestLimitExceeded``."""
    lines = ["heat_template_version: 2018-08-31", "resources:"]
    lines += [f"  r{i}: {{type: OS::Heat::None, depends_on: r{i + 1}}}" for i in range(9999)]
    lines.append("  r9999: {type: OS::Heat::None}")
    response = requests.post(f"{api.base}/validate", headers=api.headers, timeout=30,
                             data=json.dumps({"template": "\n".join(lines) + "\n"}))

    message = fault(response, 400, "RequestLimitExceeded")

    assert message == "Request limit exceeded: Maximum resources per stack exceeded."


def test_duplicate_stack_name_conflicts(api: Any) -> None:
    body = stack(GOOD)
    assert api.post(body).status_code == 201
    message = fault(api.post(body), 409, "StackExists")
    assert message == f"The Stack ({body['stack_name']}) already exists."


def test_unknown_stack_and_route(api: Any) -> None:
    message = fault(api.get("/stacks/nosuch"), 404, "EntityNotFound")
    assert message == "The Stack (nosuch) could not be found."
    fault(api.get("/nothing-here"), 404, "HTTPNotFound")


def test_wrong_method(api: Any) -> None:
    response = requests.put(f"{api.base}/stacks", headers=api.headers, data="{}", timeout=10)
    fault(response, 405, "HTTPMethodNotAllowed")
    assert "GET" in response.headers["Allow"]


def test_bad_filters_and_flags(api: Any) -> None:
    assert api.post(stack(GOOD)).status_code == 201
    message = fault(api.get("/stacks", params={"show_deleted": "maybe"}), 400, "BadRequest")
    assert message == 'Unrecognized value "maybe" for "show_deleted", acceptable values are: ' \
                      "true, false."
    fault(api.get("/stacks", params={"limit": "many"}), 400, "BadRequest")
    message = fault(api.get("/stacks", params={"tags": "a," + "x" * 81}), 400, "BadRequest")
    assert message == f'Invalid tag, "{"x" * 81}" is longer than 80 characters'


def test_unknown_resource_filter(api: Any) -> None:
    created = api.post(stack(GOOD))
    location = created.headers["Location"]
    response = requests.get(f"{location}/resources", params={"bogus": "x"},
                            headers=api.headers, timeout=10)
    message = fault(response, 400, "InvalidFilter")
    assert message == "Invalid filter parameters ['bogus']"
