"""``GET /metrics`` (engine/api/endpoints/metrics.py) and the middleware that counts every
request (engine/api/middleware.py:RequestMetrics), on the real app: no token needed,
requests counted by route template (never by a path that names a tenant or a stack),
refusals included."""

from __future__ import annotations

import pathlib

import falcon.testing

from engine.bootstrap import Kiln
from engine.context import MEMBER_ROLE
from engine.db.session import Database
from engine.lifecycle.registry import LifecycleRegistry
from engine.metrics import CONTENT_TYPE
from engine.resources.registry import ResourceTypeRegistry
from engine.services.proposals import StackLimits
from engine.services.tenants import TenantService
from tests.stack_api import kiln_config
from tests.unit.conftest import Clock
from tests.unit.metric_deltas import Moved

STACKS = "/v1/{tenant_id}/stacks"


def client(db: Database, registry: ResourceTypeRegistry, metrics_dir: str | None = None
           ) -> falcon.testing.TestClient:
    kiln = Kiln(kiln_config(StackLimits()), db, registry=registry,
                lifecycle=LifecycleRegistry(()))
    return falcon.testing.TestClient(kiln.wsgi_app(metrics_multiprocess_dir=metrics_dir))


def test_metrics_need_no_token_and_are_prometheus_text(
        db: Database, registry: ResourceTypeRegistry) -> None:
    result = client(db, registry).simulate_get("/metrics")

    assert result.status_code == 200
    assert result.headers["content-type"] == CONTENT_TYPE
    assert "# TYPE kiln_http_requests_total counter" in result.text
    assert "# TYPE kiln_operation_duration_seconds histogram" in result.text


def test_requests_are_counted_by_route_template_never_by_tenant_or_name(
        db: Database, registry: ResourceTypeRegistry, clock: Clock) -> None:
    tenants = TenantService(db, clock)
    tenant = tenants.create_tenant("metrics")
    secret = tenants.create_token(tenant.id, MEMBER_ROLE).secret
    app = client(db, registry)
    moved = Moved()

    listed = app.simulate_get(f"/v1/{tenant.id}/stacks", headers={"X-Auth-Token": secret})
    refused = app.simulate_get(f"/v1/{tenant.id}/stacks")  # no token
    missing = app.simulate_get(f"/v1/{tenant.id}/stacks/secret-name/42",
                               headers={"X-Auth-Token": secret})
    unrouted = app.simulate_get("/no/such/path")

    assert (listed.status_code, refused.status_code, missing.status_code,
            unrouted.status_code) == (200, 401, 404, 404)
    assert moved("kiln_http_requests_total", route=STACKS, method="GET", status="200") == 1
    assert moved("kiln_http_requests_total", route=STACKS, method="GET", status="401") == 1
    assert moved("kiln_http_requests_total", route=STACKS + "/{stack_name}/{stack_id}",
                 method="GET", status="404") == 1
    assert moved("kiln_http_requests_total", route="unmatched", method="GET",
                 status="404") == 1
    assert moved("kiln_http_request_duration_seconds_count", route=STACKS,
                 method="GET") == 2
    text = app.simulate_get("/metrics").text
    assert tenant.id not in text
    assert "secret-name" not in text


def test_with_a_multiprocess_directory_the_metrics_are_read_from_it(
        db: Database, registry: ResourceTypeRegistry, tmp_path: pathlib.Path) -> None:
    # An empty directory: no worker has counted anything, and the process's own
    # collectors (gc, process) are not the workers' sum.
    result = client(db, registry, str(tmp_path)).simulate_get("/metrics")

    assert result.status_code == 200
    assert "python_gc_objects_collected_total" not in result.text
    assert "python_gc_objects_collected_total" in client(db, registry).simulate_get(
        "/metrics").text
