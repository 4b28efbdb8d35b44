"""Step-graph bookkeeping: write a plan as rows, finish or fail a step and release what
waited on it, and hand the operation to its finisher when no step is left open.

Every change is guarded by the lease (``lease_owner`` and state in the WHERE clause), so
a worker that lost its lease cannot overwrite what another worker has since done.
"""

from __future__ import annotations

import datetime
from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple, cast

from sqlalchemy import CursorResult, Update, func, select, update
from sqlalchemy.orm import Session, defer

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
    steps = {
        key: Step(operation_id=operation.id, stack_id=operation.stack_id,
                  resource_name=key[0], action=key[1], prerequisites_left=len(deps),
                  state=StepState.READY if not deps else StepState.WAITING,
                  resource_type=types.get(key[0]))
        for key, deps in requires.items()
    }
    session.add_all(steps.values())
    session.flush()
    session.add_all(
        StepDependency(step_id=steps[key].id, prerequisite_id=steps[dep].id)
        for key, deps in requires.items() for dep in deps
    )
    operation.open_steps = len(steps)
    work_written(session)


def load_steps(session: Session, step_ids: Collection[int]) -> list[Step]:
    return list(session.scalars(select(Step).where(Step.id.in_(list(step_ids)))))


def save_progress(session: Session, step_id: int, owner: str, token: object,
                  next_poll_at: Now, *, started: bool) -> bool:
    """Store the step's token. ``started``: its action has just started (a new token
    from ``handle_<action>``), which is progress, so its count of failed tries starts
    again; a look that found it still waiting is not (a step that fails on its second
    look would otherwise be retried for ever)."""
    values: dict[str, Any] = {"token": token, "started": True, "next_poll_at": next_poll_at}
    if started:
        values["failures"] = 0
    return _rows_updated(session, (
        update(Step)
        .where(Step.id == step_id, Step.lease_owner == owner, Step.state == StepState.RUNNING)
        .values(**values)
    )) == 1


def complete_step(session: Session, step: Step, owner: str, now: Now) -> bool:
    """Mark ``step`` done and make ready the steps waiting only on it."""
    operation = _lock_operation(session, step.operation_id)
    if not _close(session, step, owner, now, StepState.COMPLETE, None):
        return False
    operation.open_steps -= 1
    waiting = select(StepDependency.step_id).where(StepDependency.prerequisite_id == step.id)
    session.execute(update(Step).where(Step.id.in_(waiting))
                    .values(prerequisites_left=Step.prerequisites_left - 1),
                    execution_options=UNSYNCED)
    _release(session, waiting)
    _finish_operation_if_done(operation)
    return True


def complete_steps(session: Session, operation_id: str, step_ids: Collection[int],
                   owner: str, now: Now, *, wake: bool = True) -> Closing:
    """:func:`complete_step` for many steps of one operation in a few statements: the
    ids among ``step_ids`` still ours that are now closed, and those made ready.
    ``wake``: wake the workers for the steps made ready; a closer that claims them
    itself wakes them only for those it leaves (``wakeup.work_written``)."""
    operation = _lock_operation(session, operation_id)
    closed = set(session.scalars(
        update(Step)
        .where(Step.id.in_(list(step_ids)), Step.lease_owner == owner,
               Step.state == StepState.RUNNING)
        .values(state=StepState.COMPLETE, failure_reason=None, finished_at=now, lease_owner=None,
                lease_expires_at=None)
        .returning(Step.id), execution_options=UNSYNCED))
    if not closed:
        return Closing(closed, set())
    operation.open_steps -= len(closed)
    waiting = select(StepDependency.step_id).where(
        StepDependency.prerequisite_id.in_(list(closed)))
    released = (select(func.count()).select_from(StepDependency)
                .where(StepDependency.step_id == Step.id,
                       StepDependency.prerequisite_id.in_(list(closed)))
                .scalar_subquery())
    session.execute(update(Step).where(Step.id.in_(waiting))
                    .values(prerequisites_left=Step.prerequisites_left - released),
                    execution_options=UNSYNCED)
    ready = _release(session, waiting, wake=wake)
    _finish_operation_if_done(operation)
    return Closing(closed, ready)


def fail_step(session: Session, step: Step, owner: str, now: Now, reason: str) -> bool:
    """Mark ``step`` failed; steps not yet started will never run."""
    operation = _lock_operation(session, step.operation_id)
    if not _close(session, step, owner, now, StepState.FAILED, reason):
        return False
    if operation.failure_reason is None:
        operation.failure_reason = reason
    cancelled = _rows_updated(session, update(Step)
                              .where(Step.operation_id == step.operation_id,
                                     Step.state.in_((StepState.WAITING, StepState.READY)))
                              .values(state=StepState.CANCELLED, finished_at=now))
    operation.open_steps -= 1 + cancelled
    _finish_operation_if_done(operation)
    return True


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
    operation = session.get(Operation, operation_id, with_for_update=True,
                            populate_existing=True,
                            options=[defer(Operation.payload), defer(Operation.context),
                                     defer(Operation.lifecycle)])
    assert operation is not None, f"operation {operation_id} vanished under its steps"
    return operation


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


def _release(session: Session, waiting: Any, *, wake: bool = True) -> set[int]:
    """Make ready the ``waiting`` steps with no prerequisite left, and (``wake``) wake
    workers for them, as other engines may be idle; their ids."""
    ready = set(session.scalars(
        update(Step).where(Step.id.in_(waiting), Step.state == StepState.WAITING,
                           Step.prerequisites_left == 0)
        .values(state=StepState.READY).returning(Step.id), execution_options=UNSYNCED))
    if ready and wake:
        work_written(session)
    return ready


def _finish_operation_if_done(operation: Operation) -> None:
    """The one operation state change made outside ``engine.db.transitions``: the last
    open step's close hands its operation to the finisher under the operation row lock
    the close took (``_lock_operation``), so the count and the state move together.
    transitions builds on this module (``start_steps``, ``abort_open_steps``), so this
    cannot call it without an import cycle."""
    if operation.open_steps <= 0 and operation.state == OperationState.RUNNING:
        operation.state = OperationState.FINISHING
