"""The event sinks' outbox: one ``event_deliveries`` row per event and sink of its stack,
written with the event, claimed with a lease, settled once the sink has answered
(specs/event-sinks.rst).

:func:`add_deliveries` is called by ``engine.db.event_rows.write_pending`` with the rows
it inserts, in the same transaction, so an event and what it owes its sinks commit (or
roll back) together: a crash loses no notification. A stack's sinks are read from the
``stacks.event_sinks`` column of the stack object the session already holds (every
writer of events has loaded it), so a stack without sinks costs no statement.

A claim (:func:`claim_due`) takes due rows (``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so
concurrent engines take disjoint rows; SQLite has one writer), counts a try of each and
moves their ``next_attempt_at`` a lease ahead: a claimant that dies leaves them due again
when the lease runs out, and a row that has had its last try without a result is given
up. :func:`settle` writes what the sink said, guarded by the claim, so a claimant whose
lease ran out cannot undo a newer claim's result.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
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
    """A delivery a claim took: what to send where, and its tries (``attempts``), the
    claim's own counted."""

    id: int
    event_id: str
    stack_id: str
    target: str
    secret: str
    body: str
    attempts: int


def _due() -> Select[int]:
    # A stack's deliveries to one target go in id order (the order written, but for
    # PostgreSQL transactions that commit out of their ids' order: specs/event-sinks.rst):
    # one waits while an earlier one to the same target is held by a claim or waiting to
    # be tried again (not once it is given up).
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


@dataclasses.dataclass(frozen=True)
class Claim:
    """What :func:`claim_due` took: the deliveries it holds (each one's ``attempts``
    counting the try about to be made), those it gave up instead, and when it was taken
    (the lease runs from then)."""

    due: list[Due]
    given_up: list[Due]
    taken_at: Now


#: ``last_error`` of a delivery given up at a claim: its earlier claims wrote no result.
UNSETTLED = "no result was written for its last try (the claim's lease ran out)"


def claim_due(session: Session, clock: Callable[[], Now], limit: int,
              lease: datetime.timedelta, claim: str, max_attempts: int) -> Claim:
    """Up to ``limit`` due deliveries, oldest first, held by ``claim`` for ``lease`` from
    now (then due again unless settled). A try is counted here, not when its result is
    written: a delivery whose every claim ended without a result (its sender killed, or
    failing on it) is given up once it has had ``max_attempts``, not sent forever."""
    # The clock is read once the write lock is held (SQLite's BEGIN IMMEDIATE comes with
    # the connection; on PostgreSQL the claims' lock below), so a wait for it does not
    # eat into the lease.
    session.connection()
    if session.get_bind().dialect.name == "postgresql":
        # Claims one after the other (each a few milliseconds): one that ran beside
        # another would not see the rows that one is taking as held, and could send a
        # stack's later event beside its earlier one. SQLite's writers queue anyway.
        session.execute(_CLAIMS_IN_TURN)
    now = clock()
    ids = list(session.scalars(_CLAIMABLE, {"now": now, "limit": limit}))
    if not ids:
        return Claim([], [], now)
    spent = session.scalars(
        update(EventDelivery)
        .where(EventDelivery.id.in_(ids), EventDelivery.attempts >= max_attempts)
        .values(next_attempt_at=None, claim=None, given_up_at=now, last_error=UNSETTLED)
        .returning(EventDelivery), execution_options={"synchronize_session": False})
    given_up = _sorted(spent)
    rows = session.scalars(
        update(EventDelivery)
        .where(EventDelivery.id.in_(ids), EventDelivery.attempts < max_attempts)
        .values(next_attempt_at=now + lease, claim=claim, attempts=EventDelivery.attempts + 1)
        .returning(EventDelivery), execution_options={"synchronize_session": False})
    return Claim(_sorted(rows), given_up, now)


def _sorted(rows: Iterable[EventDelivery]) -> list[Due]:
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
    """Write the results of ``claim``'s deliveries (all of them, or one target's); a row
    another claim holds now (this one's lease ran out) is left to it."""
    mine = (EventDelivery.claim == claim,)
    delivered = [r.id for r in results if r.delivered]
    if delivered:
        session.execute(delete(EventDelivery).where(EventDelivery.id.in_(delivered), *mine))
    for result in results:
        if result.delivered:
            continue
        values: dict[str, Any] = {"claim": None, "next_attempt_at": result.next_attempt_at}
        if result.tried:
            values["last_error"] = result.error[:255]
            if result.next_attempt_at is None:
                values["given_up_at"] = now
        else:
            values["attempts"] = EventDelivery.attempts - 1  # the claim counted a try not made
        session.execute(update(EventDelivery).where(EventDelivery.id == result.id, *mine)
                        .values(**values), execution_options={"synchronize_session": False})


def pending_count(session: Session) -> int:
    """Deliveries not yet made nor given up: the outbox's depth."""
    return session.scalar(select(func.count()).select_from(EventDelivery)
                          .where(EventDelivery.next_attempt_at.is_not(None))) or 0
