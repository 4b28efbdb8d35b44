"""``GET /v1/session`` (engine.api.endpoints.session) through the real app: who a token is,
with no tenant in the path; a missing, unknown, expired or revoked token is Heat's 401."""

from __future__ import annotations

import datetime

import pytest

from engine.context import ADMIN_ROLE, MEMBER_ROLE
from engine.db.session import Database
from engine.resources.registry import ResourceTypeRegistry
from tests.unit.api.endpoints.console_api import ConsoleApi
from tests.unit.conftest import Clock


@pytest.fixture
def api(db: Database, registry: ResourceTypeRegistry, clock: Clock) -> ConsoleApi:
    return ConsoleApi(db, registry, clock)


@pytest.mark.parametrize("role", [MEMBER_ROLE, ADMIN_ROLE])
def test_a_token_is_its_tenant_and_role(api: ConsoleApi, role: str) -> None:
    issued = api.kiln.tenants.create_token(api.b.id, role)
    result = api.client.simulate_get("/v1/session", headers={"X-Auth-Token": issued.secret})

    assert result.status_code == 200, result.text
    assert result.json == {"session": {
        "tenant_id": api.b.id, "tenant_name": "b", "role": role,
        "token_id": issued.token.id, "is_admin": role == ADMIN_ROLE}}
    assert issued.secret not in result.text


def test_a_token_that_does_not_authenticate_is_a_401(api: ConsoleApi, clock: Clock) -> None:
    tenants = api.kiln.tenants
    revoked = tenants.create_token(api.a.id, MEMBER_ROLE)
    tenants.revoke_token(revoked.token.id)
    expiring = tenants.create_token(api.a.id, MEMBER_ROLE, datetime.timedelta(minutes=5))
    clock.advance(301)

    for headers in ({}, {"X-Auth-Token": "kiln_unknown"},
                    {"X-Auth-Token": revoked.secret}, {"X-Auth-Token": expiring.secret}):
        result = api.client.simulate_get("/v1/session", headers=headers)
        assert result.status_code == 401, headers
        assert result.json["error"]["type"] == "AuthenticationRequired"
        assert result.json["title"] == "Unauthorized"


def test_the_tenant_is_the_tokens_by_id_not_one_named_as_that_id(api: ConsoleApi) -> None:
    # A tenant may be named as another's id: the token's tenant is found by its id.
    impostor = api.kiln.tenants.create_tenant(api.b.id)
    issued = api.kiln.tenants.create_token(api.b.id, MEMBER_ROLE)

    result = api.client.simulate_get("/v1/session", headers={"X-Auth-Token": issued.secret})

    assert result.status_code == 200, result.text
    assert (result.json["session"]["tenant_id"], result.json["session"]["tenant_name"]) == (
        api.b.id, "b")
    assert impostor.id != api.b.id
