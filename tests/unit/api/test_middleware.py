"""engine.api.middleware through the real Falcon app. AccessLog: one kiln.access line per
request, refusals and errors included, under the request's log context, which every
other line logged while serving it carries too; no token in any line. Options: Heat's 204
with ``Allow`` and no body for ``OPTIONS`` on any route."""

from __future__ import annotations

import pathlib
from typing import Any

import falcon.testing
import pytest

from engine import logs
from engine.bootstrap import Kiln
from engine.db.session import Database
from engine.lifecycle.registry import LifecycleRegistry
from engine.resources.registry import ResourceTypeRegistry
from engine.services.proposals import StackLimits
from engine.services.tenants import TenantService
from tests.stack_api import kiln_config
from tests.unit.conftest import Clock, Logged

TEMPLATE = """\
heat_template_version: 2018-08-31
resources:
  nothing: {type: OS::Heat::None}
"""


def client(db: Database, registry: ResourceTypeRegistry) -> falcon.testing.TestClient:
    kiln = Kiln(kiln_config(StackLimits()), db, registry=registry,
                lifecycle=LifecycleRegistry(()))
    return falcon.testing.TestClient(kiln.wsgi_app())


def access_lines(logged: Logged) -> list[dict[str, Any]]:
    return [line for line in logged() if line["logger"] == logs.ACCESS_LOGGER]


def test_one_access_line_per_request_with_its_id_tenant_status_and_duration(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, logged: Logged) -> None:
    tenants = TenantService(db, clock)
    tenant = tenants.create_tenant("t")
    secret = tenants.create_token(tenant.id, "member").secret
    app = client(db, registry)
    auth = {"X-Auth-Token": secret}

    created = app.simulate_post(f"/v1/{tenant.id}/stacks", headers=auth, json={
        "stack_name": "web", "template": TEMPLATE})
    listed = app.simulate_get(f"/v1/{tenant.id}/stacks", headers=auth,
                              query_string="name=web&limit=5")
    refused = app.simulate_get(f"/v1/{tenant.id}/stacks")  # no token
    unknown = app.simulate_get("/no/such/route")

    assert [r.status_code for r in (created, listed, refused, unknown)] == [201, 200, 401, 404]
    lines = access_lines(logged)
    assert [(line["request_id"], line["tenant_id"], line["method"], line["path"],
             line["status"]) for line in lines] == [
        (created.headers["x-openstack-request-id"], tenant.id, "POST",
         f"/v1/{tenant.id}/stacks", 201),
        (listed.headers["x-openstack-request-id"], tenant.id, "GET",
         f"/v1/{tenant.id}/stacks?name=web&limit=5", 200),
        (refused.headers["x-openstack-request-id"], tenant.id, "GET",
         f"/v1/{tenant.id}/stacks", 401),
        (unknown.headers["x-openstack-request-id"], None, "GET", "/no/such/route", 404)]
    first = lines[0]
    assert first["level"] == "INFO"
    assert first["duration_ms"] >= 0
    assert first["message"] == (f"{first['remote_addr']} POST /v1/{tenant.id}/stacks 201 "
                                f"{first['duration_ms']:.1f}ms")
    assert logs.current() == {}, "nothing stays bound after a request"
    assert secret not in "\n".join(str(line) for line in logged())


def test_the_lines_logged_while_serving_a_request_carry_its_context(
        tmp_path: pathlib.Path, registry: ResourceTypeRegistry, logged: Logged) -> None:
    # A database that cannot be opened: the request fails with a 503, which is logged.
    unreachable = Database(f"sqlite:///{tmp_path}/missing/kiln.sqlite")
    try:
        result = client(unreachable, registry).simulate_get(
            "/v1/t-1/stacks/web/s-1/resources", headers={"X-Auth-Token": "kiln_x"})
    finally:
        unreachable.dispose()

    assert result.status_code == 503
    request_id = result.headers["x-openstack-request-id"]
    warning, access = [line for line in logged() if line["request_id"] == request_id]
    assert (warning["logger"], warning["level"]) == ("engine.api.errors", "WARNING")
    assert access["logger"] == logs.ACCESS_LOGGER
    for line in (warning, access):
        assert (line["tenant_id"], line["stack_name"], line["stack_id"]) == (
            "t-1", "web", "s-1")


def test_a_path_cannot_forge_a_line_and_an_unknown_method_is_counted_and_logged(
        db: Database, registry: ResourceTypeRegistry, logged: Logged) -> None:
    app = client(db, registry)

    app.simulate_get("/v1/x\n2026-11-26 INFO kiln.access [req-forged] DELETE")
    # Called as a server would: Falcon's test client refuses to send such a method.
    statuses: list[str] = []
    app.app(falcon.testing.create_environ("/healthcheck", method="WEBSOCKET"),
            lambda status, headers, *_: statuses.append(status))

    assert statuses == ["400 Bad Request"]  # Falcon's refusal, not a 500
    assert [line["path"] for line in access_lines(logged)] == [
        "/v1/x%0A2026-11-26%20INFO%20kiln.access%20[req-forged]%20DELETE", "/healthcheck"]


def test_probes_and_scrapes_that_succeed_are_logged_at_debug(
        db: Database, registry: ResourceTypeRegistry, logged: Logged) -> None:
    app = client(db, registry)

    app.simulate_get("/healthcheck")
    app.simulate_get("/metrics")
    app.simulate_get("/versions")

    assert [(line["path"], line["level"]) for line in access_lines(logged)] == [
        ("/healthcheck", "DEBUG"), ("/metrics", "DEBUG"), ("/versions", "INFO")]


@pytest.mark.parametrize("path, allow", [
    ("/v1/{t}/stacks", "GET, POST"),
    ("/v1/{t}/stacks/web", "DELETE, GET, PATCH, POST, PUT"),
    ("/v1/{t}/stacks/web/0a7c44d4-6ad2-4b6e-8a6e-3a0fd2d6b2c1", "DELETE, GET, PATCH, PUT"),
    ("/v1/{t}/stacks/web/0a7c44d4-6ad2-4b6e-8a6e-3a0fd2d6b2c1/actions", "POST"),
    ("/", "GET"),  # no token needed where the route needs none
])
def test_options_is_204_with_allow_no_body_and_logged_as_such(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, logged: Logged,
        path: str, allow: str) -> None:
    tenants = TenantService(db, clock)
    tenant = tenants.create_tenant("t")
    secret = tenants.create_token(tenant.id, "member").secret

    result = client(db, registry).simulate_options(path.format(t=tenant.id),
                                                    headers={"X-Auth-Token": secret})

    assert result.status_code == 204, result.text
    assert result.headers["allow"] == allow
    assert result.content == b""
    assert "content-type" not in result.headers and "content-length" not in result.headers
    assert [line["status"] for line in access_lines(logged)] == [204]


def test_a_signed_signal_url_takes_signal_tokens_only_and_its_secret_is_masked(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, logged: Logged) -> None:
    tenants = TenantService(db, clock)
    tenant = tenants.create_tenant("t")
    secret = tenants.create_token(tenant.id, "member").secret
    app = client(db, registry)
    path = f"/v1/{tenant.id}/stacks/s/0c6a4f1e-5d2b-4b8e-9f45-2a7c1d3e6b90/resources/r/signal"

    # A tenant token never travels in a URL: in the query it authenticates nothing.
    refused = app.simulate_put(path, query_string=f"x=1&signal_token={secret}", json={})

    assert refused.status_code == 401
    # Its name encoded is the same parameter to Falcon, so it is masked all the same.
    encoded = app.simulate_put(path, query_string=f"signal%5Ftoken={secret}", json={})

    assert encoded.status_code == 401
    first, second = access_lines(logged)
    assert first["path"] == f"{path}?x=1&signal_token=***"
    assert second["path"] == f"{path}?signal_token=***"
    assert secret not in str(logged())
