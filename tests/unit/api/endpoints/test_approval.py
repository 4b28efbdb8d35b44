"""``GET|POST .../stacks/{name}/{id}/approval`` (engine.api.endpoints.approval) through the
real app and Heat's fault bodies: what an operation parked at an approval gate waits
for, and the tenant admin's decision; a member may look but not decide."""

from __future__ import annotations

from typing import Any

import falcon.testing

from engine.bootstrap import Kiln
from engine.context import ADMIN_ROLE, MEMBER_ROLE
from engine.db.session import Database
from engine.lifecycle.base import Pending
from engine.lifecycle.registry import LifecycleRegistry
from engine.resources.registry import ResourceTypeRegistry
from engine.services.proposals import StackLimits
from engine.services.tenants import TenantService
from tests.stack_api import kiln_config
from tests.unit.conftest import Clock
from tests.unit.worker.running import run, worker
from tests.unit.worker.test_lifecycle_calls import Recording, loaded

TEMPLATE = """\
heat_template_version: 2018-08-31
resources:
  word: {type: OS::Heat::RandomString}
"""


def test_a_parked_create_is_shown_and_decided_through_the_api(
        db: Database, registry: ResourceTypeRegistry, clock: Clock) -> None:
    gate = Recording("approval", [], pre=lambda action: Pending("the DBA decides"))
    plugins = LifecycleRegistry([loaded(gate)])
    kiln = Kiln(kiln_config(StackLimits()), db, clock=clock, registry=registry,
                lifecycle=plugins)
    tenants = TenantService(db, clock)
    tenant = tenants.create_tenant("t")
    base = f"/v1/{tenant.id}"
    client = falcon.testing.TestClient(kiln.wsgi_app())

    def call(method: str, path: str, role: str, body: dict[str, Any] | None = None
             ) -> falcon.testing.Result:
        token = tenants.create_token(tenant.id, role).secret
        return client.simulate_request(method, base + path, json=body,
                                       headers={"X-Auth-Token": token})

    created = call("POST", "/stacks", MEMBER_ROLE, {"stack_name": "db", "template": TEMPLATE})
    assert created.status_code == 201, created.text
    path = f"/stacks/db/{created.json['stack']['id']}"
    nothing = call("GET", path + "/approval", MEMBER_ROLE)
    assert nothing.status_code == 404
    assert nothing.json["error"]["type"] == "NoApprovalFound"
    run(worker(db, registry, clock, plugins, irs=kiln.irs))

    waiting = call("GET", path + "/approval", MEMBER_ROLE)
    assert waiting.status_code == 200, waiting.text
    assert {key: waiting.json["approval"][key] for key in ("plugin", "message", "decision")} \
        == {"plugin": "approval", "message": "the DBA decides", "decision": None}

    refused = call("POST", path + "/approval", MEMBER_ROLE, {"decision": "approve"})
    assert (refused.status_code, refused.json["error"]["type"]) == (403, "ApprovalForbidden")
    bad = call("POST", path + "/approval", ADMIN_ROLE, {"decision": "yes"})
    assert (bad.status_code, bad.json["error"]["type"]) == (400, "BadRequest")
    assert "must be one of approve, reject" in bad.json["error"]["message"]

    decided = call("POST", path + "/approval", ADMIN_ROLE,
                   {"decision": "approve", "comment": "change 4411"})
    assert decided.status_code == 200, decided.text
    assert (decided.json["approval"]["decision"], decided.json["approval"]["comment"]) == (
        "approved", "change 4411")
    again = call("POST", path + "/approval", ADMIN_ROLE, {"decision": "reject"})
    assert (again.status_code, again.json["error"]["type"]) == (409, "NoApprovalAwaited")

    run(worker(db, registry, clock, plugins, irs=kiln.irs))
    stack = call("GET", path, MEMBER_ROLE).json["stack"]
    assert stack["stack_status"] == "CREATE_COMPLETE"
