"""Tenants and their API tokens (each stored as its hash, ``engine.services.tenants``)."""

from __future__ import annotations

import datetime
import uuid
from typing import NamedTuple

from sqlalchemy import (
    bindparam,
    select,
    update,
)
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from engine.db.models import Tenant, Token
from engine.errors import Conflict, EntityNotFound

Now = datetime.datetime


def add_tenant(session: Session, name: str, now: Now) -> Tenant:
    tenant = Tenant(id=str(uuid.uuid4()), name=name, created_at=now)
    session.add(tenant)
    try:
        session.flush()
    except IntegrityError as exc:
        raise Conflict(reason=f"A tenant named {name} already exists.") from exc
    return tenant


def find_tenant(session: Session, name_or_id: str) -> Tenant | None:
    return session.scalars(
        select(Tenant).where((Tenant.id == name_or_id) | (Tenant.name == name_or_id))
    ).first()


def get_tenant(session: Session, name_or_id: str) -> Tenant:
    tenant = find_tenant(session, name_or_id)
    if tenant is None:
        raise EntityNotFound(entity="Tenant", name=name_or_id)
    return tenant


_TENANT_ID = select(Tenant.id).where(Tenant.id == bindparam("tenant_id"))


def tenant_exists(reads: Connection | Session, tenant_id: str) -> bool:
    """Whether a tenant has exactly this id (never a name): an admin's request for
    another tenant asks, every request."""
    return reads.execute(_TENANT_ID, {"tenant_id": tenant_id}).first() is not None


def list_tenants(session: Session) -> list[Tenant]:
    return list(session.scalars(select(Tenant).order_by(Tenant.name)))


def add_token(session: Session, tenant_id: str, role: str, token_hash: str, now: Now,
              expires_at: Now | None = None) -> Token:
    token = Token(id=str(uuid.uuid4()), tenant_id=tenant_id, role=role,
                  token_hash=token_hash, created_at=now, expires_at=expires_at)
    session.add(token)
    session.flush()
    return token


class LiveToken(NamedTuple):
    id: str
    tenant_id: str
    role: str
    last_used_at: Now | None


# Built once: every API request authenticates, and building the statement cost more
# than running it.
_LIVE_TOKEN = select(Token.id, Token.tenant_id, Token.role, Token.last_used_at).where(
    Token.token_hash == bindparam("token_hash"), Token.revoked_at.is_(None),
    Token.expires_at.is_(None) | (Token.expires_at > bindparam("now")))


def find_live_token(reads: Connection | Session, token_hash: str, now: Now
                    ) -> LiveToken | None:
    """The token with this hash unless it is revoked or has expired by ``now``: one
    statement, so ``Database.lookups`` serves it (every API request asks)."""
    row = reads.execute(_LIVE_TOKEN, {"token_hash": token_hash, "now": now}).first()
    return None if row is None else LiveToken(*row)


def touch_token(session: Session, token_id: str, now: Now) -> None:
    session.execute(update(Token).where(Token.id == token_id).values(last_used_at=now))


def list_tokens(session: Session, tenant_id: str | None) -> list[Token]:
    """One tenant's tokens, or every tenant's (``None``), oldest first."""
    query = select(Token).order_by(Token.created_at, Token.id)
    if tenant_id is not None:
        query = query.where(Token.tenant_id == tenant_id)
    return list(session.scalars(query))
