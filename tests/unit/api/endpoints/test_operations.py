"""``GET /operations`` (engine.api.endpoints.operations) through the real app: every
tenant's operations for an admin's token, newest first, narrowed by state, stack and
limit; Heat's 403 for a member's."""

from __future__ import annotations

import pytest

from engine.context import ADMIN_ROLE
from engine.db.session import Database
from engine.resources.registry import ResourceTypeRegistry
from tests.unit.api.endpoints.console_api import ConsoleApi
from tests.unit.conftest import Clock

TEMPLATE = """\
heat_template_version: 2018-08-31
resources:
  word: {type: OS::Heat::RandomString}
"""
FIELDS = {"id", "stack_id", "stack_name", "tenant_id", "action", "state", "attempt",
          "created_at", "updated_at", "finished_at", "deadline_at", "held_by",
          "lease_expires_at", "holder_alive", "failure_reason", "cancelled", "steps",
          "step_holders", "awaiting_approval"}


@pytest.fixture
def api(db: Database, registry: ResourceTypeRegistry, clock: Clock) -> ConsoleApi:
    return ConsoleApi(db, registry, clock)


def test_an_admin_sees_every_tenants_operations(api: ConsoleApi, clock: Clock) -> None:
    done = api.create("web", TEMPLATE)
    clock.advance(1)
    waiting = api.call("POST", "/stacks", tenant=api.b.id,
                       body={"stack_name": "db", "template": TEMPLATE})
    assert waiting.status_code == 201
    theirs = waiting.json["stack"]["id"]

    unfinished = api.call("GET", "/operations", role=ADMIN_ROLE)
    assert unfinished.status_code == 200, unfinished.text
    [pending] = unfinished.json["operations"]
    assert set(pending) == FIELDS
    assert (pending["stack_id"], pending["stack_name"], pending["tenant_id"]) == (
        theirs, "db", api.b.id)
    assert (pending["action"], pending["state"], pending["finished_at"]) == (
        "CREATE", "PENDING", None)
    assert pending["held_by"] == [] and pending["holder_alive"] is None

    every = api.call("GET", "/operations", role=ADMIN_ROLE, params={"state": "all"})
    assert [op["stack_name"] for op in every.json["operations"]] == ["db", "web"]
    finished = every.json["operations"][1]
    assert finished["state"] == "COMPLETE" and finished["finished_at"] is not None
    assert finished["steps"] == {"total": 1, "done": 1, "failed": 0, "running": 0}

    mine = api.call("GET", "/operations", role=ADMIN_ROLE,
                    params={"state": "all", "stack_id": done.rsplit("/", 1)[1]})
    assert [op["stack_name"] for op in mine.json["operations"]] == ["web"]
    newest = api.call("GET", "/operations", role=ADMIN_ROLE,
                      params={"state": "all", "limit": "1"})
    assert [op["stack_name"] for op in newest.json["operations"]] == ["db"]
    # Another tenant's admin reads the same list: it is every tenant's, whatever the path.
    assert api.call("GET", "/operations", tenant=api.b.id, role=ADMIN_ROLE,
                    params={"state": "all"}).json == every.json


def test_a_member_is_refused(api: ConsoleApi) -> None:
    api.create("web", TEMPLATE)
    refused = api.call("GET", "/operations", params={"state": "all"})
    assert refused.status_code == 403
    assert refused.json["title"] == "Forbidden"
    assert refused.json["error"]["type"] == "OperatorViewForbidden"
    assert refused.json["error"]["message"] == (
        "Listing the operations of every tenant needs an admin token.")


@pytest.mark.parametrize(("params", "status"), [
    ({"state": "finished"}, 400), ({"limit": "-1"}, 400), ({"stack_id": "nosuch"}, 404)])
def test_bad_filters_are_4xx(api: ConsoleApi, params: dict[str, str], status: int) -> None:
    result = api.call("GET", "/operations", role=ADMIN_ROLE, params=params)
    assert result.status_code == status, result.text
    assert "error" in result.json


@pytest.mark.parametrize("params", [{"state": "finished"}, {"limit": "-1"},
                                    {"stack_id": "nosuch"}])
def test_a_member_is_refused_before_the_query_is_read(api: ConsoleApi,
                                                      params: dict[str, str]) -> None:
    # As every operator read: a member learns nothing of the query's rules.
    refused = api.call("GET", "/operations", params=params)

    assert refused.status_code == 403, refused.text
    assert refused.json["error"]["type"] == "OperatorViewForbidden"
