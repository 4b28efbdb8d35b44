"""The placement plugin's table, ``lifecycle_placement_reservations``, and its queries.

One row per placed resource of a stack. ``state`` is ``held`` for the placement in effect
and ``pending`` for one an update's pre-op reserved: it becomes ``held`` when the update
succeeds and is deleted when it fails, so during an update a changed resource has both
rows, and both count (the old resource exists until the update replaces it).

Each row names the root of its stack's tree of nested stacks (the stack itself for a
top-level one) and the spread group its resource belongs to, so that a stack of the tree
spreads a group over racks together with the members the tree's other stacks hold.

Amounts are a JSON object (unit -> whole number) because units are the operator's to
name. Usage is summed in Python: the table holds one row per placed resource in the whole
deployment, which is small.

The migration ``0004_lifecycle_placement`` creates this table and ``0014_lifecycle_trees``
adds the tree's columns; every constraint is named here so the result can be compared.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import (
    JSON,
    CheckConstraint,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    UniqueConstraint,
    delete,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB

HELD, PENDING = "held", "pending"
#: The PostgreSQL advisory lock that serialises every reservation. Placement is global
#: (any stack may take any host), so it is one fixed key for the whole inventory: "kiln"
#: in the high word, "plac" in the low one.
ADVISORY_LOCK_KEY = 0x6B696C6E_706C6163

METADATA = MetaData()

RESERVATIONS = Table(
    "lifecycle_placement_reservations", METADATA,
    Column("id", Integer, autoincrement=True, nullable=False),
    Column("stack_id", String(36), nullable=False),
    Column("resource_name", String(255), nullable=False),
    Column("state", String(16), nullable=False),
    Column("action", String(16), nullable=False),
    Column("tenant_id", String(36), nullable=False),
    Column("resource_type", String(255), nullable=False),
    Column("rack", String(255), nullable=False),
    Column("host", String(255), nullable=False),
    Column("amounts", JSON().with_variant(JSONB(), "postgresql"), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("root_stack_id", String(36), nullable=False),
    Column("spread_group", String(255), nullable=True),
    Column("spread_racks", Integer, nullable=True),
    PrimaryKeyConstraint("id", name="pk_lifecycle_placement_reservations"),
    # Its leading column serves the lookups by stack, so no separate stack_id index.
    UniqueConstraint("stack_id", "resource_name", "state",
                     name="uq_lifecycle_placement_reservations_stack_resource_state"),
    CheckConstraint("state IN ('held', 'pending')",
                    name="ck_lifecycle_placement_reservations_state"),
    Index("ix_lifecycle_placement_reservations_root_stack_id", "root_stack_id"),
)


@dataclasses.dataclass(frozen=True)
class Reservation:
    stack_id: str
    resource_name: str
    state: str
    action: str
    tenant_id: str
    resource_type: str
    rack: str
    host: str
    amounts: Mapping[str, int]
    root_stack_id: str = ""  # "" for the stack itself (a top-level stack)
    spread_group: str | None = None
    spread_racks: int | None = None

    def __post_init__(self) -> None:
        if not self.root_stack_id:
            object.__setattr__(self, "root_stack_id", self.stack_id)


def lock(session: Any) -> None:
    """Serialise reservations until the transaction ends. SQLite needs nothing: Kiln's
    writing transactions there start with ``BEGIN IMMEDIATE``, one writer at a time."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                        {"key": ADVISORY_LOCK_KEY})


def usage(session: Any) -> dict[tuple[str, str], dict[str, int]]:
    """What every reservation takes, summed per (rack, host)."""
    used: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    rows = session.execute(select(RESERVATIONS.c.rack, RESERVATIONS.c.host,
                                  RESERVATIONS.c.amounts))
    for rack, host, amounts in rows:
        totals = used[(rack, host)]
        for unit, amount in (amounts or {}).items():
            totals[unit] = totals.get(unit, 0) + int(amount)
    return dict(used)


def of_stack(session: Any, stack_id: str, resource_name: str | None = None
             ) -> list[Reservation]:
    """The stack's rows (one resource's, given its name), by resource and state."""
    query = select(RESERVATIONS).where(RESERVATIONS.c.stack_id == stack_id)
    if resource_name is not None:
        query = query.where(RESERVATIONS.c.resource_name == resource_name)
    rows = session.execute(query.order_by(RESERVATIONS.c.resource_name, RESERVATIONS.c.state))
    return [_reservation(row) for row in rows]


def tree_groups(session: Any, root_stack_id: str, excluding: str) -> list[Reservation]:
    """The reservations of the spread groups' members that the stacks of a tree other
    than ``excluding`` hold, by stack and resource; a resource being updated counts on
    both racks (the old one exists until the update replaces it)."""
    rows = session.execute(select(RESERVATIONS).where(
        RESERVATIONS.c.root_stack_id == root_stack_id,
        RESERVATIONS.c.stack_id != excluding,
        RESERVATIONS.c.spread_group.is_not(None)).order_by(
        RESERVATIONS.c.stack_id, RESERVATIONS.c.resource_name, RESERVATIONS.c.state))
    return [_reservation(row) for row in rows]


def _reservation(row: Any) -> Reservation:
    return Reservation(stack_id=row.stack_id, resource_name=row.resource_name,
                       state=row.state, action=row.action, tenant_id=row.tenant_id,
                       resource_type=row.resource_type, rack=row.rack, host=row.host,
                       amounts=dict(row.amounts or {}), root_stack_id=row.root_stack_id,
                       spread_group=row.spread_group, spread_racks=row.spread_racks)


def insert(session: Any, reservations: Iterable[Reservation],
           now: datetime.datetime) -> None:
    values = [{**dataclasses.asdict(reservation), "amounts": dict(reservation.amounts),
               "created_at": now.astimezone(datetime.UTC)}
              for reservation in reservations]
    if values:
        session.execute(RESERVATIONS.insert(), values)


def release_stack(session: Any, stack_id: str, keep: Iterable[str] = ()) -> None:
    """Every reservation of the stack, held and pending, but those of ``keep``."""
    session.execute(delete(RESERVATIONS).where(
        RESERVATIONS.c.stack_id == stack_id, RESERVATIONS.c.resource_name.not_in(list(keep))))


def release_pending(session: Any, stack_id: str, action: str | None = None) -> None:
    """The stack's pending reservations (of ``action`` only, when given)."""
    query = delete(RESERVATIONS).where(RESERVATIONS.c.stack_id == stack_id,
                                       RESERVATIONS.c.state == PENDING)
    if action is not None:
        query = query.where(RESERVATIONS.c.action == action)
    session.execute(query)


def commit_pending(session: Any, stack_id: str, action: str, keep: Iterable[str]) -> None:
    """An update succeeded: drop the held rows it replaced (a pending row of the same
    name) or removed (not in ``keep``), then make its pending rows held."""
    pending = select(RESERVATIONS.c.resource_name).where(
        RESERVATIONS.c.stack_id == stack_id, RESERVATIONS.c.state == PENDING,
        RESERVATIONS.c.action == action)
    session.execute(delete(RESERVATIONS).where(
        RESERVATIONS.c.stack_id == stack_id, RESERVATIONS.c.state == HELD,
        RESERVATIONS.c.resource_name.in_(pending)
        | RESERVATIONS.c.resource_name.not_in(list(keep))))
    session.execute(update(RESERVATIONS).where(
        RESERVATIONS.c.stack_id == stack_id, RESERVATIONS.c.state == PENDING,
        RESERVATIONS.c.action == action).values(state=HELD))


def label_groups(session: Any, stack_id: str,
                 groups: Mapping[str, tuple[str | None, int | None]]) -> None:
    """Set the spread group and rack count of the stack's held rows, by resource."""
    for name, (group, racks) in groups.items():
        session.execute(update(RESERVATIONS).where(
            RESERVATIONS.c.stack_id == stack_id, RESERVATIONS.c.resource_name == name,
            RESERVATIONS.c.state == HELD).values(spread_group=group, spread_racks=racks))
