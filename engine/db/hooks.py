"""Breakpoints steps reached (``resource_hooks``): set while a step waits at one, cleared
by a signal's ``unset_hook``.

A hook is a row of its own, never part of ``resources`` (the API clears it while a worker
may be writing the resource row), keyed by the step that reached it, so a step taken up
again knows which of its hooks it has passed. The step's worker and a clearing request
each lock the hook rows before they decide (the worker whether to wait again, the request
whether there is a hook to clear), so one sees what the other did: a clear is never lost
to a step parking itself again at the same moment.
"""

from __future__ import annotations

import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from engine.db.models import ResourceHook, Step
from engine.vocabulary import StepState

Now = datetime.datetime


def reached(session: Session, step_id: int) -> dict[str, bool]:
    """The hooks the step reached, each with whether it was cleared; the rows locked
    until the transaction ends."""
    rows = session.execute(select(ResourceHook.hook, ResourceHook.cleared_at)
                           .where(ResourceHook.step_id == step_id).with_for_update())
    return {hook: cleared_at is not None for hook, cleared_at in rows}


def reach(session: Session, step_id: int, resource_id: int, hook: str, now: Now) -> None:
    session.add(ResourceHook(step_id=step_id, resource_id=resource_id, hook=hook,
                             reached_at=now))


def pending(session: Session, resource_id: int, hook: str) -> ResourceHook | None:
    """The resource's hook ``hook`` if it is set (reached, not cleared, and its step
    still open: an operation that ended, however, took its waits with it), locked."""
    found: ResourceHook | None = session.scalars(
        select(ResourceHook)
        .join(Step, Step.id == ResourceHook.step_id)
        .where(ResourceHook.resource_id == resource_id, ResourceHook.hook == hook,
               ResourceHook.cleared_at.is_(None), Step.state == StepState.RUNNING)
        .order_by(ResourceHook.id).with_for_update(of=ResourceHook)).first()
    return found


def end_waits(session: Session, operation_id: str) -> set[str]:
    """Forget the hooks the operation's steps wait at (the operation is ending: a
    time-out, a cancel); the names of their resources."""
    rows = session.execute(
        select(ResourceHook.id, Step.resource_name)
        .join(Step, Step.id == ResourceHook.step_id)
        .where(Step.operation_id == operation_id, ResourceHook.cleared_at.is_(None))).all()
    if rows:
        session.execute(delete(ResourceHook).where(ResourceHook.id.in_([r[0] for r in rows])),
                        execution_options={"synchronize_session": False})
    return {name for _, name in rows}
