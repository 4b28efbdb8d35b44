"""Heat's 302 lookups: every method, every sub-path, absolute Location, query kept."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.functional import servers, templates
from tests.functional.conftest import heat_for, unique, wait_for_status


@pytest.fixture(scope="module")
def setup(kiln_all: servers.Kiln) -> dict[str, Any]:
    creds = servers.new_tenant(kiln_all.env, unique("lookups-"))
    heat = heat_for(kiln_all, creds)
    name = unique("s")
    stack_id = heat.stacks.create(stack_name=name, template=templates.CHAIN)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    return {"base": kiln_all.endpoint(creds.tenant_id), "heat": heat, "name": name,
            "id": stack_id, "headers": {"X-Auth-Token": creds.token}}


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("by", ["name", "id"])
def test_short_form_redirects_every_method(setup: dict[str, Any], method: str, by: str
                                           ) -> None:
    response = requests.request(method, f"{setup['base']}/stacks/{setup[by]}",
                                headers=setup["headers"], allow_redirects=False, timeout=10)
    assert response.status_code == 302
    assert response.headers["Location"] == (
        f"{setup['base']}/stacks/{setup['name']}/{setup['id']}")


@pytest.mark.parametrize("suffix", ["resources", "events", "template", "actions",
                                    "environment", "files"])
def test_sub_paths_redirect_with_their_query(setup: dict[str, Any], suffix: str) -> None:
    response = requests.get(f"{setup['base']}/stacks/{setup['name']}/{suffix}",
                            params={"sort_dir": "asc"}, headers=setup["headers"],
                            allow_redirects=False, timeout=10)
    assert response.status_code == 302
    assert response.headers["Location"] == (
        f"{setup['base']}/stacks/{setup['name']}/{setup['id']}/{suffix}?sort_dir=asc")


def test_mismatched_name_and_id_is_404(setup: dict[str, Any]) -> None:
    response = requests.get(f"{setup['base']}/stacks/other/{setup['id']}",
                            headers=setup["headers"], timeout=10)
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "The Stack (other) could not be found."


def test_template_comes_back_as_json(setup: dict[str, Any]) -> None:
    template = setup["heat"].stacks.template(setup["id"])
    assert template["heat_template_version"] == "2018-08-31"
    assert set(template["resources"]) == {"first", "second", "third"}


def test_resource_events_and_event_show(setup: dict[str, Any]) -> None:
    heat = setup["heat"]
    events = heat.events.list(setup["id"], resource_name="first")
    assert {e.resource_status for e in events} == {"CREATE_IN_PROGRESS", "CREATE_COMPLETE"}
    shown = heat.events.get(setup["id"], "first", events[0].id)
    assert shown.resource_type == "OS::Heat::TestResource"
    assert shown.id == events[0].id
    filtered = heat.events.list(setup["id"], filters={"resource_status": "COMPLETE"})
    assert filtered and all(e.resource_status.endswith("COMPLETE") for e in filtered)


def test_a_new_stack_is_in_progress_when_create_returns(setup: dict[str, Any]) -> None:
    heat = setup["heat"]
    created = heat.stacks.create(stack_name=unique("s"), template=templates.FOREVER)
    # Read at once: never a previous state, never a 404.
    assert heat.stacks.get(created["stack"]["id"]).stack_status == "CREATE_IN_PROGRESS"
