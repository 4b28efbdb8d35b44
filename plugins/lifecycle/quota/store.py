"""The quota plugin's table and the transactions that read and write it.

One row per stack that holds quota, so every write is "set this stack's row to these
values" (repeating it changes nothing) and a tenant's usage is a ``COUNT``/``SUM`` over
its rows. Each row names the root of its stack's tree of nested stacks (itself for a
top-level stack): the tenant's stacks are its rows that are their own root, and a tree's
resources the sum over the rows naming that root. The table is the plugin's own: no
foreign key to ``stacks``, so the plugin never depends on the engine's schema and can be
disabled without leaving constraints behind.

Serialising decisions. Two pre-ops for one tenant must not both take the last slot, so
every write first takes a per-tenant lock and only then reads the tenant's usage:

* PostgreSQL: ``pg_advisory_xact_lock(namespace, hash(tenant))``, held to the end of
  the transaction. ``SELECT ... FOR UPDATE`` on the tenant's rows would not do: a tenant
  with no rows yet has nothing to lock, and two transactions that each insert a new row
  never see each other's (phantom) row, so both would pass. Under READ COMMITTED each
  statement takes a fresh snapshot, so the ``SUM`` that follows the lock sees everything
  the previous lock holder committed. A hash collision between two tenants only makes
  them wait for each other; it never lets a decision through.
* SQLite: ``Database.transaction`` begins with ``BEGIN IMMEDIATE``; the transaction is
  the only writer from its first statement, which is the same guarantee.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.orm import Session

from engine.lifecycle.base import Transactions

METADATA = sa.MetaData()

# NOTE: migrations/versions/0003_lifecycle_quota.py creates this table and
# 0014_lifecycle_trees.py adds root_stack_id; change them together (the migration test
# compares the result with this definition).
USAGE = sa.Table(
    "lifecycle_quota_usage",
    METADATA,
    sa.Column("stack_id", sa.String(36), nullable=False),
    sa.Column("tenant_id", sa.String(36), nullable=False),
    # The top-level stack of the stack's tree; the stack itself when it is one.
    sa.Column("root_stack_id", sa.String(36), nullable=False),
    # What the stack holds once no operation is in flight.
    sa.Column("resources", sa.Integer(), nullable=False),
    # Held on top of ``resources`` while an update that grows the stack runs.
    sa.Column("pending_resources", sa.Integer(), nullable=False),
    # The operation that last wrote the row.
    sa.Column("action", sa.String(16), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint("stack_id", name="pk_lifecycle_quota_usage"),
    sa.Index("ix_lifecycle_quota_usage_tenant_id", "tenant_id"),
    sa.Index("ix_lifecycle_quota_usage_root_stack_id", "root_stack_id"),
)

# First key of the two-key advisory lock: keeps these locks apart from any other user of
# advisory locks in the database (the one- and two-key spaces do not overlap either).
_LOCK_NAMESPACE = 0x4B514C31  # "KQL1"


@dataclasses.dataclass(frozen=True)
class Usage:
    """What a set of stacks holds: the number of top-level stacks (trees) and the
    resources of all of them, nested ones included."""

    stacks: int
    resources: int


@dataclasses.dataclass(frozen=True)
class Others:
    """What the tenant's stacks other than the one being decided hold, and how many of
    those resources are in its own tree (its root and the stacks nested in it)."""

    tenant: Usage
    tree_resources: int


@dataclasses.dataclass(frozen=True)
class StackUsage:
    """One stack's row."""

    stack_id: str
    tenant_id: str
    root_stack_id: str
    resources: int
    pending_resources: int
    action: str
    updated_at: datetime.datetime


@dataclasses.dataclass(frozen=True)
class Holding:
    """What a stack should hold after a write."""

    resources: int
    pending_resources: int = 0


#: Called with the usage of the tenant's *other* stacks; raises to refuse.
Decide = Callable[[Others], None]


@dataclasses.dataclass(frozen=True)
class Place:
    """A stack's row key: the stack, its tenant and the root of its tree."""

    stack_id: str
    tenant_id: str
    root_stack_id: str


class QuotaStore:
    def __init__(self, database: Transactions,
                 clock: Callable[[], datetime.datetime]) -> None:
        self._database = database
        self._clock = clock

    def reserve(self, place: Place, action: str, holding: Holding, decide: Decide, *,
                dry_run: bool = False) -> None:
        """Lock the tenant, let ``decide`` judge the other stacks' usage, then set this
        stack's row to ``holding``. Nothing is written if ``decide`` raises or on a dry run
        (which reads without locking: it reserves nothing, so it serialises nothing).

        The tenant's lock also serialises the stacks of one tree: they are all the
        tenant's."""
        if dry_run:
            with self._database.read() as session:
                decide(_others(session, place))
            return
        with self._database.transaction() as session:
            _lock_tenant(session, place.tenant_id)
            decide(_others(session, place))
            self._put(session, place, action, holding)

    def settle(self, place: Place, action: str, holding: Holding) -> None:
        """Set this stack's row to ``holding`` without a decision (post-op: record what
        the stack holds now)."""
        with self._database.transaction() as session:
            _lock_tenant(session, place.tenant_id)
            self._put(session, place, action, holding)

    def release(self, stack_id: str, tenant_id: str) -> None:
        """Remove this stack's row; a row already gone is fine."""
        with self._database.transaction() as session:
            # NOTE: the lock is not needed to keep counts right (a release only lowers
            # usage), but it makes a release wait for a reservation of the same tenant
            # still in flight, such as a pre-op abandoned at its time limit.
            _lock_tenant(session, tenant_id)
            session.execute(sa.delete(USAGE).where(USAGE.c.stack_id == stack_id))

    def stack(self, stack_id: str) -> StackUsage | None:
        with self._database.read() as session:
            row = session.execute(
                sa.select(USAGE).where(USAGE.c.stack_id == stack_id)).one_or_none()
        if row is None:
            return None
        return StackUsage(stack_id=row.stack_id, tenant_id=row.tenant_id,
                          root_stack_id=row.root_stack_id, resources=row.resources,
                          pending_resources=row.pending_resources, action=row.action,
                          updated_at=_aware(row.updated_at))

    def tenant(self, tenant_id: str) -> Usage:
        with self._database.read() as session:
            return _usage(session, tenant_id, excluding=None)

    def tree(self, root_stack_id: str) -> int:
        """The resources a tree holds: its root's and every nested stack's."""
        with self._database.read() as session:
            return _tree_resources(session, root_stack_id, excluding=None)

    def _put(self, session: Session, place: Place, action: str, holding: Holding) -> None:
        values = {"tenant_id": place.tenant_id, "root_stack_id": place.root_stack_id,
                  "resources": holding.resources,
                  "pending_resources": holding.pending_resources, "action": action,
                  "updated_at": self._clock().astimezone(datetime.UTC)}
        # Update-then-insert is race free here: the tenant lock is held, and one stack
        # id always belongs to one tenant.
        # (Through the connection: its result is typed with the row count.)
        updated = session.connection().execute(
            sa.update(USAGE).where(USAGE.c.stack_id == place.stack_id).values(**values))
        if updated.rowcount == 0:
            session.execute(sa.insert(USAGE).values(stack_id=place.stack_id, **values))


def lock_keys(tenant_id: str) -> tuple[int, int]:
    """The two advisory-lock keys for a tenant: the namespace and a signed 32-bit hash
    of its id."""
    digest = hashlib.sha256(tenant_id.encode()).digest()
    return _LOCK_NAMESPACE, int.from_bytes(digest[:4], "big", signed=True)


def _lock_tenant(session: Session, tenant_id: str) -> None:
    if session.get_bind().dialect.name == "postgresql":
        namespace, key = lock_keys(tenant_id)
        # The casts pick the two-integer form whatever integer type the driver sends.
        session.execute(sa.select(sa.func.pg_advisory_xact_lock(
            sa.cast(namespace, sa.Integer), sa.cast(key, sa.Integer))))


_HELD = USAGE.c.resources + USAGE.c.pending_resources


def _usage(session: Session, tenant_id: str, *, excluding: str | None) -> Usage:
    # A nested stack's row counts its resources, not a stack: a tree is one stack.
    top_level = sa.case((USAGE.c.stack_id == USAGE.c.root_stack_id, 1), else_=0)
    query = sa.select(
        sa.func.coalesce(sa.func.sum(top_level), 0),
        sa.func.coalesce(sa.func.sum(_HELD), 0),
    ).where(USAGE.c.tenant_id == tenant_id)
    if excluding is not None:
        query = query.where(USAGE.c.stack_id != excluding)
    stacks, resources = session.execute(query).one()
    return Usage(stacks=int(stacks), resources=int(resources))


def _tree_resources(session: Session, root_stack_id: str, *, excluding: str | None) -> int:
    query = sa.select(sa.func.coalesce(sa.func.sum(_HELD), 0)).where(
        USAGE.c.root_stack_id == root_stack_id)
    if excluding is not None:
        query = query.where(USAGE.c.stack_id != excluding)
    return int(session.execute(query).scalar_one())


def _others(session: Session, place: Place) -> Others:
    return Others(tenant=_usage(session, place.tenant_id, excluding=place.stack_id),
                  tree_resources=_tree_resources(session, place.root_stack_id,
                                                 excluding=place.stack_id))


def _aware(value: datetime.datetime) -> datetime.datetime:
    # SQLite hands back the naive UTC value that was stored.
    return value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)
