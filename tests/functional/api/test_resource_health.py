"""Mark-unhealthy and signals on a resource, with Heat's rules and messages, on both
database backends (mark-unhealthy locks the stack row)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from heatclient import exc as heat_exc

from tests.functional import servers, templates
from tests.functional.conftest import heat_for, unique, wait_for_status

TEMPLATE = """\
heat_template_version: 2018-08-31
resources:
  first:
    type: OS::Heat::TestResource
    properties: {value: one}
  second:
    type: OS::Heat::None
"""


@pytest.fixture(scope="module", params=["sqlite-kiln-all", "postgresql-split"])
def kiln(request: pytest.FixtureRequest) -> servers.Kiln:
    name = "kiln_all" if request.param.startswith("sqlite") else "kiln_postgresql"
    return request.getfixturevalue(name)


@pytest.fixture(scope="module")
def tenant(kiln: servers.Kiln) -> servers.Credentials:
    return servers.new_tenant(kiln.env, unique("health-"))


@pytest.fixture(scope="module")
def heat(kiln: servers.Kiln, tenant: servers.Credentials) -> Any:
    return heat_for(kiln, tenant)


def create(heat: Any, template: str = TEMPLATE, wanted: str = "CREATE_COMPLETE"
           ) -> tuple[str, str]:
    name = unique("s")
    stack_id = heat.stacks.create(stack_name=name, template=template)["stack"]["id"]
    if wanted:
        wait_for_status(heat, stack_id, wanted)
    return name, stack_id


def call(kiln: servers.Kiln, tenant: servers.Credentials, method: str, path: str,
         body: Any = None) -> requests.Response:
    data = body if isinstance(body, str | None) else json.dumps(body)
    return requests.request(method, f"{kiln.endpoint(tenant.tenant_id)}/stacks/{path}",
                            data=data, timeout=10,
                            headers={"X-Auth-Token": tenant.token,
                                     "Content-Type": "application/json"})


def error(response: requests.Response, status: int) -> tuple[str, str]:
    assert response.status_code == status, response.text
    found = response.json()["error"]
    return found["type"], found["message"]


def check_failed_events(heat: Any, stack_id: str, resource: str) -> list[Any]:
    return [e for e in heat.events.list(stack_id, resource_name=resource, sort_dir="asc")
            if e.resource_status.startswith("CHECK_")]


# --- mark unhealthy -------------------------------------------------------------------


@pytest.mark.parametrize("body, message", [
    ({"mark_unhealthy": True, "bogus": 1, "other": 2},
     "Invalid keys in resource mark unhealthy {'bogus', 'other'}"),
    ({"resource_status_reason": "x"},
     "Missing mandatory (mark_unhealthy) key from mark unhealthy request"),
    ({"mark_unhealthy": "maybe"},
     'Unrecognized value "maybe" for "mark_unhealthy", acceptable values are: true, false.'),
    ("[true]", "The request body must be a JSON object."),
])
def test_bad_mark_unhealthy_bodies_are_400s(kiln: servers.Kiln, tenant: servers.Credentials,
                                            heat: Any, body: Any, message: str) -> None:
    name, stack_id = create(heat)
    response = call(kiln, tenant, "PATCH", f"{name}/{stack_id}/resources/first", body)
    assert error(response, 400)[1] == message


def test_mark_unhealthy_and_back(kiln: servers.Kiln, tenant: servers.Credentials,
                                 heat: Any) -> None:
    name, stack_id = create(heat)
    response = call(kiln, tenant, "PATCH", f"{name}/{stack_id}/resources/first",
                    {"mark_unhealthy": True, "resource_status_reason": "disk gone"})
    assert response.status_code == 200 and response.json() is None
    first = heat.resources.get(stack_id, "first")
    assert (first.resource_status, first.resource_status_reason) == (
        "CHECK_FAILED", "disk gone")
    assert heat.resources.get(stack_id, "second").resource_status == "CREATE_COMPLETE"
    assert heat.stacks.get(stack_id).stack_status == "CREATE_COMPLETE"
    events = check_failed_events(heat, stack_id, "first")
    assert [(e.resource_status, e.resource_status_reason) for e in events] == [
        ("CHECK_FAILED", "disk gone")]
    assert events[0].physical_resource_id == first.physical_resource_id

    # Again, by physical id and as a string: the reason changes, the state (and so the
    # events) do not.
    heat.resources.mark_unhealthy(stack_id, first.physical_resource_id, "true", "still gone")
    assert heat.resources.get(stack_id, "first").resource_status_reason == "still gone"
    assert len(check_failed_events(heat, stack_id, "first")) == 1

    heat.resources.mark_unhealthy(stack_id, "first", False, "")
    first = heat.resources.get(stack_id, "first")
    assert (first.resource_status, first.resource_status_reason) == (
        "CHECK_COMPLETE", "state changed by resource_mark_unhealthy api")
    # Healthy again on a healthy resource: nothing changes.
    heat.resources.mark_unhealthy(stack_id, "second", False, "fine")
    second = heat.resources.get(stack_id, "second")
    assert (second.resource_status, second.resource_status_reason) == (
        "CREATE_COMPLETE", "state changed")
    assert [e.resource_status for e in check_failed_events(heat, stack_id, "first")] == [
        "CHECK_FAILED", "CHECK_COMPLETE"]


def test_mark_unhealthy_of_an_unknown_resource_is_404(heat: Any) -> None:
    name, stack_id = create(heat)
    with pytest.raises(heat_exc.HTTPNotFound) as missing:
        heat.resources.mark_unhealthy(stack_id, "nosuch", True, "")
    assert f"The Resource (nosuch) could not be found in Stack {name}." in str(missing.value)


def test_mark_unhealthy_while_an_operation_runs_is_409(kiln: servers.Kiln,
                                                       tenant: servers.Credentials,
                                                       heat: Any) -> None:
    name, stack_id = create(heat, templates.FOREVER, wanted="")
    response = call(kiln, tenant, "PATCH", f"{name}/{stack_id}/resources/slow",
                    {"mark_unhealthy": True})
    assert error(response, 409) == (
        "ActionInProgress", f"Stack {name} already has an action (CREATE) in progress.")
    heat.actions.cancel_without_rollback(stack_id)
    wait_for_status(heat, stack_id, "CREATE_FAILED")


# --- signals --------------------------------------------------------------------------


def test_signals_are_refused_as_heat_refuses_them(kiln: servers.Kiln,
                                                  tenant: servers.Credentials,
                                                  heat: Any) -> None:
    name, stack_id = create(heat)
    for body in (None, {"data": "x"}, "not json at all"):
        response = call(kiln, tenant, "POST", f"{name}/{stack_id}/resources/first/signal",
                        body)
        assert error(response, 400) == ("ResourceActionNotSupported",
                                        "signal is not supported for resource.")
    with pytest.raises(heat_exc.HTTPBadRequest):
        heat.resources.signal(stack_id, "second")
    response = call(kiln, tenant, "POST", f"{name}/{stack_id}/resources/nosuch/signal")
    assert error(response, 404) == (
        "ResourceNotFound", f"The Resource (nosuch) could not be found in Stack {name}.")

    heat.actions.suspend(stack_id)
    wait_for_status(heat, stack_id, "SUSPEND_COMPLETE")
    response = call(kiln, tenant, "POST", f"{name}/{stack_id}/resources/first/signal")
    assert error(response, 400) == ("NotSupported",
                                    "Signal resource during SUSPEND is not supported.")


def test_signal_to_a_resource_not_created_is_404(kiln: servers.Kiln,
                                                 tenant: servers.Credentials,
                                                 heat: Any) -> None:
    name, stack_id = create(heat, templates.FAILING, wanted="CREATE_FAILED")
    assert heat.resources.get(stack_id, "never").resource_status == "INIT_COMPLETE"
    response = call(kiln, tenant, "POST", f"{name}/{stack_id}/resources/never/signal")
    assert error(response, 404) == ("ResourceNotAvailable",
                                    "The Resource (never) is not available.")
