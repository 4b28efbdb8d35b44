"""``GET .../stacks/{name}/{id}/lifecycle`` (engine.api.endpoints.lifecycle) through the
real app: every plugin call recorded for the stack, oldest first, each naming its
operation (null for a call recorded before calls named it), and what each plugin holds
for the stack; another tenant's stack is Heat's 404."""

from __future__ import annotations

import pytest

from engine.context import ADMIN_ROLE
from engine.db import event_rows, stack_rows
from engine.db.session import Database
from engine.resources.registry import ResourceTypeRegistry
from tests.unit.api.endpoints.console_api import ConsoleApi
from tests.unit.conftest import Clock
from tests.unit.worker.test_lifecycle_calls import Recording, loaded

TEMPLATE = """\
heat_template_version: 2018-08-31
resources:
  word: {type: OS::Heat::RandomString}
"""
LONGER = TEMPLATE.replace("RandomString}", "RandomString, properties: {length: 40}}")


@pytest.fixture
def api(db: Database, registry: ResourceTypeRegistry, clock: Clock) -> ConsoleApi:
    return ConsoleApi(db, registry, clock, [loaded(Recording("audit", []))])


def test_each_call_names_its_operation(api: ConsoleApi) -> None:
    web = api.create("web", TEMPLATE)
    updated = api.call("PUT", web, body={"template": LONGER})
    assert updated.status_code == 202, updated.text
    api.settle()

    result = api.call("GET", web + "/lifecycle")
    assert result.status_code == 200, result.text
    calls = result.json["lifecycle"]["calls"]
    operations = api.call("GET", "/operations", role=ADMIN_ROLE,
                          params={"state": "all"}).json["operations"]
    ids = {op["action"]: op["id"] for op in operations if op["stack_name"] == "web"}
    assert [(c["action"], c["phase"], c["operation_id"]) for c in calls] == [
        ("CREATE", "pre", ids["CREATE"]), ("CREATE", "post", ids["CREATE"]),
        ("UPDATE", "pre", ids["UPDATE"]), ("UPDATE", "post", ids["UPDATE"])]
    assert result.json["lifecycle"]["plugins"] == [{"plugin": "audit", "report": None}]


def test_a_call_recorded_before_calls_named_their_operation_shows_none(
        api: ConsoleApi, db: Database, clock: Clock) -> None:
    web = api.create("web", TEMPLATE)
    stack_id = web.rsplit("/", 1)[1]
    with db.transaction() as session:
        # As such a row was written: the record without an operation id.
        stack = stack_rows.load_stack(session, stack_id)
        event_rows.add_event(session, stack_id=stack.id, resource_name=stack.name,
                             physical_resource_id=stack.id,
                             resource_type=event_rows.LIFECYCLE_TYPE, action="CHECK",
                             status="IN_PROGRESS", reason="an older call", now=clock(),
                             lifecycle={"plugin": "audit", "phase": "pre",
                                        "action": "CHECK", "verdict": "allow"})

    calls = api.call("GET", web + "/lifecycle").json["lifecycle"]["calls"]
    assert [(c["action"], c["operation_id"] is None) for c in calls] == [
        ("CREATE", False), ("CREATE", False), ("CHECK", True)]
    plugin = api.call("GET", "/lifecycle_plugins", role=ADMIN_ROLE).json["lifecycle_plugins"]
    assert [(c["action"], c["operation_id"] is None) for c in plugin[0]["recent"]] == [
        ("CHECK", True), ("CREATE", False), ("CREATE", False)]


def test_another_tenants_stack_is_not_found(api: ConsoleApi) -> None:
    web = api.create("web", TEMPLATE)
    refused = api.call("GET", web + "/lifecycle", tenant=api.b.id, role=ADMIN_ROLE)
    assert refused.status_code == 404
    assert refused.json["error"]["type"] == "EntityNotFound"
    assert "audit" not in refused.text
