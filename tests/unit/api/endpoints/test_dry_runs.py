"""The dry-run routes (``POST /validate`` in engine.api.endpoints.validate, ``POST
/stacks/preview`` and ``PUT|PATCH .../preview`` in engine.api.endpoints.stacks) through
the real app: a lifecycle plugin that would deny answers 400 with Heat's fault body naming
it and its message; one that warns leaves the answer 200 with its verdict. A create and
an update ask the same at the door (``[lifecycle_plugins] check_at_the_door``, on by
default) and are refused in the same body."""

from __future__ import annotations

from typing import Any

import falcon.testing
import pytest

from engine.bootstrap import Kiln
from engine.db.session import Database
from engine.lifecycle.base import Denied, Warn
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


class DryRunning(Recording):
    supports_dry_run = True


class Api:
    """The app over one tenant, with a plugin that warns and one that denies ``denies``
    (an action; None: it allows)."""

    def __init__(self, db: Database, registry: ResourceTypeRegistry, clock: Clock, *,
                 denies: str | None) -> None:
        def policy(action: str | None) -> None:
            if action == denies:
                raise Denied("random strings are not allowed")

        plugins = [DryRunning("audit", [], pre=lambda action: Warn("no owner tag")),
                   DryRunning("policy", [], pre=policy)]
        self.db, self.registry, self.clock = db, registry, clock
        kiln = Kiln(kiln_config(StackLimits()), db, clock=clock, registry=registry,
                    lifecycle=LifecycleRegistry([loaded(p) for p in plugins]))
        tenants = TenantService(db, clock)
        tenant = tenants.create_tenant("t")
        self.base = f"/v1/{tenant.id}"
        self.client = falcon.testing.TestClient(kiln.wsgi_app(), headers={
            "X-Auth-Token": tenants.create_token(tenant.id, "member").secret})

    def call(self, method: str, path: str, body: dict[str, Any]) -> falcon.testing.Result:
        return self.client.simulate_request(method, self.base + path, json=body)


def stack_path(api: Api, *, created: bool = False) -> str:
    """The path of a stored stack "web"; its create is run by a worker if ``created``."""
    response = api.call("POST", "/stacks", {"stack_name": "web", "template": TEMPLATE})
    assert response.status_code == 201, response.text
    if created:
        run(worker(api.db, api.registry, api.clock))
    return f"/stacks/web/{response.json['stack']['id']}"


ROUTES = ["validate", "preview", "update preview (PUT)", "update preview (PATCH)"]
# The door of the writes.
WRITES = ["create", "update (PUT)", "update (PATCH)"]


def request(api: Api, route: str) -> falcon.testing.Result:
    if route == "validate":
        return api.call("POST", "/validate", {"template": TEMPLATE})
    if route == "preview":
        return api.call("POST", "/stacks/preview", {"stack_name": "p", "template": TEMPLATE})
    if route == "create":
        return api.call("POST", "/stacks", {"stack_name": "p", "template": TEMPLATE})
    method = "PUT" if "PUT" in route else "PATCH"
    if "preview" in route:
        return api.call(method, stack_path(api) + "/preview", {"template": TEMPLATE})
    return api.call(method, stack_path(api, created=True), {"template": TEMPLATE})


@pytest.mark.parametrize("route", ROUTES + WRITES)
def test_a_denial_answers_400_with_heats_fault_body(
        route: str, db: Database, registry: ResourceTypeRegistry, clock: Clock) -> None:
    action = "UPDATE" if "update" in route else "CREATE"
    api = Api(db, registry, clock, denies=action)

    response = request(api, route)

    assert response.status_code == 400, response.text
    assert response.json == {
        "code": 400, "title": "Bad Request",
        "explanation": "The server could not comply with the request since it is either "
                       "malformed or otherwise incorrect.",
        "error": {"type": "LifecycleDenied", "traceback": None,
                  "message": f"Lifecycle plugin policy denied {action}: random strings "
                             "are not allowed"}}


@pytest.mark.parametrize("route", ROUTES)
def test_a_warning_answers_200_with_the_verdicts(
        route: str, db: Database, registry: ResourceTypeRegistry, clock: Clock) -> None:
    api = Api(db, registry, clock, denies=None)

    response = request(api, route)

    assert response.status_code == 200, response.text
    body = response.json
    lifecycle = body["stack"]["lifecycle"] if route == "preview" else body["lifecycle"]
    assert [(v["plugin"], v["verdict"], v["message"], v["blocking"]) for v in lifecycle] == [
        ("audit", "warn", "no owner tag", False), ("policy", "allow", "", False)]


@pytest.mark.parametrize("route", WRITES)
def test_a_warning_at_the_door_lets_the_write_through(
        route: str, db: Database, registry: ResourceTypeRegistry, clock: Clock) -> None:
    api = Api(db, registry, clock, denies=None)

    response = request(api, route)

    assert response.status_code == (201 if route == "create" else 202), response.text
