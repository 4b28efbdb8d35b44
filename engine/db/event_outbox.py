"""The event sinks' outbox: one ``event_deliveries`` row per event and sink of its stack,
written with the event, claimed with a lease, settled once the sink has answered
(specs/event-sinks.rst).

:func:`add_deliveries` is called by ``engine.db.event_rows.write_pending`` with the rows
it inserts, in the same transaction, so an event and what it owes its sinks commit (or
roll back) together: a crash loses no notification. A stack's sinks are read from the
``stacks.event_sinks`` column of the stack object the session already holds (every
writer of events has loaded it), so a stack without sinks costs no statement.

A claim (:func:`claim_due`) takes due rows (``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so
concurrent engines take disjoint rows; SQLite has one writer) and moves their
``next_attempt_at`` a lease ahead: a claimant that dies leaves them due again when the
lease runs out. :func:`settle` writes what the sink said, guarded by the claim, so a
claimant whose lease ran out cannot undo a newer claim's result.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from sqlalchemy import Select, bindparam, delete, func, insert, select, text, update
from sqlalchemy.orm import Session, aliased
from sqlalchemy.orm.util import identity_key

from engine.db.base import table
from engine.db.models import EventDelivery, Stack
from engine.template.event_sinks import WEBHOOK

Now = datetime.datetime
#: The body's ``type`` and ``version``: Heat's event notification (``Event.as_dict``).
EVENT_TYPE, EVENT_VERSION = "os.heat.event", "0.1"


def add_deliveries(session: Session, events: Sequence[Mapping[str, Any]]) -> None:
    """The deliveries owed for ``events`` (rows as ``event_rows`` inserts them): one per
    event and webhook sink of its stack, due at once."""
    stacks = _stacks_with_sinks(session, {event["stack_id"] for event in events})
    if not stacks:
        return
    rows: list[dict[str, Any]] = []
    for event in events:
        stack = stacks.get(event["stack_id"])
        if stack is None:
            continue
        body = event_body(event, stack.name, stack.tenant_id)
        rows.extend({"event_id": event["id"], "stack_id": event["stack_id"],
                     "target": sink["target"], "secret": sink["secret"], "body": body,
                     "attempts": 0, "next_attempt_at": event["created_at"], "claim": None,
                     "last_error": "", "created_at": event["created_at"]}
                    for sink in stack.sinks)
    session.execute(_INSERT, rows)


_INSERT = insert(table(EventDelivery))


@dataclasses.dataclass(frozen=True)
class _StackSinks:
    name: str
    tenant_id: str
    sinks: list[Mapping[str, Any]]


def _stacks_with_sinks(session: Session, stack_ids: Collection[str]
                       ) -> dict[str, _StackSinks]:
    found: dict[str, _StackSinks] = {}
    missing = []
    for stack_id in stack_ids:
        stack = session.identity_map.get(identity_key(Stack, stack_id))
        if stack is None:
            missing.append(stack_id)
        else:
            _keep(found, stack_id, stack.name, stack.tenant_id, stack.event_sinks)
    if missing:  # an event written without its stack loaded: not done today, but correct
        for row in session.execute(select(Stack.id, Stack.name, Stack.tenant_id,
                                          Stack.event_sinks).where(Stack.id.in_(missing))):
            _keep(found, *row)
    return found


def _keep(found: dict[str, _StackSinks], stack_id: str, name: str, tenant_id: str,
          sinks: Any) -> None:
    # Only webhook sinks: an environment stored before they were checked may name any.
    webhooks = [sink for sink in sinks or () if isinstance(sink, Mapping)
                and sink.get("type") == WEBHOOK and isinstance(sink.get("target"), str)
                and isinstance(sink.get("secret"), str)]
    if webhooks:
        found[stack_id] = _StackSinks(name, tenant_id, webhooks)


def event_body(event: Mapping[str, Any], stack_name: str, tenant_id: str) -> str:
    """The JSON a sink receives for ``event``: Heat's event notification (the body its
    Zaqar sink posts, ``heat/engine/event.py`` ``as_dict``), with the stack's name and
    tenant beside its id, and a lifecycle plugin call's record (Kiln's, as in the event
    API). Compact and with sorted keys: the signature covers these exact bytes."""
    payload: dict[str, Any] = {
        "resource_name": event["resource_name"],
        "physical_resource_id": event["physical_resource_id"],
        "stack_id": event["stack_id"], "stack_name": stack_name, "tenant_id": tenant_id,
        "resource_action": event["action"], "resource_status": event["status"],
        "resource_status_reason": event["reason"], "resource_type": event["resource_type"],
        "resource_properties": event.get("properties") or {}, "version": EVENT_VERSION}
    if event.get("call") is not None:
        payload["lifecycle"] = event["call"]
    return json.dumps({"id": event["id"], "type": EVENT_TYPE, "version": EVENT_VERSION,
                       "timestamp": event["created_at"].isoformat(), "payload": payload},
                      separators=(",", ":"), sort_keys=True, default=str)


# --- claiming and settling ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Due:
    """A delivery a claim took: what to send where, and how many tries it has had."""

    id: int
    event_id: str
    stack_id: str
    target: str
    secret: str
    body: str
    attempts: int


def _due() -> Select[int]:
    # A stack's deliveries to one target go in the order they were written: one waits
    # while an earlier one to the same target is held by a claim or waiting to be tried
    # again (not once it is given up).
    earlier = aliased(EventDelivery)
    held_up = (select(earlier.id)
               .where(earlier.stack_id == EventDelivery.stack_id,
                      earlier.target == EventDelivery.target,
                      earlier.id < EventDelivery.id,
                      earlier.next_attempt_at > bindparam("now")))
    return (select(EventDelivery.id)
            .where(EventDelivery.next_attempt_at <= bindparam("now"), ~held_up.exists())
            .order_by(EventDelivery.id).limit(bindparam("limit")))


# Built once: every engine runs them at every poll.
_DUE = _due()
_CLAIMABLE = _DUE.with_for_update(skip_locked=True, of=EventDelivery)
# A transaction-scoped advisory lock; its keys are "kiln" and "outb" in ASCII.
_CLAIMS_IN_TURN = text("SELECT pg_advisory_xact_lock(1802071150, 1869968482)")


def any_due(session: Session, now: Now) -> bool:
    """Whether some delivery could be claimed: a read, so an idle poll takes no write
    lock."""
    return session.scalar(_DUE, {"now": now, "limit": 1}) is not None


def claim_due(session: Session, now: Now, limit: int, lease_until: Now, claim: str
              ) -> list[Due]:
    """Up to ``limit`` due deliveries, oldest first, held by ``claim`` until
    ``lease_until`` (when they are due again unless settled)."""
    if session.get_bind().dialect.name == "postgresql":
        # Claims one after the other (each a few milliseconds): one that ran beside
        # another would not see the rows that one is taking as held, and could send a
        # stack's later event beside its earlier one. SQLite's writers queue anyway.
        session.execute(_CLAIMS_IN_TURN)
    ids = list(session.scalars(_CLAIMABLE, {"now": now, "limit": limit}))
    if not ids:
        return []
    rows = session.scalars(
        update(EventDelivery).where(EventDelivery.id.in_(ids))
        .values(next_attempt_at=lease_until, claim=claim)
        .returning(EventDelivery), execution_options={"synchronize_session": False})
    return sorted((Due(row.id, row.event_id, row.stack_id, row.target, row.secret, row.body,
                       row.attempts) for row in rows), key=lambda due: due.id)


@dataclasses.dataclass(frozen=True)
class Result:
    """What became of one claimed delivery: ``delivered``; else tried and failed with
    ``error`` (``tried``), due again at ``next_attempt_at`` or, when that is None, given
    up; or not tried (the claim ran short of time, or its target failed just before),
    due again at ``next_attempt_at``."""

    id: int
    delivered: bool = False
    tried: bool = False
    error: str = ""
    next_attempt_at: Now | None = None


def settle(session: Session, claim: str, results: Sequence[Result], now: Now) -> None:
    """Write the results of ``claim``'s deliveries; a row another claim holds now (this
    one's lease ran out) is left to it."""
    mine = (EventDelivery.claim == claim,)
    delivered = [r.id for r in results if r.delivered]
    if delivered:
        session.execute(delete(EventDelivery).where(EventDelivery.id.in_(delivered), *mine))
    for result in results:
        if result.delivered:
            continue
        values: dict[str, Any] = {"claim": None, "next_attempt_at": result.next_attempt_at}
        if result.tried:
            values.update(attempts=EventDelivery.attempts + 1, last_error=result.error[:255])
            if result.next_attempt_at is None:
                values["given_up_at"] = now
        session.execute(update(EventDelivery).where(EventDelivery.id == result.id, *mine)
                        .values(**values), execution_options={"synchronize_session": False})


def pending_count(session: Session) -> int:
    """Deliveries not yet made nor given up: the outbox's depth."""
    return session.scalar(select(func.count()).select_from(EventDelivery)
                          .where(EventDelivery.next_attempt_at.is_not(None))) or 0
