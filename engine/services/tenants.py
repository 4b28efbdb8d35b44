"""Tenants and tokens: creation, hashing, expiry, authentication.

A token is ``kiln_`` and 32 random bytes (URL-safe base64), shown once; the database keeps
only its sha256. A random secret of that size cannot be guessed, so a slow password hash
would add latency to every request without adding safety.
"""

from __future__ import annotations

import datetime
import hashlib
import secrets

from engine.clock import Clock
from engine.context import ROLES, SIGNAL_ROLE
from engine.db import admin, signals, tenant_rows
from engine.db.models import Tenant, Token
from engine.db.session import Database
from engine.errors import AuthenticationRequired, BadRequest, EntityNotFound, TenantNotEmpty
from engine.services.records import IssuedToken, Principal, TenantRecord, TokenRecord

# NOTE: writing last_used_at on every request would add a row write (and on SQLite a WAL
# append) to every read; a minute's precision is what an operator needs.
LAST_USED_PRECISION = datetime.timedelta(minutes=1)

# NOTE: the prefix lets secret scanners (and people) recognise a leaked Kiln token, and
# since URL-safe base64 can begin with "-", it keeps `--os-token <secret>` and any other
# argparse tool from reading the secret as an option. Tokens issued before it (no prefix)
# still authenticate: only the hash of the whole secret is compared.
TOKEN_PREFIX = "kiln_"


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class TenantService:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def create_tenant(self, name: str) -> TenantRecord:
        if not name or len(name) > 255:
            raise BadRequest(reason="A tenant name must be 1 to 255 characters long.")
        with self._db.transaction() as session:
            return _tenant(tenant_rows.add_tenant(session, name, self._clock()))

    def find_tenant(self, name_or_id: str) -> TenantRecord | None:
        with self._db.read() as session:
            tenant = tenant_rows.find_tenant(session, name_or_id)
            return _tenant(tenant) if tenant else None

    def list_tenants(self) -> list[TenantRecord]:
        with self._db.read() as session:
            return [_tenant(t) for t in tenant_rows.list_tenants(session)]

    def create_token(self, tenant: str, role: str,
                     expires_in: datetime.timedelta | None = None) -> IssuedToken:
        """A new token; with ``expires_in`` it stops authenticating that long from now."""
        if role not in ROLES:
            raise BadRequest(reason=f"Unknown role {role}; use one of {', '.join(ROLES)}.")
        if expires_in is not None and expires_in <= datetime.timedelta(0):
            raise BadRequest(reason="A token's lifetime must be longer than zero.")
        secret = new_secret()
        now = self._clock()
        with self._db.transaction() as session:
            owner = tenant_rows.get_tenant(session, tenant)
            token = tenant_rows.add_token(session, owner.id, role, hash_token(secret), now,
                                          now + expires_in if expires_in else None)
            return IssuedToken(_token(token), secret)

    def list_tokens(self, tenant: str | None = None) -> list[TokenRecord]:
        """A tenant's tokens (name or id), or every tenant's; the records hold no secret,
        which is nowhere to be read."""
        with self._db.read() as session:
            owner = tenant_rows.get_tenant(session, tenant).id if tenant is not None else None
            return [_token(t) for t in tenant_rows.list_tokens(session, owner)]

    def live_tokens(self, tenant: str) -> list[TokenRecord]:
        """A tenant's tokens that still authenticate: not revoked, not expired."""
        now = self._clock()
        return [t for t in self.list_tokens(tenant) if t.is_live(now)]

    def delete_tenant(self, name_or_id: str) -> TenantRecord:
        """Remove a tenant with its tokens and the records of its deleted stacks; one that
        still has stacks is refused (deleting them is the tenant's business)."""
        with self._db.transaction() as session:
            tenant = tenant_rows.get_tenant(session, name_or_id)
            live = admin.count_stacks(session, tenant.id, live_only=True)
            if live:
                raise TenantNotEmpty(name=tenant.name, count=live)
            record = _tenant(tenant)
            admin.delete_tenant(session, tenant.id)
        return record

    def revoke_token(self, token_id: str) -> TokenRecord:
        """Revoke a token; it stops authenticating at once. Revoking twice is a no-op."""
        with self._db.transaction() as session:
            token = admin.revoke_token(session, token_id, self._clock())
            if token is None:
                raise EntityNotFound(entity="Token", name=token_id)
            return _token(token)

    def is_live(self, secret: str) -> bool:
        with self._db.lookups() as reads:
            return tenant_rows.find_live_token(reads, hash_token(secret),
                                               self._clock()) is not None

    def authenticate(self, secret: str | None) -> Principal:
        if not secret:
            raise AuthenticationRequired(reason="no X-Auth-Token header was sent")
        now = self._clock()
        with self._db.lookups() as reads:
            # An expired token is refused in the same words as an unknown one: which
            # secrets once existed is nobody's business.
            token = tenant_rows.find_live_token(reads, hash_token(secret), now)
            if token is None:
                raise AuthenticationRequired(reason="the token is not valid")
            principal = Principal(token.id, token.tenant_id, token.role)
            stale = token.last_used_at is None or now - token.last_used_at > LAST_USED_PRECISION
        if stale:
            with self._db.transaction() as session:
                tenant_rows.touch_token(session, principal.token_id, now)
        return principal

    def authenticate_for_signal(self, secret: str | None, tenant_id: str, stack_name: str,
                                stack_id: str, resource_name: str, *,
                                signal_only: bool = False) -> Principal:
        """A tenant token as :meth:`authenticate`, or else a signal token issued for
        exactly this resource of this stack (role ``signal``, acting on the stack's
        tenant). Either way a secret that fits neither is 401, with the same words.
        ``signal_only``: a signal token or nothing (a secret from a signed URL's query,
        where a tenant token must never travel)."""
        if secret:
            with self._db.read() as session:
                token_id = signals.find_signal_token(
                    session, secret, tenant_id=tenant_id, stack_name=stack_name,
                    stack_id=stack_id, resource_name=resource_name)
            if token_id is not None:
                return Principal(token_id, tenant_id, SIGNAL_ROLE)
        if signal_only:
            raise AuthenticationRequired(reason="the token is not valid")
        return self.authenticate(secret)

    def require_tenant_id(self, tenant_id: str) -> None:
        """Raise EntityNotFound unless a tenant has exactly this id (admins name any)."""
        with self._db.lookups() as reads:
            if not tenant_rows.tenant_exists(reads, tenant_id):
                raise EntityNotFound(entity="Tenant", name=tenant_id)

    def tenant_by_id(self, tenant_id: str) -> TenantRecord:
        """The tenant with exactly this id (a token's): never one whose name it is."""
        with self._db.read() as session:
            tenant = session.get(Tenant, tenant_id)
            if tenant is None:
                raise EntityNotFound(entity="Tenant", name=tenant_id)
            return _tenant(tenant)

    def get_tenant(self, name_or_id: str) -> TenantRecord:
        record = self.find_tenant(name_or_id)
        if record is None:
            raise EntityNotFound(entity="Tenant", name=name_or_id)
        return record


def _tenant(row: Tenant) -> TenantRecord:
    return TenantRecord(row.id, row.name, row.created_at)


def _token(row: Token) -> TokenRecord:
    return TokenRecord(row.id, row.tenant_id, row.role, row.created_at, row.last_used_at,
                       row.revoked_at, row.expires_at)
