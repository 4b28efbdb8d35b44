"""engine.db.tenant_rows on SQLite: tenants found by id or name, a name taken once, and
tokens that are live until revoked or expired."""

from __future__ import annotations

import pytest

from engine.db import tenant_rows
from engine.db.models import Token
from engine.db.session import Database
from engine.errors import Conflict, EntityNotFound
from tests.unit.db.conftest import (
    NOW,
    later,
)


def test_tenants_are_found_by_id_or_name_and_listed_by_name(db: Database) -> None:
    with db.transaction() as session:
        beta = tenant_rows.add_tenant(session, "beta", NOW)
        alpha = tenant_rows.add_tenant(session, "alpha", NOW)

    with db.read() as session:
        assert tenant_rows.find_tenant(session, beta.id) is not None
        assert tenant_rows.get_tenant(session, "beta").id == beta.id
        assert tenant_rows.find_tenant(session, "gamma") is None
        with pytest.raises(EntityNotFound):
            tenant_rows.get_tenant(session, "gamma")
        assert [t.id for t in tenant_rows.list_tenants(session)] == [alpha.id, beta.id]


def test_a_tenant_name_is_taken_once(db: Database) -> None:
    with db.transaction() as session:
        tenant_rows.add_tenant(session, "t", NOW)
    with pytest.raises(Conflict, match="A tenant named t already exists."), \
            db.transaction() as session:
        tenant_rows.add_tenant(session, "t", NOW)


def test_a_revoked_token_is_not_live_and_use_is_recorded(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        first = tenant_rows.add_token(session, tenant_id, "member", "hash-1", NOW)
        second = tenant_rows.add_token(session, tenant_id, "admin", "hash-2", later(1))
        session.get_one(Token, second.id).revoked_at = later(2)

    with db.transaction() as session:
        tenant_rows.touch_token(session, first.id, later(3))
    with db.read() as session:
        live = tenant_rows.find_live_token(session, "hash-1", later(4))
        assert live is not None and (live.role, live.last_used_at) == ("member", later(3))
        assert tenant_rows.find_live_token(session, "hash-2", later(4)) is None
        assert [t.id for t in tenant_rows.list_tokens(session, tenant_id)] == [first.id, second.id]


def test_a_token_is_live_until_it_expires(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        tenant_rows.add_token(session, tenant_id, "member", "hash-1", NOW, later(60))
    with db.read() as session:
        assert tenant_rows.find_live_token(session, "hash-1", later(59)) is not None
        assert tenant_rows.find_live_token(session, "hash-1", later(60)) is None
