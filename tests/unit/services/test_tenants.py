"""TenantService on SQLite: secrets a scanner can recognise and no tool reads as an option,
expiry on the service's clock, listings without secrets, revocation by id."""

from __future__ import annotations

import dataclasses
import datetime
import secrets

import pytest

from engine.db import tenant_rows
from engine.db.session import Database
from engine.errors import AuthenticationRequired, BadRequest, EntityNotFound
from engine.services.tenants import TOKEN_PREFIX, TenantService, hash_token
from tests.unit.conftest import Clock


@pytest.fixture
def tenants(db: Database, clock: Clock) -> TenantService:
    return TenantService(db, clock)


def test_a_secret_has_the_prefix_and_never_starts_with_a_dash(
        tenants: TenantService, monkeypatch: pytest.MonkeyPatch) -> None:
    tenant = tenants.create_tenant("t")
    # URL-safe base64 whose first byte is 0xf8-0xfb starts with "-": force one.
    monkeypatch.setattr(secrets, "token_bytes", lambda n=32: b"\xf8" * (n or 32))
    issued = tenants.create_token(tenant.id, "member")
    assert issued.secret.startswith(TOKEN_PREFIX) and not issued.secret.startswith("-")
    assert issued.secret[len(TOKEN_PREFIX)] == "-"  # what the prefix is protecting from
    assert tenants.authenticate(issued.secret).token_id == issued.token.id


def test_a_token_issued_before_the_prefix_still_authenticates(
        db: Database, tenants: TenantService, clock: Clock) -> None:
    tenant = tenants.create_tenant("t")
    old = "-" + secrets.token_urlsafe(32)
    with db.transaction() as session:
        row = tenant_rows.add_token(session, tenant.id, "admin", hash_token(old), clock())
        token_id = row.id
    assert tenants.authenticate(old).token_id == token_id
    assert tenants.list_tokens(tenant.id)[0].expires_at is None


def test_an_expired_token_is_refused_as_an_unknown_one(
        tenants: TenantService, clock: Clock) -> None:
    tenant = tenants.create_tenant("t")
    issued = tenants.create_token(tenant.name, "member", datetime.timedelta(hours=1))
    assert issued.token.expires_at == clock() + datetime.timedelta(hours=1)
    forever = tenants.create_token(tenant.name, "member")
    clock.advance(3599)
    assert tenants.authenticate(issued.secret).tenant_id == tenant.id
    assert tenants.is_live(issued.secret)
    clock.advance(1)
    with pytest.raises(AuthenticationRequired) as expired:
        tenants.authenticate(issued.secret)
    with pytest.raises(AuthenticationRequired) as unknown:
        tenants.authenticate(TOKEN_PREFIX + "never-issued")
    assert str(expired.value) == str(unknown.value)
    assert not tenants.is_live(issued.secret)
    assert [t.id for t in tenants.live_tokens(tenant.id)] == [forever.token.id]
    with pytest.raises(BadRequest, match="longer than zero"):
        tenants.create_token(tenant.name, "member", datetime.timedelta(0))


def test_tokens_are_listed_by_tenant_or_all_without_secrets_and_revoked_by_id(
        tenants: TenantService, clock: Clock) -> None:
    alpha, beta = tenants.create_tenant("alpha"), tenants.create_tenant("beta")
    first = tenants.create_token("alpha", "admin")
    clock.advance(1)  # listed oldest first
    second = tenants.create_token("beta", "member", datetime.timedelta(days=30))
    assert [t.id for t in tenants.list_tokens("alpha")] == [first.token.id]
    everyone = tenants.list_tokens()
    assert [(t.id, t.tenant_id) for t in everyone] == [
        (first.token.id, alpha.id), (second.token.id, beta.id)]
    shown = repr([dataclasses.asdict(t) for t in everyone])
    assert first.secret not in shown and second.secret not in shown
    assert hash_token(first.secret) not in shown

    assert tenants.revoke_token(first.token.id).revoked_at is not None
    with pytest.raises(AuthenticationRequired):
        tenants.authenticate(first.secret)
    assert [t.id for t in tenants.live_tokens("alpha")] == []


def test_a_tenant_by_id_is_never_one_named_as_that_id(tenants: TenantService) -> None:
    # A token names its tenant by id; a tenant may be named as another's id, so a lookup
    # by name or id (get_tenant, the operator's) may find either.
    real = tenants.create_tenant("real")
    named = tenants.create_tenant(real.id)

    assert tenants.tenant_by_id(real.id) == real
    assert tenants.tenant_by_id(named.id) == named
    with pytest.raises(EntityNotFound):
        tenants.tenant_by_id("real")  # a name only
