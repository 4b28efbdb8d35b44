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
from collections.abc import Collection
from typing import NamedTuple

from sqlalchemy import and_, case, delete, func, select
from sqlalchemy.orm import Session

from engine.db.models import Resource, ResourceHook, Step
from engine.vocabulary import Hook, Status, StepState

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


class Waiting(NamedTuple):
    """An open step waiting at a breakpoint: its resource, and whether its action is
    done (it waits at a post hook)."""

    step_id: int
    resource_name: str
    done: bool


_POST = (Hook.POST_CREATE, Hook.POST_UPDATE, Hook.POST_DELETE)


def waiting(session: Session, operation_id: str, *, unheld: bool = False) -> list[Waiting]:
    """The operation's open steps that wait at a breakpoint: those that reached a hook,
    cleared or not, whose resource is not mid-action (a pre hook's action not begun, a
    post hook's done). A clear does not end the wait: the step is only woken, and stays
    so until a worker takes it up. ``unheld``: only those no worker holds (parked, or
    woken and not claimed yet)."""
    query = (select(Step.id, Step.resource_name,
                    func.max(case((ResourceHook.hook.in_(_POST), 1), else_=0)))
             .join(ResourceHook, ResourceHook.step_id == Step.id)
             .join(Resource, and_(Resource.stack_id == Step.stack_id,
                                  Resource.name == Step.resource_name))
             .where(Step.operation_id == operation_id, Step.state == StepState.RUNNING,
                    Resource.status != Status.IN_PROGRESS)
             .group_by(Step.id, Step.resource_name))
    if unheld:
        query = query.where(Step.lease_owner.is_(None))
    return [Waiting(step_id, name, bool(done))
            for step_id, name, done in session.execute(query)]


def forget(session: Session, step_ids: Collection[int]) -> None:
    """Delete the hooks the steps reached (their waits ended)."""
    if step_ids:
        session.execute(delete(ResourceHook).where(ResourceHook.step_id.in_(list(step_ids))),
                        execution_options={"synchronize_session": False})


def end_waits(session: Session, operation_id: str) -> set[str]:
    """Forget the hooks of the operation's open steps (the operation is ending: a
    time-out, a cancel, a phase given up); the names of the resources that were waiting
    (:func:`waiting`)."""
    names = {wait.resource_name for wait in waiting(session, operation_id)}
    forget(session, list(session.scalars(select(Step.id).join(
        ResourceHook, ResourceHook.step_id == Step.id).where(
        Step.operation_id == operation_id, Step.state == StepState.RUNNING))))
    return names
