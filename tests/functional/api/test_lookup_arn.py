"""Heat's ARN lookup: ``/stacks/arn:openstack:heat::<t>:stacks/<name>/<id>[/<path>]``
redirects to the stack's URL as the ARN spells it (HEAT-API.md §2, §3)."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote

import pytest
import requests

from tests.functional import servers, templates
from tests.functional.conftest import heat_for, unique, wait_for_status


@pytest.fixture(scope="module")
def setup(kiln_all: servers.Kiln) -> dict[str, Any]:
    creds = servers.new_tenant(kiln_all.env, unique("arn-"))
    heat = heat_for(kiln_all, creds)
    name = unique("s")
    stack_id = heat.stacks.create(stack_name=name, template=templates.CHAIN)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    return {"kiln": kiln_all, "tenant": creds.tenant_id, "heat": heat, "name": name,
            "id": stack_id, "base": kiln_all.endpoint(creds.tenant_id),
            "headers": {"X-Auth-Token": creds.token}}


def arn(tenant: str, name: str, stack_id: str, path: str = "") -> str:
    return f"arn:openstack:heat::{tenant}:stacks/{name}/{stack_id}{path}"


def send(setup: dict[str, Any], method: str, path: str, **kwargs: Any) -> requests.Response:
    return requests.request(method, setup["base"] + path, headers=setup["headers"],
                            allow_redirects=False, timeout=10, **kwargs)


def test_sub_path_and_query_are_kept(setup: dict[str, Any]) -> None:
    target = arn(setup["tenant"], setup["name"], setup["id"], "/resources/first/events")
    response = send(setup, "GET", f"/stacks/{target}", params={"sort_dir": "asc"})

    assert response.status_code == 302
    assert response.headers["Location"] == (
        f"{setup['base']}/stacks/{setup['name']}/{setup['id']}/resources/first/events"
        "?sort_dir=asc")


def test_percent_encoded_arn(setup: dict[str, Any]) -> None:
    """The form Heat's identifiers put in URLs: the whole ARN quoted, ``/`` included."""
    target = quote(arn(setup["tenant"], setup["name"], setup["id"]), safe="")
    response = send(setup, "DELETE", f"/stacks/{target}")

    assert response.status_code == 302
    assert response.headers["Location"] == (
        f"{setup['base']}/stacks/{setup['name']}/{setup['id']}")


def test_heatclient_follows_an_arn(setup: dict[str, Any]) -> None:
    stack = setup["heat"].stacks.get(arn(setup["tenant"], setup["name"], setup["id"]))
    assert (stack.stack_name, stack.id) == (setup["name"], setup["id"])


def test_arn_is_not_looked_up(setup: dict[str, Any]) -> None:
    """As Heat: the ARN is used as it is; the request it leads to gets the 404."""
    missing = str(uuid.uuid4())
    response = send(setup, "GET", f"/stacks/{arn(setup['tenant'], 'nosuch', missing)}")
    assert response.status_code == 302

    followed = requests.get(response.headers["Location"], headers=setup["headers"],
                            timeout=10)
    assert followed.status_code == 404
    assert followed.json()["error"]["message"] == "The Stack (nosuch) could not be found."


def test_arn_of_another_tenant_redirects_there_and_is_refused(setup: dict[str, Any]
                                                              ) -> None:
    other = servers.new_tenant(setup["kiln"].env, unique("arn-other-"))
    response = send(setup, "GET", f"/stacks/{arn(other.tenant_id, 'theirs', setup['id'])}")
    assert response.status_code == 302
    assert response.headers["Location"] == (
        f"{setup['kiln'].endpoint(other.tenant_id)}/stacks/theirs/{setup['id']}")

    followed = requests.get(response.headers["Location"], headers=setup["headers"],
                            timeout=10)
    assert followed.status_code == 403


@pytest.mark.parametrize("text", [
    "arn:openstack:nova::{t}:stacks/{name}/{id}",  # not Heat's
    "arn:openstack:heat::{t}:servers/{name}/{id}",  # not a stack
    "arn:openstack:heat::{t}:stacks/{name}",  # no id: served by the stack route
    "arn:openstack:heat::{t}:stacks/a%252Fb/{id}",  # a name with a "/" in it
])
def test_text_that_is_not_a_stack_arn_is_404(setup: dict[str, Any], text: str) -> None:
    path = text.format(t=setup["tenant"], name=setup["name"], id=setup["id"])
    response = send(setup, "GET", f"/stacks/{path}")

    assert response.status_code == 404
    assert response.json()["error"]["type"] == "EntityNotFound"
    assert response.json()["error"]["message"].startswith("The Stack (arn:openstack:")


def test_arn_lookup_needs_a_token(setup: dict[str, Any]) -> None:
    target = arn(setup["tenant"], setup["name"], setup["id"])
    response = requests.get(f"{setup['base']}/stacks/{target}", allow_redirects=False,
                            timeout=10)
    assert response.status_code == 401


def test_arn_lookup_of_another_tenants_url_is_403(setup: dict[str, Any]) -> None:
    other = servers.new_tenant(setup["kiln"].env, unique("arn-url-"))
    target = arn(setup["tenant"], setup["name"], setup["id"])
    response = requests.get(f"{setup['kiln'].endpoint(other.tenant_id)}/stacks/{target}",
                            headers=setup["headers"], allow_redirects=False, timeout=10)
    assert response.status_code == 403


def test_other_methods(setup: dict[str, Any]) -> None:
    target = f"/stacks/{arn(setup['tenant'], setup['name'], setup['id'])}"

    head = send(setup, "HEAD", target)
    options = send(setup, "OPTIONS", target)

    assert head.status_code == 405
    assert options.status_code == 204
    assert options.headers["Allow"] == "GET, POST, PUT, PATCH, DELETE"
    assert options.content == b"" and "Content-Type" not in options.headers
