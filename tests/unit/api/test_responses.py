"""Heat's answers with no document of their own (engine.api.responses) through the real
app: an update's 202 and a lookup's 302 carry webob's JSON status document, byte for byte
as Heat sends it to a JSON client; a delete's and the ARN sink's ``OPTIONS``'s 204 carry
neither body nor ``Content-Type`` (every route's ``OPTIONS``: test_middleware.py); and no
answer says JSON without being JSON, which python-heatclient would log at ERROR ("Could
not decode response body as JSON")."""

from __future__ import annotations

import logging
from typing import Any

import falcon.testing
import pytest
import requests
from heatclient.common import utils as heat_utils

from engine.db.session import Database
from engine.resources.registry import ResourceTypeRegistry
from tests.unit.api.endpoints.console_api import ConsoleApi
from tests.unit.conftest import Clock

TEMPLATE = """\
heat_template_version: 2018-08-31
parameters:
  v: {type: string, default: one}
resources:
  r:
    type: OS::Heat::TestResource
    properties: {value: {get_param: v}}
"""
# What Heat sends (webob 1.8.7's HTTPAccepted and HTTPFound rendered for
# ``Accept: application/json``), captured from webob itself.
ACCEPTED = ('{"message": "The request is accepted for processing.<br /><br />\\n\\n\\n", '
            '"code": "202 Accepted", "title": "Accepted"}')
FOUND = ('{{"message": "The resource was found at <a href=\\"{0}\\">{0}</a>;\\nyou should '
         'be redirected automatically.\\n\\n", "code": "302 Found", "title": "Found"}}')
HOST = "http://falconframework.org"  # the test client's


@pytest.fixture
def api(db: Database, registry: ResourceTypeRegistry, clock: Clock) -> ConsoleApi:
    return ConsoleApi(db, registry, clock)


def bodiless(result: falcon.testing.Result) -> bool:
    return result.content == b"" and "content-type" not in result.headers


@pytest.mark.parametrize("method, body", [("PUT", {"template": TEMPLATE}),
                                          ("PATCH", {"parameters": {"v": "two"}})])
def test_an_update_is_202_with_webobs_accepted_document(api: ConsoleApi, method: str,
                                                        body: dict[str, Any]) -> None:
    path = api.create("web", TEMPLATE)

    result = api.call(method, path, body=body)

    assert result.status_code == 202, result.text
    assert result.headers["content-type"] == "application/json"
    assert result.text == ACCEPTED


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("short, suffix", [("/stacks/web", ""),
                                           ("/stacks/web/actions", "/actions"),
                                           ("/stacks/{arn}", "")])
def test_a_lookup_is_302_with_webobs_found_document_naming_the_location(
        api: ConsoleApi, method: str, short: str, suffix: str) -> None:
    path = api.create("web", TEMPLATE)
    stack_id = path.rsplit("/", 1)[1]
    arn = f"arn:openstack:heat::{api.a.id}:stacks/web/{stack_id}"

    result = api.call(method, short.format(arn=arn))

    location = f"{HOST}/v1/{api.a.id}{path}{suffix}"
    assert result.status_code == 302, result.text
    assert result.headers["location"] == location
    assert result.headers["content-type"] == "application/json"
    assert result.text == FOUND.format(location)


def test_a_delete_is_204_with_no_body_and_no_content_type(api: ConsoleApi) -> None:
    path = api.create("web", TEMPLATE)

    result = api.call("DELETE", path)

    assert result.status_code == 204
    assert bodiless(result)


def test_options_on_the_arn_sink_is_204_with_allow_and_no_body(api: ConsoleApi) -> None:
    """The sink answers ``OPTIONS`` itself (Falcon's responder, which
    ``middleware.Options`` turns into the same 204, serves routes only)."""
    arn = f"arn:openstack:heat::{api.a.id}:stacks/web/0a7c44d4-6ad2-4b6e-8a6e-3a0fd2d6b2c1"

    result = api.call("OPTIONS", f"/stacks/{arn}")

    assert result.status_code == 204, result.text
    assert result.headers["allow"] == "GET, POST, PUT, PATCH, DELETE"
    assert bodiless(result)


def test_no_answer_says_json_without_being_json(api: ConsoleApi,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """Each answer handed to heatclient's own reader: it logs at ERROR when an answer
    says ``application/json`` and is not JSON."""
    path = api.create("web", TEMPLATE)
    requests_made = [
        ("GET", "/stacks/web", None), ("PUT", "/stacks/web", {"template": TEMPLATE}),
        ("PUT", path, {"template": TEMPLATE}), ("PATCH", path, {"parameters": {"v": "3"}}),
        ("PUT", path + "/preview", {"template": TEMPLATE}),
        ("POST", path + "/actions", {"check": None}),
        ("PATCH", path + "/resources/r", {"mark_unhealthy": True}),
        ("POST", path + "/resources/r/signal", {}),  # 400: TestResource takes none
        ("OPTIONS", path, None), ("GET", "/stacks/nothing", None),
        ("DELETE", path, None),
    ]
    with caplog.at_level(logging.ERROR, logger="heatclient"):
        for method, url, body in requests_made:
            result = api.call(method, url, body=body)
            api.settle(2)
            heat_utils.get_response_body(as_requests_response(result))

    assert [r.getMessage() for r in caplog.records if r.name.startswith("heatclient")] == []


def as_requests_response(result: falcon.testing.Result) -> requests.Response:
    """The answer as heatclient receives it from requests."""
    response = requests.Response()
    response.status_code = result.status_code
    response.headers.update(result.headers)
    response._content = result.content  # how requests itself fills a read response
    return response
