"""Step-graph bookkeeping: write a plan as rows, finish or fail a step and release what
waited on it, and hand the operation to its finisher when no step is left open.

Every change is guarded by the lease (``lease_owner`` and state in the WHERE clause), so
a worker that lost its lease cannot overwrite what another worker has since done.
"""

from __future__ import annotations

import datetime
from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    BindParameter,
    CursorResult,
    Update,
    and_,
    bindparam,
    case,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.orm import Session, defer

from engine.db import hooks
from engine.db.base import table
from engine.db.models import Operation, Step, StepDependency
from engine.db.wakeup import work_written
from engine.vocabulary import OPEN_STEP_STATES, OperationState, StepState

Now = datetime.datetime


StepKey = tuple[str, str]  # (resource name, step action)


class Closing(NamedTuple):
    """What closing steps did: the ids closed (still ours when closed), and the ids of
    the steps their closes made READY (for the closer to claim in the same transaction,
    ``leases.claim_ready``)."""

    closed: set[int]
    ready: set[int]

# Step UPDATEs skip the ORM's syncing of the Step objects in the session: a round holds
# a thousand of them, and matching each statement against every one made closing a
# round quadratic. Nothing reads a closed step's object again in its transaction.
UNSYNCED = {"synchronize_session": False}


def add_steps(session: Session, operation: Operation,
              requires: Mapping[StepKey, Sequence[StepKey]],
              types: Mapping[str, str] | None = None) -> None:
    """Write each step with its prerequisites; ready ones start READY. ``types`` gives
    each resource's type, by name. The operation's state is its caller's
    (``transitions.start_steps``)."""
    types = types or {}
    if requires:
        # Core executemany INSERTs, not ORM objects: the ORM inserts a row whose key it
        # reads back one statement at a time (on SQLite), and keeps every object in the
        # session to the commit; a plan of 10,000 steps was 10,000 statements and as
        # many objects. The edges need the keys: one read of the operation's steps.
        session.execute(insert(table(Step)), [
            {"operation_id": operation.id, "stack_id": operation.stack_id,
             "resource_name": name, "action": action, "prerequisites_left": len(deps),
             "state": StepState.READY if not deps else StepState.WAITING,
             "resource_type": types.get(name)}
            for (name, action), deps in requires.items()])
        if any(requires.values()):
            ids = _step_ids(session, operation.id)
            session.execute(insert(table(StepDependency)), [
                {"step_id": ids[key], "prerequisite_id": ids[dep]}
                for key, deps in requires.items() for dep in deps])
    operation.open_steps = len(requires)
    work_written(session)


def _step_ids(session: Session, operation_id: str) -> dict[StepKey, int]:
    """The operation's steps' ids, by (resource name, action)."""
    return {(name, action): step_id for step_id, name, action in session.execute(
        select(Step.id, Step.resource_name, Step.action)
        .where(Step.operation_id == operation_id))}


def load_steps(session: Session, step_ids: Collection[int]) -> list[Step]:
    return list(session.scalars(select(Step).where(Step.id.in_(list(step_ids)))))


class Progress(NamedTuple):
    """A held step's progress to save: its token, and when to look again. ``started``:
    its action has just started (a new token from ``handle_<action>``), which is
    progress, so its count of failed tries starts again; a look that found it still
    waiting is not (a step that fails on its second look would otherwise be retried for
    ever)."""

    step_id: int
    token: object
    next_poll_at: Now
    started: bool


def save_progress_many(session: Session, owner: str, progress: Sequence[Progress]
                       ) -> set[int]:
    """Store the steps' progress, in three statements whatever their number:
    the ids still ours (their rows locked, so no claim moves them meanwhile), then an
    executemany for each kind of save. The ids saved; the others were not touched."""
    if not progress:
        return set()
    ours = set(session.scalars(
        select(Step.id).where(Step.id.in_([p.step_id for p in progress]),
                              Step.lease_owner == owner, Step.state == StepState.RUNNING)
        .with_for_update()))
    for started in (True, False):
        # ORM bulk UPDATE by primary key: one executemany for the rows of one shape.
        rows = [{"id": p.step_id, "token": p.token, "started": True,
                 "next_poll_at": p.next_poll_at, **({"failures": 0} if started else {})}
                for p in progress if p.started == started and p.step_id in ours]
        if rows:
            session.execute(update(Step), rows)
    return ours


def complete_step(session: Session, step: Step, owner: str, now: Now) -> bool:
    """Mark ``step`` done and make ready the steps waiting only on it."""
    operation = _lock_operation(session, step.operation_id)
    if not _close(session, step, owner, now, StepState.COMPLETE, None):
        return False
    operation.open_steps -= 1
    _release(session, [step.id])
    _finish_operation_if_done(operation)
    return True


def complete_steps(session: Session, operation_id: str, step_ids: Collection[int],
                   owner: str, now: Now, *, wake: bool = True) -> Closing:
    """:func:`complete_step` for many steps of one operation in a few statements: the
    ids among ``step_ids`` still ours that are now closed, and those made ready.
    ``wake``: wake the workers for the steps made ready; a closer that claims them
    itself wakes them only for those it leaves (``wakeup.work_written``)."""
    operation = _lock_operation(session, operation_id)
    closed = set(session.scalars(_COMPLETE, {"ids": list(step_ids), "owner": owner,
                                             "now": now}))
    if not closed:
        return Closing(closed, set())
    operation.open_steps -= len(closed)
    ready = _release(session, closed, wake=wake)
    _finish_operation_if_done(operation)
    return Closing(closed, ready)


class Failed(NamedTuple):
    """A step failed (:func:`fail_step`): the resources whose waits at a breakpoint
    ended with it."""

    unwaited: list[str]


def fail_step(session: Session, step: Step, owner: str, now: Now, reason: str
              ) -> Failed | None:
    """Mark ``step`` failed (None if it is no longer ours): steps not yet started will
    never run, and those parked at a breakpoint wait no more, as Heat ends a wait when a
    sibling fails. A step past its action (at a post hook) is closed as complete, one
    before it cancelled; their resources keep their state."""
    operation = _lock_operation(session, step.operation_id)
    if not _close(session, step, owner, now, StepState.FAILED, reason):
        return None
    if operation.failure_reason is None:
        operation.failure_reason = reason
    cancelled = _rows_updated(session, update(Step)
                              .where(Step.operation_id == step.operation_id,
                                     Step.state.in_((StepState.WAITING, StepState.READY)))
                              .values(state=StepState.CANCELLED, finished_at=now))
    unwaited = _end_parked_waits(session, step.operation_id, now)
    operation.open_steps -= 1 + cancelled + len(unwaited)
    _finish_operation_if_done(operation)
    return Failed(unwaited)


def _end_parked_waits(session: Session, operation_id: str, now: Now) -> list[str]:
    """Close the operation's steps that wait at a breakpoint and that no worker holds
    (a step a worker claimed is left to it, as any running step), their hooks
    forgotten; their resources' names."""
    waits = hooks.waiting(session, operation_id, unheld=True)
    closed: dict[int, str] = {}
    for done in (True, False):
        ids = [wait.step_id for wait in waits if wait.done == done]
        if ids:
            closed.update(session.execute(
                update(Step)
                .where(Step.id.in_(ids), Step.lease_owner.is_(None),
                       Step.state == StepState.RUNNING)
                .values(state=StepState.COMPLETE if done else StepState.CANCELLED,
                        finished_at=now, lease_expires_at=None)
                .returning(Step.id, Step.resource_name), execution_options=UNSYNCED).all())
    hooks.forget(session, list(closed))
    return list(closed.values())


def cancel_open_steps(session: Session, operation: Operation, now: Now) -> list[str]:
    """Close every open step (a timeout); returns the resources that were mid-action."""
    running = list(session.scalars(select(Step.resource_name).where(
        Step.operation_id == operation.id, Step.state == StepState.RUNNING)))
    session.execute(update(Step).where(Step.operation_id == operation.id,
                                       Step.state.in_(OPEN_STEP_STATES))
                    .values(state=StepState.CANCELLED, lease_owner=None, finished_at=now),
                    execution_options=UNSYNCED)
    operation.open_steps = 0
    return running


def _lock_operation(session: Session, operation_id: str) -> Operation:
    """Serialise the closing of an operation's steps.

    Without it two workers closing the last two steps at once on PostgreSQL each still
    see the other's step open, and neither hands the operation to its finisher. Taking
    the operation row first, before any step row, also fixes one lock order for all.
    Its JSON columns are left unread: an update's payload holds both templates, and
    parsing it on every close made each round cost O(size of the stack).
    """
    operation = session.scalars(_LOCK_OPERATION, {"id": operation_id},
                                execution_options={"populate_existing": True}).first()
    assert operation is not None, f"operation {operation_id} vanished under its steps"
    return operation


# Built once (a close a chain's link).
_LOCK_OPERATION = (select(Operation).where(Operation.id == bindparam("id"))
                   .options(defer(Operation.payload), defer(Operation.context),
                            defer(Operation.lifecycle))
                   .with_for_update())


def _close(session: Session, step: Step, owner: str, now: Now, state: str,
           reason: str | None) -> bool:
    return _rows_updated(session, (
        update(Step)
        .where(Step.id == step.id, Step.lease_owner == owner, Step.state == StepState.RUNNING)
        .values(state=state, failure_reason=reason, finished_at=now, lease_owner=None,
                lease_expires_at=None)
    )) == 1


def _rows_updated(session: Session, statement: Update) -> int:
    """Run an UPDATE and return the number of rows it matched.

    ``Session.execute`` is typed as returning a ``Result``; for an UPDATE without
    RETURNING it is a ``CursorResult``, which carries ``rowcount``.
    """
    return cast("CursorResult[Any]",
                session.execute(statement, execution_options=UNSYNCED)).rowcount


def _release(session: Session, closed: Collection[int], *, wake: bool = True) -> set[int]:
    """Count the ``closed`` steps off the prerequisites of the steps waiting on them,
    and make ready those with none left, in one statement (a SET reads the row as it
    was, so both columns see the same count); their ids. ``wake``: wake the workers
    for them, as other engines may be idle."""
    rows = session.execute(_RELEASE, {"closed": list(closed)})
    ready = {step_id for step_id, state in rows if state == StepState.READY}
    if ready and wake:
        work_written(session)
    return ready


def _released() -> Update:
    steps, edges = table(Step).c, table(StepDependency).c
    closed: BindParameter[list[int]] = bindparam("closed", expanding=True)
    released = (select(func.count()).select_from(table(StepDependency))
                .where(edges.step_id == steps.id, edges.prerequisite_id.in_(closed))
                .scalar_subquery())
    left = steps.prerequisites_left - released
    return (update(table(Step))
            .where(steps.id.in_(select(edges.step_id).where(edges.prerequisite_id.in_(closed))))
            .values(prerequisites_left=left,
                    state=case((and_(left == 0, steps.state == StepState.WAITING),
                                StepState.READY), else_=steps.state))
            .returning(steps.id, steps.state))


# Built once, as the claims' (``engine.db.leases``), and in Core, which leaves the
# session's step objects alone as UNSYNCED does: every close of a chain's link runs
# them, and building one cost about three times what running it does.
_COMPLETE = (update(table(Step))
             .where(table(Step).c.id.in_(bindparam("ids", expanding=True)),
                    table(Step).c.lease_owner == bindparam("owner"),
                    table(Step).c.state == StepState.RUNNING)
             .values(state=StepState.COMPLETE, failure_reason=None,
                     finished_at=bindparam("now", type_=Step.finished_at.type),
                     lease_owner=None, lease_expires_at=None)
             .returning(table(Step).c.id))
_RELEASE = _released()


def _finish_operation_if_done(operation: Operation) -> None:
    """The one operation state change made outside ``engine.db.transitions``: the last
    open step's close hands its operation to the finisher under the operation row lock
    the close took (``_lock_operation``), so the count and the state move together.
    transitions builds on this module (``start_steps``, ``abort_open_steps``), so this
    cannot call it without an import cycle."""
    if operation.open_steps <= 0 and operation.state == OperationState.RUNNING:
        operation.state = OperationState.FINISHING
