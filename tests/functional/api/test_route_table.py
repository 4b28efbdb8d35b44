"""Every stack-related row of HEAT-API.md §2, pinned: one request per method and path, with
a minimal valid body, asserting Heat's success status and the body's top-level key (§4).

Rows Kiln does not serve as Heat does are ``xfail(strict=True)``: each reason names what
Heat answers, so the case turns into a failure, and must lose its mark, once Kiln catches
up. Software configs/deployments (tests/functional/api/test_software_config.py) and
``/services`` are out of scope; snapshots have a test of their own
(``test_snapshot_routes``): each of their requests needs the one before. Kiln's
additions for the console are pinned at the end of the table (``GET /v1/session`` has no
tenant in its path: tests/unit/api/endpoints/test_session.py).
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import pytest
import requests

from tests.functional import servers
from tests.functional.conftest import unique

TEMPLATE = """\
heat_template_version: 2018-08-31
resources:
  r:
    type: OS::Heat::TestResource
    properties: {value: hello}
outputs:
  out:
    description: the value of r
    value: {get_attr: [r, output]}
"""

NULL = object()  # the body must be the JSON literal null


@dataclasses.dataclass(frozen=True)
class Case:
    method: str
    path: str  # after /v1/{t}; {name}, {id}, {event}, {t} are filled in
    status: int
    key: object = None  # a top-level key of the body, NULL, or None for no check
    body: Any = None  # sent as JSON when not None
    own: bool = False  # the case changes its stack: it gets a throwaway one


def row(case_id: str, case: Case, xfail: str | None = None) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(case, id=case_id, marks=marks)


CASES = [
    # Collection, create (and adopt, below), preview, detail.
    row("GET stacks", Case("GET", "/stacks", 200, "stacks")),
    row("POST stacks", Case("POST", "/stacks", 201, "stack",
                            body={"stack_name": "<new>", "template": TEMPLATE})),
    row("POST stacks/preview", Case("POST", "/stacks/preview", 200, "stack",
                                    body={"stack_name": "<new>", "template": TEMPLATE})),
    row("GET stacks/detail", Case("GET", "/stacks/detail", 200, "stacks")),
    # Lookups: 302 to the canonical URL.
    *(row(f"{m} stacks/name", Case(m, "/stacks/{name}", 302))
      for m in ("GET", "POST", "PUT", "PATCH", "DELETE")),
    *(row(f"{m} stacks/arn", Case(m, "/stacks/arn:openstack:heat::{t}:stacks/{name}/{id}",
                                  302))
      for m in ("GET", "POST", "PUT", "PATCH", "DELETE")),
    *(row(f"GET stacks/name/{s}", Case("GET", "/stacks/{name}/" + s, 302))
      for s in ("resources", "events", "template", "actions", "environment", "files")),
    *(row(f"POST stacks/name/{s}", Case("POST", "/stacks/{name}/" + s, 302))
      for s in ("resources", "events", "template", "actions")),
    # The stack itself.
    row("GET stack", Case("GET", "/stacks/{name}/{id}", 200, "stack")),
    row("PUT stack", Case("PUT", "/stacks/{name}/{id}", 202, body={"template": TEMPLATE},
                          own=True)),
    row("PATCH stack", Case("PATCH", "/stacks/{name}/{id}", 202, body={"template": None},
                            own=True)),
    row("DELETE stack", Case("DELETE", "/stacks/{name}/{id}", 204, own=True)),
    row("PUT stack/preview", Case("PUT", "/stacks/{name}/{id}/preview", 200,
                                  "resource_changes", body={"template": TEMPLATE})),
    row("PATCH stack/preview", Case("PATCH", "/stacks/{name}/{id}/preview", 200,
                                    "resource_changes", body={"template": None})),
    row("GET template", Case("GET", "/stacks/{name}/{id}/template", 200,
                             "heat_template_version")),
    row("GET environment", Case("GET", "/stacks/{name}/{id}/environment", 200,
                                "parameters")),
    row("GET files", Case("GET", "/stacks/{name}/{id}/files", 200)),
    # Abandon, export (adopt is a POST /stacks, in test_adopt).
    row("DELETE abandon", Case("DELETE", "/stacks/{name}/{id}/abandon", 200, "resources",
                               own=True)),
    row("GET export", Case("GET", "/stacks/{name}/{id}/export", 200, "resources")),
    # Outputs.
    row("GET outputs", Case("GET", "/stacks/{name}/{id}/outputs", 200, "outputs")),
    row("GET outputs/key", Case("GET", "/stacks/{name}/{id}/outputs/out", 200, "output")),
    # Actions (§6).
    *(row(f"POST actions {a}", Case("POST", "/stacks/{name}/{id}/actions", 200, NULL,
                                    body={a: None}, own=True))
      for a in ("suspend", "check")),
    # Resources.
    row("GET resources", Case("GET", "/stacks/{name}/{id}/resources", 200, "resources")),
    row("GET resources/r", Case("GET", "/stacks/{name}/{id}/resources/r", 200, "resource")),
    row("PATCH resources/r", Case("PATCH", "/stacks/{name}/{id}/resources/r", 200, NULL,
                                  body={"mark_unhealthy": True,
                                        "resource_status_reason": "route table"},
                                  own=True)),
    # Heat's TestResource has no handle_signal either, so Heat too answers 400
    # ResourceActionNotSupported here; 200 null for a type that takes signals is in
    # test_wait_condition.py. This pins that the route is served (not 404/405).
    row("POST resources/r/signal", Case("POST", "/stacks/{name}/{id}/resources/r/signal",
                                        400, "error", body={"data": "x"})),
    row("GET resources/r/metadata", Case("GET", "/stacks/{name}/{id}/resources/r/metadata",
                                         200, "metadata")),
    # Events.
    row("GET events", Case("GET", "/stacks/{name}/{id}/events", 200, "events")),
    row("GET resources/r/events", Case("GET", "/stacks/{name}/{id}/resources/r/events", 200,
                                       "events")),
    row("GET resources/r/events/eid", Case(
        "GET", "/stacks/{name}/{id}/resources/r/events/{event}", 200, "event")),
    # Templates and the catalogue.
    row("POST validate", Case("POST", "/validate", 200, "Parameters",
                              body={"template": TEMPLATE})),
    row("GET resource_types", Case("GET", "/resource_types", 200, "resource_types")),
    row("GET resource_types/type", Case("GET", "/resource_types/OS::Heat::TestResource", 200,
                                        "resource_type")),
    row("GET resource_types/type/template", Case(
        "GET", "/resource_types/OS::Heat::TestResource/template", 200,
        "HeatTemplateFormatVersion")),
    row("GET template_versions", Case("GET", "/template_versions", 200, "template_versions")),
    row("GET template_versions/ver/functions", Case(
        "GET", "/template_versions/heat_template_version.2018-08-31/functions", 200,
        "template_functions")),
    row("GET build_info", Case("GET", "/build_info", 200, "api")),
    # Kiln's additions for the console (specs/console.rst); the operator pages refuse the
    # member's token the cases use, which pins that they are served all the same.
    row("GET graph", Case("GET", "/stacks/{name}/{id}/graph", 200, "graph")),
    row("GET source", Case("GET", "/stacks/{name}/{id}/source", 200, "source")),
    *(row(f"GET {page}", Case("GET", "/" + page, 403, "error"))
      for page in ("operations", "workers", "lifecycle_plugins")),
]


def send(setup: dict[str, Any], method: str, path: str, body: Any = None
         ) -> requests.Response:
    headers = dict(setup["headers"])
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body)
    return requests.request(method, setup["base"] + path, data=data, headers=headers,
                            allow_redirects=False, timeout=10)


def create_stack(setup: dict[str, Any]) -> tuple[str, str]:
    name = unique("rt")
    response = send(setup, "POST", "/stacks", {"stack_name": name, "template": TEMPLATE})
    assert response.status_code == 201, response.text
    return name, response.json()["stack"]["id"]


def wait_complete(setup: dict[str, Any], name: str, stack_id: str) -> None:
    deadline = time.monotonic() + 20
    while True:
        status = send(setup, "GET", f"/stacks/{name}/{stack_id}").json()["stack"][
            "stack_status"]
        if status == "CREATE_COMPLETE":
            return
        assert status == "CREATE_IN_PROGRESS" and time.monotonic() < deadline, status
        time.sleep(0.05)


@pytest.fixture(scope="module")
def setup(kiln_all: servers.Kiln) -> dict[str, Any]:
    """One tenant; one shared CREATE_COMPLETE stack for the cases that change nothing, and a
    throwaway stack for each case that does (all created at once, so they build together)."""
    creds = servers.new_tenant(kiln_all.env, unique("routes-"))
    setup: dict[str, Any] = {"base": kiln_all.endpoint(creds.tenant_id), "t": creds.tenant_id,
                             "headers": {"X-Auth-Token": creds.token}}
    owners = [p.id for p in CASES if p.values[0].own]
    stacks = {key: create_stack(setup) for key in ["shared", *owners]}
    for name, stack_id in stacks.values():
        wait_complete(setup, name, stack_id)
    setup["stacks"] = stacks
    name, stack_id = stacks["shared"]
    events = send(setup, "GET", f"/stacks/{name}/{stack_id}/resources/r/events").json()
    setup["event"] = events["events"][0]["id"]
    return setup


@pytest.mark.parametrize("case", CASES)
def test_route(setup: dict[str, Any], case: Case, request: pytest.FixtureRequest) -> None:
    key = request.node.callspec.id if case.own else "shared"
    name, stack_id = setup["stacks"][key]
    path = case.path.format(name=name, id=stack_id, event=setup["event"], t=setup["t"])
    body = case.body
    if isinstance(body, dict) and body.get("stack_name") == "<new>":
        body = {**body, "stack_name": unique("rt")}

    response = send(setup, case.method, path, body)

    assert response.status_code == case.status, response.text
    if case.status == 302:
        assert response.headers["Location"].startswith(
            f"{setup['base']}/stacks/{name}/{stack_id}")
    if case.key is NULL:
        assert response.headers["Content-Type"].startswith("application/json")
        assert response.json() is None
    elif case.key is not None:
        assert case.key in response.json(), response.text


def test_adopt(setup: dict[str, Any]) -> None:
    """``POST /stacks`` with ``adopt_stack_data`` (§7): 201 and the create body."""
    name, stack_id = setup["stacks"]["shared"]
    data = send(setup, "GET", f"/stacks/{name}/{stack_id}/export").json()
    response = send(setup, "POST", "/stacks", {"stack_name": unique("adopted"),
                                                  "adopt_stack_data": json.dumps(data)})
    assert response.status_code == 201, response.text
    assert "stack" in response.json()


def test_snapshot_routes(setup: dict[str, Any]) -> None:
    """Every row of §2 under ``…/snapshots``, with Heat's statuses: 200 and the snapshot
    itself (unwrapped) on create, 200 list and show, 202 restore, 204 delete. In one
    test, on a stack of its own: each step needs the one before (a restore needs a
    snapshot the worker has finished)."""
    name, stack_id = create_stack(setup)
    wait_complete(setup, name, stack_id)
    base = f"/stacks/{name}/{stack_id}/snapshots"

    created = send(setup, "POST", base, {"name": "snap"})
    assert created.status_code == 200, created.text
    sid = created.json()["id"]
    listed = send(setup, "GET", base)
    assert listed.status_code == 200 and "snapshots" in listed.json(), listed.text
    deadline = time.monotonic() + 20
    while True:
        shown = send(setup, "GET", f"{base}/{sid}")
        assert shown.status_code == 200 and "snapshot" in shown.json(), shown.text
        if shown.json()["snapshot"]["status"] == "COMPLETE":
            break
        assert time.monotonic() < deadline, shown.text
        time.sleep(0.05)
    restored = send(setup, "POST", f"{base}/{sid}/restore")
    assert restored.status_code == 202, restored.text
    deleted = send(setup, "DELETE", f"{base}/{sid}")
    assert deleted.status_code == 204, deleted.text
