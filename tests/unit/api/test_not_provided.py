"""engine.api.endpoints.not_provided: the Heat v1 routes Kiln does not serve answer 501 with
Heat's fault body naming the feature, through the real route table; served routes keep
their endpoints."""

from __future__ import annotations

import dataclasses
import logging
import types
from unittest import mock

import falcon
import falcon.testing
import pytest

from engine.api.app import ApiServices, ApiSettings, create_app
from engine.api.endpoints import not_provided
from engine.api.errors import fault_body

STACK = "/v1/t1/stacks/s1/0c6a4f1e-5d2b-4b8e-9f45-2a7c1d3e6b90"


@pytest.fixture
def client() -> falcon.testing.TestClient:
    services = ApiServices(**{f.name: mock.Mock() for f in dataclasses.fields(ApiServices)})
    services.tenants.authenticate.return_value = types.SimpleNamespace(  # type: ignore[attr-defined]
        tenant_id="t1", role="member", token_id="token-id")
    return falcon.testing.TestClient(create_app(services, ApiSettings(revision="0")),
                                     headers={"X-Auth-Token": "secret"})


@pytest.mark.parametrize(
    ("method", "path", "feature"),
    [
        ("POST", STACK + "/snapshots", "stack snapshots"),
        ("GET", STACK + "/snapshots", "stack snapshots"),
        ("GET", STACK + "/snapshots/snap-1", "stack snapshots"),
        ("DELETE", STACK + "/snapshots/snap-1", "stack snapshots"),
        ("POST", STACK + "/snapshots/snap-1/restore", "stack snapshots"),
        ("GET", "/v1/t1/software_configs", "software configs"),
        ("POST", "/v1/t1/software_configs", "software configs"),
        ("GET", "/v1/t1/software_configs/c-1", "software configs"),
        ("DELETE", "/v1/t1/software_configs/c-1", "software configs"),
        ("GET", "/v1/t1/software_deployments", "software deployments"),
        ("POST", "/v1/t1/software_deployments", "software deployments"),
        ("GET", "/v1/t1/software_deployments/metadata/server-1", "software deployments"),
        ("GET", "/v1/t1/software_deployments/d-1", "software deployments"),
        ("PUT", "/v1/t1/software_deployments/d-1", "software deployments"),
        ("DELETE", "/v1/t1/software_deployments/d-1", "software deployments"),
    ],
)
def test_a_heat_route_kiln_does_not_serve_answers_501_naming_the_feature(
        client: falcon.testing.TestClient, caplog: pytest.LogCaptureFixture,
        method: str, path: str, feature: str) -> None:
    with caplog.at_level(logging.WARNING):
        result = client.simulate_request(method, path, json={})

    assert result.status_code == 501
    assert result.json == fault_body(501, "NotProvided", f"Kiln does not provide {feature}.")
    assert result.json["title"] == "Not Implemented"
    assert caplog.records == [], "a client asking for a missing feature is no server fault"


def test_a_method_heat_lacks_on_such_a_route_is_405(
        client: falcon.testing.TestClient) -> None:
    result = client.simulate_put("/v1/t1/software_configs/c-1")

    assert result.status_code == 405
    assert result.headers["Allow"] == "DELETE, GET, OPTIONS"


def test_such_a_route_still_needs_the_tenants_token(
        client: falcon.testing.TestClient) -> None:
    result = client.simulate_get("/v1/t2/software_configs")

    assert result.status_code == 403


@pytest.mark.parametrize(
    "path",
    [
        STACK, STACK + "/resources", STACK + "/resources/r1", STACK + "/events",
        STACK + "/outputs", STACK + "/actions", "/v1/t1/stacks/s1/snapshots",
        "/v1/t1/stacks", "/v1/t1/resource_types/OS::Heat::None",
    ],
)
def test_the_routes_kiln_serves_keep_their_endpoints(
        client: falcon.testing.TestClient, path: str) -> None:
    app = client.app
    assert isinstance(app, falcon.App)
    resource, _methods, _params, _template = app._router.find(path)

    assert not isinstance(resource, tuple(type(r) for _, r in not_provided.ROUTES))
