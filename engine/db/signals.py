"""Signals resources took, and the tokens that may send them.

A signal is an insert into ``resource_signals``, never an update of ``resources``: workers
own the resource rows (they rewrite ``data`` wholesale after each call of the plugin), so
an API write there could be lost, or could wipe what a worker wrote. A signal is keyed by
the resource row and its generation, so a replacement starts with none; both tables go
with the resource row (``ON DELETE CASCADE``).
"""

from __future__ import annotations

import datetime
import hashlib
import uuid
from typing import Any

from sqlalchemy import delete, or_, select, tuple_
from sqlalchemy.orm import Session

from engine.db.models import Resource, ResourceSignal, SignalToken, Stack
from engine.vocabulary import Action, Status

Now = datetime.datetime

# The states in which Heat's ``resource_by_refid`` finds a resource (plus Kiln's ADOPT):
# a wait condition does not wait on a handle that failed, is suspended or is deleted.
REFERABLE_STATES = (
    (Action.INIT, Status.COMPLETE), (Action.CREATE, Status.IN_PROGRESS),
    (Action.CREATE, Status.COMPLETE), (Action.RESUME, Status.IN_PROGRESS),
    (Action.RESUME, Status.COMPLETE), (Action.UPDATE, Status.IN_PROGRESS),
    (Action.UPDATE, Status.COMPLETE), (Action.CHECK, Status.COMPLETE),
    (Action.ADOPT, Status.COMPLETE),
)


# --- signals ------------------------------------------------------------------------------


def lock_resource(session: Session, row: Resource) -> None:
    """Lock the resource row until the transaction ends and read it again, so that signals
    to one resource are numbered one at a time, against its current generation
    (PostgreSQL; SQLite's writers are serial already). The row is only locked, never
    written: a worker writing it waits for a moment and loses nothing."""
    session.refresh(row, with_for_update=True)


def list_signals(session: Session, resource_id: int, generation: int) -> list[Any]:
    """What each signal stored, oldest first."""
    return [details for _, details in list_signals_after(session, resource_id, generation)]


def list_signals_after(session: Session, resource_id: int, generation: int,
                       after: int | None = None) -> list[tuple[int, Any]]:
    """(id, what it stored) of each signal, oldest first; only those after the signal
    ``after`` when given. A resource's signal ids grow in the order their transactions
    commit: each is inserted under the resource row's lock (:func:`lock_resource`)."""
    query = (select(ResourceSignal.id, ResourceSignal.details)
             .where(ResourceSignal.resource_id == resource_id,
                    ResourceSignal.generation == generation))
    if after is not None:
        query = query.where(ResourceSignal.id > after)
    return [(row.id, row.details) for row in session.execute(query.order_by(ResourceSignal.id))]


def add_signal(session: Session, resource_id: int, generation: int, details: Any,
               now: Now) -> None:
    session.add(ResourceSignal(resource_id=resource_id, generation=generation,
                               details=details, created_at=now))


def find_signalled_resource(session: Session, stack_id: str, reference_id: str
                            ) -> Resource | None:
    """The stack's resource whose physical id, else whose name, is ``reference_id``, among
    those in a :data:`REFERABLE_STATES` state."""
    rows = session.scalars(
        select(Resource)
        .where(Resource.stack_id == stack_id,
               or_(Resource.physical_id == reference_id, Resource.name == reference_id),
               tuple_(Resource.action, Resource.status).in_(REFERABLE_STATES))
        .order_by(Resource.name)).all()
    by_id = [row for row in rows if row.physical_id == reference_id]
    found = by_id or list(rows)
    return found[0] if found else None


# --- signal tokens ------------------------------------------------------------------------


def _hash(secret: str) -> str:
    """sha256 hex, as ``tokens.token_hash`` (why not a slow hash: tenants-and-tokens.rst)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def add_signal_token(session: Session, resource_id: int, generation: int, secret: str,
                     now: Now) -> SignalToken:
    """Store a token for the resource; only the secret's hash is kept."""
    token = SignalToken(id=str(uuid.uuid4()), resource_id=resource_id, generation=generation,
                        token_hash=_hash(secret), created_at=now)
    session.add(token)
    session.flush()
    return token


def delete_signal_tokens(session: Session, resource_id: int, generation: int) -> None:
    session.execute(delete(SignalToken).where(SignalToken.resource_id == resource_id,
                                              SignalToken.generation == generation))


def live_generation(row: Resource, generation: int) -> bool:
    """Whether a token or signal of ``generation`` still belongs to a physical resource
    of the row: its current one, or the one an update replaced until the replaced one's
    cleanup ends (a software deployment's ``DELETE`` run waits for its agent's signal
    then)."""
    replaced = row.replaced
    return generation == row.generation or (
        replaced is not None and generation == replaced.get("generation", 0))


def find_signal_token(session: Session, secret: str, *, tenant_id: str, stack_name: str,
                      stack_id: str, resource_name: str) -> str | None:
    """The id of the token with this secret if it was issued for this resource of this live
    stack, in a :func:`live_generation` of it (the tokens of a replaced resource whose
    cleanup has ended no longer count)."""
    found = session.execute(
        select(SignalToken.id, SignalToken.generation, Resource)
        .join(Resource, Resource.id == SignalToken.resource_id)
        .join(Stack, Stack.id == Resource.stack_id)
        .where(SignalToken.token_hash == _hash(secret),
               Resource.name == resource_name, Stack.id == stack_id,
               Stack.name == stack_name, Stack.tenant_id == tenant_id,
               Stack.deleted_at.is_(None))).first()
    if found is None or not live_generation(found[2], found[1]):
        return None
    token_id: str = found[0]
    return token_id


def token_generation(session: Session, token_id: str) -> int | None:
    """The generation of the resource the token was issued for; None once revoked."""
    token = session.get(SignalToken, token_id)
    return token.generation if token is not None else None
