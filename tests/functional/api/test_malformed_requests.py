"""No request gets a 500: the route table swept with malformed input against a real
kiln-all.

Every answer must be a success, a redirect, or a 4xx in Heat's fault body (``code``,
``title``, ``explanation``, ``error: {type, message, traceback}``) whose ``code`` is the
status: what heatclient parses. The inputs are the classes a fuzzing harness found 500s
with (issue 17): wrong JSON types in every field of every body, unknown keys, bodies
that are not objects, oversized or deeply nested, bad and odd ids in the path, query
parameters at the edges (huge, negative, non-numeric, repeated, unicode, empty, NUL),
wrong content types, methods a route does not serve, and templates with YAML that
builds what JSON cannot hold. A few hundred requests, a few seconds.

Destructive methods only ever reach a stack through a path that names none (a bad id)
or with a body that must be refused, so the shared stack stays as it is.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.functional import servers
from tests.functional.conftest import unique

TEMPLATE = """\
heat_template_version: 2018-08-31
parameters:
  p: {type: string, default: x}
resources:
  r:
    type: OS::Heat::TestResource
    properties: {value: {get_param: p}}
outputs:
  o: {value: {get_attr: [r, output]}}
"""
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
S = "/stacks/{name}/{id}"
# Every route of engine/api/app.py (after /v1/{tenant}) and the methods it serves.
ROUTES: dict[str, tuple[str, ...]] = {
    "/build_info": ("GET",),
    "/services": ("GET",),
    "/stacks": ("GET", "POST"),
    "/stacks/detail": ("GET",),
    "/stacks/preview": METHODS,  # other methods look up a stack named "preview"
    "/stacks/{name}": METHODS,
    "/stacks/{name}/resources": METHODS,
    S: ("GET", "PUT", "PATCH", "DELETE"),
    S + "/preview": ("PUT", "PATCH"),
    S + "/template": ("GET",),
    S + "/environment": ("GET",),
    S + "/files": ("GET",),
    S + "/actions": ("POST",),
    S + "/abandon": ("DELETE",),
    S + "/export": ("GET",),
    S + "/lifecycle": ("GET",),
    S + "/outputs": ("GET",),
    S + "/outputs/o": ("GET",),
    S + "/resources": ("GET",),
    S + "/resources/r": ("GET", "PATCH"),
    S + "/resources/r/metadata": ("GET",),
    S + "/resources/r/signal": ("POST", "PUT"),  # PUT: a signed URL (software-config.rst)
    S + "/events": ("GET",),
    S + "/resources/r/events": ("GET",),
    S + "/resources/r/events/{event}": ("GET",),
    "/validate": ("POST",),
    "/resource_types": ("GET",),
    "/resource_types/OS::Heat::None": ("GET",),
    "/resource_types/OS::Heat::None/template": ("GET",),
    "/template_versions": ("GET",),
    "/template_versions/heat_template_version.2018-08-31/functions": ("GET",),
    "/stacks/arn:openstack:heat::{t}:stacks/{name}/{id}": METHODS,
}
# The first is sent with every method; the others with GET only.
NOT_A_UUID = ("not-a-uuid", "☃" + "x" * 300, str(uuid.uuid4()).upper(), "%ff%fe")

# Values of the wrong type, or at an edge, for any field of a body; the first few are
# sent to every body route, all of them to validate (the same checks serve every route).
ODD_VALUES: tuple[Any, ...] = (
    1.5, [1, [2]], "x", {"a": {"b": 1}}, 2**63,
    None, True, -1, -(2**63) - 1, "", "☃", [], {}, "Infinity", "9" * 5000, "a\u0000b",
    "\ud800", 1e308,
)
SHORT = 3
STACK_FIELDS = ("stack_name", "template", "parameters", "files", "environment",
                "environment_files", "timeout_mins", "disable_rollback", "tags",
                "adopt_stack_data", "converge", "clear_parameters", "existing",
                "template_url", "unknown_key")
# YAML that builds what JSON cannot hold, or what Heat's loader does not build.
ODD_TEMPLATES = (
    "value: !!binary aGVsbG8=", "value: !!binary //79", "value: !!set {a, b}",
    "value: !!omap [a: 1, b: 2]", "value: !!python/object/apply:os.getcwd []",
    "value: !!timestamp 2001-12-14", "value: .inf", "value: .nan",
    "value: " + "9" * 5000, "value: 0x" + "f" * 4000, "value: {1: a, true: b, 1.5: c}",
    "value: {null: a}", "value: {[a]: b}", "value: \"\\0\"", "value: !custom x",
    "\tvalue: tab",
    # Scalars their tag cannot read: plain Python errors in PyYAML's constructors.
    "value: !!bool maybe", 'value: !!int ""', "value: !!int 0x", "value: !!int 1:x",
    "value: !!float abc", "value: 0x_", "value: {null: a, ~: b}",
)


def fault_shaped(response: requests.Response) -> None:
    """A success or a redirect, or a 4xx heatclient can read; never a 5xx."""
    context = f"{response.request.method} {response.request.url}: {response.text[:300]}"
    assert response.status_code < 500, context
    if response.status_code < 400:
        return
    assert response.headers["Content-Type"].startswith("application/json"), context
    body = response.json()
    assert body["code"] == response.status_code, context
    assert isinstance(body["title"], str) and body["title"], context
    assert isinstance(body["explanation"], str) and body["explanation"], context
    error = body["error"]
    assert isinstance(error["type"], str) and error["type"], context
    assert isinstance(error["message"], str) and error["message"], context
    assert error["traceback"] is None, context


class Api:
    def __init__(self, kiln: servers.Kiln, creds: servers.Credentials) -> None:
        self.root = kiln.url
        self.base = kiln.endpoint(creds.tenant_id)
        self.tenant_id = creds.tenant_id
        self.token = creds.token
        self.session = requests.Session()

    def send(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
             content_type: str = "application/json", params: Any = None,
             url: str | None = None) -> requests.Response:
        headers = {"X-Auth-Token": self.token, "Content-Type": content_type}
        data = raw if raw is not None else (None if body is None else json.dumps(body))
        return self.session.request(method, url or self.base + path, data=data,
                                    headers=headers, params=params, allow_redirects=False,
                                    timeout=30)

    def check(self, method: str, path: str, body: Any = None, **kw: Any) -> requests.Response:
        response = self.send(method, path, body, **kw)
        fault_shaped(response)
        return response


@pytest.fixture(scope="module")
def api(kiln_all: servers.Kiln) -> Iterator[Api]:
    api = Api(kiln_all, servers.new_tenant(kiln_all.env, unique("malformed-")))
    created = api.send("POST", "/stacks", {"stack_name": "shared", "template": TEMPLATE})
    assert created.status_code == 201, created.text
    api.stack_id = created.json()["stack"]["id"]  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while True:
        shown = api.send("GET", f"/stacks/shared/{api.stack_id}")  # type: ignore[attr-defined]
        status = shown.json()["stack"]["stack_status"]
        if status == "CREATE_COMPLETE":
            break
        assert status == "CREATE_IN_PROGRESS" and time.monotonic() < deadline, status
        time.sleep(0.1)
    events = api.send("GET", f"/stacks/shared/{api.stack_id}/resources/r/events")  # type: ignore[attr-defined]
    api.event_id = events.json()["events"][0]["id"]  # type: ignore[attr-defined]
    yield api
    api.session.close()


def fill(api: Any, route: str, stack_id: str) -> str:
    return route.format(name="shared", id=stack_id, event=api.event_id, t=api.tenant_id)


@pytest.mark.parametrize("route", ROUTES)
def test_every_method_with_a_bad_stack_id(api: Any, route: str) -> None:
    """Each method on each route (served or not), naming a stack that cannot exist and
    sending a body that is no object: 404, 405 or 400, each in Heat's shape."""
    for method in METHODS:
        response = api.check(method, fill(api, route, NOT_A_UUID[0]), raw=b'"junk"')
        if method not in ROUTES[route]:
            assert response.status_code == 405, response.text
    if "{id}" in route:
        for bad_id in NOT_A_UUID[1:]:
            api.check("GET", fill(api, route, bad_id))


ODD_QUERY = ("9223372036854775808", "-1", "1.5", " 1", "x", "", "☃", "9" * 5000, "\u0000")
LISTS = ("/stacks", S + "/events", S + "/resources", S + "/resources/r/events")


@pytest.mark.parametrize("route", [r for r, methods in ROUTES.items() if "GET" in methods])
def test_reads_with_odd_query_parameters(api: Any, route: str) -> None:
    """Every read with the parameters any of them takes; the lists with each of theirs."""
    path = fill(api, route, api.stack_id)
    if route not in LISTS:
        for value in ODD_QUERY[:3]:
            api.check("GET", path, params={"limit": value, "nested_depth": value,
                                           "with_detail": value, "template_type": value})
        return
    for name in ("limit", "marker", "nested_depth", "sort_dir", "show_deleted", "tags",
                 "timeout_mins", "status"):
        for value in ODD_QUERY:
            api.check("GET", path, params={name: value})
    for repeated in ("limit=1&limit=2", "sort_dir=asc&sort_dir=up", "%ff=%fe"):
        api.check("GET", path + "?" + repeated)


@pytest.mark.parametrize("method, route", [
    ("POST", "/stacks"), ("POST", "/stacks/preview"), ("POST", "/validate"),
    ("PUT", S), ("PATCH", S), ("PUT", S + "/preview"), ("PATCH", S + "/preview"),
])
def test_stack_bodies_with_every_field_of_the_wrong_type(api: Any, method: str,
                                                         route: str) -> None:
    path = fill(api, route, api.stack_id)
    base: dict[str, Any] = {"template": TEMPLATE}
    if route != "/validate" and method == "POST":
        base["stack_name"] = "never"
    real_update = route == S
    for field in STACK_FIELDS:
        for value in ODD_VALUES if route == "/validate" else ODD_VALUES[:SHORT]:
            body = {**base, field: value}
            if real_update and field != "template":
                # A real update must not start: the template is broken too, so a body
                # whose fields pass is refused for its template.
                body["template"] = "heat_template_version: 2018-08-31\nresources: 1\n"
            response = api.check(method, path, raw=json.dumps(body).encode())
            if real_update:
                assert response.status_code >= 400, (field, value, response.text)


@pytest.mark.parametrize("route", ["/validate", "/stacks/preview"])
def test_templates_with_yaml_json_cannot_hold(api: Any, route: str) -> None:
    for line in ODD_TEMPLATES:
        text = ("heat_template_version: 2018-08-31\nresources:\n  r:\n"
                "    type: OS::Heat::TestResource\n    properties:\n      " + line + "\n")
        response = api.check("POST", route, {"stack_name": "odd", "template": text})
        if response.status_code >= 400:
            assert response.json()["error"]["message"].startswith("template:"), response.text


def test_environments_and_files_with_yaml_json_cannot_hold(api: Any) -> None:
    for line in ODD_TEMPLATES:
        api.check("POST", "/validate", {"template": TEMPLATE,
                                        "environment": "parameters:\n  " + line + "\n"})
        api.check("POST", "/validate", {"template": TEMPLATE, "files": {"e.yaml": line},
                                        "environment_files": ["e.yaml"]})


@pytest.mark.parametrize("method, route", [
    ("POST", "/stacks"), ("POST", "/validate"), ("PATCH", S + "/preview"),
    ("POST", S + "/actions"), ("PATCH", S + "/resources/r"), ("POST", S + "/resources/r/signal"),
])
def test_bodies_that_are_not_json_objects(api: Any, method: str, route: str) -> None:
    path = fill(api, route, api.stack_id)
    for raw in (b"", b"null", b"[]", b'"s"', b"1", b"{", b"\xff\xfe", b"\xef\xbb\xbf{}",
                b'{"a": NaN}', b'{"a": Infinity}', b'{"a": 1e999}', b'{"a": "\\u0000"}',
                b'{"a": "\\ud800"}', b'{"\\u0000": 1}', b'{"a": ' + b"9" * 5000 + b"}",
                b"[" * 200 + b"]" * 200, b"[" * 50_000 + b"]" * 50_000,
                b'{"a": ' + b"[" * 200 + b"]" * 200 + b"}",
                b"<stack><name>x</name></stack>", b"stack_name=x&template=y"):
        api.check(method, path, raw=raw)
    if route in ("/stacks", S + "/resources/r/signal"):
        for content_type in ("text/plain", "application/xml", "", "text/plain; charset=utf-16",
                             "application/x-www-form-urlencoded"):
            api.check(method, path, raw=b"stack_name=x&template=y", content_type=content_type)
            api.check(method, path, raw=b'{"stack_name": "x"}', content_type=content_type)


def test_action_and_resource_bodies_with_the_wrong_types(api: Any) -> None:
    actions = fill(api, S + "/actions", api.stack_id)
    for body in ({}, {"suspend": None, "resume": None}, {"explode": None}, {"": None},
                 {"cancel_update": None}, {"cancel_without_rollback": 1}):
        response = api.check("POST", actions, body)
        assert response.status_code == 400, response.text
    resource = fill(api, S + "/resources/r", api.stack_id)
    for value in ODD_VALUES:
        # Never a body that would mark the resource: the shared stack stays as it is.
        for body in ({"mark_unhealthy": "maybe", "resource_status_reason": value},
                     {"mark_unhealthy": value, "extra": value}):
            response = api.check("PATCH", resource, raw=json.dumps(body).encode())
            assert response.status_code == 400, response.text
        if str(value).lower() not in ("true", "false"):
            response = api.check("PATCH", resource, raw=json.dumps(
                {"mark_unhealthy": value}).encode())
            assert response.status_code == 400, response.text
    signal = fill(api, S + "/resources/r/signal", api.stack_id)
    for value in ODD_VALUES:
        api.check("POST", signal, raw=json.dumps({"data": value}).encode())


def test_an_oversized_body_on_every_body_route(api: Any) -> None:
    big = b'{"template": "' + b"x" * 1_100_000 + b'"}'
    for route, methods in ROUTES.items():
        for method in ("POST", "PUT", "PATCH"):
            if method in methods:
                response = api.check(method, fill(api, route, api.stack_id), raw=big)
                assert response.status_code == 400, response.text


def test_a_nul_anywhere_in_the_url(api: Any) -> None:
    for path in ("/stacks/a%00b", f"/stacks/shared/{api.stack_id}/resources/r%00",
                 f"/stacks/shared/{api.stack_id}/outputs/%00", "/resource_types/OS%00"):
        response = api.check("GET", path)
        assert response.status_code == 400, response.text
    response = api.check("GET", "/stacks", params={"name": "a\u0000"})
    assert response.json()["error"]["message"] == (
        "The request's path or query has a NUL character (%00).")


def test_the_shared_stack_is_untouched(api: Any) -> None:
    """The sweep above changed nothing: every destructive request was refused."""
    shown = api.send("GET", f"/stacks/shared/{api.stack_id}").json()["stack"]
    assert (shown["stack_status"], shown["stack_status_reason"]) == (
        "CREATE_COMPLETE", "Stack CREATE completed successfully")


JSON_PARAMETER = TEMPLATE.replace("p: {type: string, default: x}", "p: {type: json}")
# What SQLite stores but PostgreSQL refuses (a DataError, once a 500 there): NUL in text,
# NaN and infinities in JSON, integers past 64 bits.
POSTGRESQL_CASES: list[tuple[str, str, Any, Any, int]] = [
    ("GET", "/stacks", None, {"name": "a\u0000"}, 400),
    ("GET", "/stacks/a%00b", None, None, 400),
    ("GET", "/stacks", None, {"limit": str(2**63)}, 400),
    ("GET", "/stacks", None, {"timeout_mins": str(2**63)}, 200),
    ("POST", "/stacks", {"stack_name": "p1", "template": TEMPLATE, "parameters": {"p": "a\0"}},
     None, 400),
    ("POST", "/stacks", {"stack_name": "p2", "template": TEMPLATE, "tags": "a\0"}, None, 400),
    ("POST", "/stacks", {"stack_name": "p3", "template": TEMPLATE,
                         "parameters": {"p": float("nan")}}, None, 400),
    ("POST", "/stacks", {"stack_name": "p4", "template": TEMPLATE.replace(
        "{get_param: p}", ".nan")}, None, 400),
    ("POST", "/stacks", {"stack_name": "p5", "template": TEMPLATE.replace(
        "{get_param: p}", '"a\\0b"')}, None, 400),
    ("POST", "/stacks", {"stack_name": "p6", "template": TEMPLATE,
                         "timeout_mins": 2**63}, None, 400),
    # JSON text a json parameter reads: the body's own checks see only a string.
    ("POST", "/stacks", {"stack_name": "p7", "template": JSON_PARAMETER,
                         "parameters": {"p": '["a\\u0000b"]'}}, None, 400),
    ("POST", "/stacks", {"stack_name": "p8", "template": JSON_PARAMETER,
                         "parameters": {"p": "[NaN]"}}, None, 400),
]


def test_what_postgresql_cannot_hold_is_a_4xx_there(kiln_postgresql: servers.Kiln) -> None:
    api = Api(kiln_postgresql, servers.new_tenant(kiln_postgresql.env, unique("pg-")))
    for method, path, body, params, status in POSTGRESQL_CASES:
        response = api.check(method, path, body, params=params)
        assert response.status_code == status, (method, path, body, response.text)
