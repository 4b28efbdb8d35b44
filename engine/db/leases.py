"""Claim, renew and release leases on operations and steps.

PostgreSQL: ``SELECT ... FOR UPDATE SKIP LOCKED``, so many workers claim disjoint rows
without waiting on each other. SQLite: the same statements; ``FOR UPDATE`` renders to
nothing and the ``BEGIN IMMEDIATE`` of every transaction makes the claim the only writer.
A lease that is not renewed expires, and the row can then be claimed by anyone.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Collection, Mapping
from typing import NamedTuple

from sqlalchemy import (
    BindParameter,
    Select,
    and_,
    bindparam,
    case,
    exists,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.orm import InstrumentedAttribute, Session, aliased
from sqlalchemy.sql.elements import Case

from engine import metrics
from engine.db.models import Operation, Step, Worker
from engine.db.session import after_commit
from engine.vocabulary import OperationState, StepState

Now = datetime.datetime
# UPDATEs of rows the session may hold: nothing reads those objects again afterwards.
UNSYNCED = {"synchronize_session": False}


class LeaseLost(Exception):  # noqa: N818 -- control flow, not an error anyone reads
    """Another worker holds the lease now (ours lapsed and was claimed): drop the work
    on that operation or step without writing anything more of it."""


def _claimable_operations() -> Select[Operation]:
    previous = aliased(Operation, name="previous")
    notifying = exists().where(previous.stack_id == Operation.stack_id,
                               previous.state == OperationState.NOTIFYING)
    now: BindParameter[Now] = bindparam("now")
    return (
        select(Operation)
        .where(
            or_(and_(Operation.state == OperationState.PENDING, ~notifying),
                Operation.state.in_((OperationState.FINISHING, OperationState.NOTIFYING)),
                and_(Operation.state == OperationState.RUNNING, Operation.deadline_at < now)),
            or_(Operation.lease_expires_at.is_(None), Operation.lease_expires_at < now),
        )
        .order_by(Operation.created_at)
        .limit(bindparam("limit"))
        .with_for_update(skip_locked=True)
    )


def _claimable_steps() -> Select[Step]:
    return (
        select(Step)
        .where(or_(Step.state == StepState.READY,
                   and_(Step.state == StepState.RUNNING, Step.lease_expires_at < bindparam("now"))))
        .order_by(Step.id)
        .limit(bindparam("limit"))
        .with_for_update(skip_locked=True)
    )


# Built once: every worker runs them on every tick, and building a statement anew costs
# more (about 2 ms each, in Python) than running it on an idle database.
CLAIMABLE_OPERATIONS = _claimable_operations()
CLAIMABLE_STEPS = _claimable_steps()


def _expiry(now: Now, lease_seconds: float) -> Now:
    return now + datetime.timedelta(seconds=lease_seconds)


def claim_operations(session: Session, owner: str, now: Now, lease_seconds: float,
                     limit: int) -> list[Operation]:
    """Operations that need a worker: to plan, to finish, to notify, or to time out.

    A new operation waits while the stack's previous one still owes post-op calls, so
    every plugin hears how one operation ended before it is asked about the next."""
    operations = list(session.scalars(CLAIMABLE_OPERATIONS, {"now": now, "limit": limit}))
    # A holder that let its lease lapse mid-phase: its try still counted. One that gave
    # the operation back (a graceful stop) took its try back, and one that finished a
    # phase released it.
    _count_takeovers(session, "operation", sum(
        1 for operation in operations
        if operation.lease_owner not in (None, owner) and operation.failures > 0))
    for operation in operations:
        operation.lease_owner = owner
        operation.lease_expires_at = _expiry(now, lease_seconds)
        operation.attempt += 1
        # Counted before the phase runs, so a phase that kills its worker counts too.
        operation.failures += 1
    return operations


def renew_operation(session: Session, operation_id: str, owner: str, now: Now,
                    lease_seconds: float) -> bool:
    """Extend our lease on an operation; False if it is no longer ours."""
    result = session.execute(
        update(Operation)
        .where(Operation.id == operation_id, Operation.lease_owner == owner)
        .values(lease_expires_at=_expiry(now, lease_seconds))
        .returning(Operation.id))
    return result.first() is not None


def release_operation(session: Session, operation: Operation) -> None:
    """Release after a phase that completed: its tries start again from none."""
    operation.lease_owner = None
    operation.lease_expires_at = None
    operation.failures = 0


def back_off_operation(session: Session, operation: Operation, not_before: Now) -> None:
    """Release after a phase that failed: nobody claims it again before ``not_before``
    (the claim takes operations whose lease expired, and this one is made to expire
    then), and the try stays counted."""
    operation.lease_owner = None
    operation.lease_expires_at = not_before


def park_operation(session: Session, operation: Operation, until: Now) -> None:
    """Release an operation that waits for a person (an approval gate): nobody claims it
    before ``until`` (when its approval window ends) unless a decision or a cancel wakes
    it first (``wake_operation``). It holds no worker meanwhile."""
    release_operation(session, operation)
    operation.lease_expires_at = until


def wake_operation(operation: Operation) -> None:
    """Make a parked or backed-off operation claimable now; one a worker holds is left
    to it (the worker reads what changed before it lets the operation go)."""
    if operation.lease_owner is None:
        operation.lease_expires_at = None


class ClaimedStep(NamedTuple):
    step: Step
    # Its last claim ended without its progress saved: its worker failed on it, or died
    # while it held it (see ``claim_steps``).
    suspect: bool


def claim_steps(session: Session, owner: str, now: Now, lease_seconds: float,
                limit: int, room: Mapping[str, int] | None = None,
                alone_from: int = 1) -> list[ClaimedStep]:
    """Ready steps, and running steps whose holder stopped renewing (it died) or gave
    them back after a failure.

    ``room`` caps the steps of some resource types: at most that many more of each are
    claimed (types with no room are not even read). A *suspect* is a step whose last
    claim ended without its progress saved (``failures`` above 0). The caller runs a
    claim's suspects last, in a round of their own, so should they kill the worker the
    fresh steps claimed with them were saved already. At most one round of suspects is
    claimed: every suspect that died fewer than ``alone_from`` times since its progress
    (after a crash, the whole round the worker had started comes back so, and is taken
    back together), or else a single one that died more (so that a step that keeps
    killing its workers is told apart from the round it was in, and spends only its own
    tries)."""
    room = dict(room or {})
    full = [kind for kind, left in room.items() if left <= 0]
    query = CLAIMABLE_STEPS
    if full:
        query = query.where(or_(Step.resource_type.is_(None),
                                Step.resource_type.not_in(full)))
    claimed: list[ClaimedStep] = []
    alone: bool | None = None  # whether the suspects claimed so far run one by one
    for step in session.scalars(query, {"now": now, "limit": limit}):
        suspect = step.failures > 0
        if suspect and alone is not None and (alone or step.failures >= alone_from):
            continue  # read but left as it is, as below
        if step.resource_type in room:
            if room[step.resource_type] <= 0:
                continue  # read but left as it is: another claim takes it
            room[step.resource_type] -= 1
        if suspect:
            alone = step.failures >= alone_from
        claimed.append(ClaimedStep(step, suspect))
    # A step given back (a failure's back-off, a graceful stop) has no owner left.
    _count_takeovers(session, "step", sum(
        1 for step, _ in claimed
        if step.state == StepState.RUNNING and step.lease_owner not in (None, owner)))
    for step, _ in claimed:
        step.state = StepState.RUNNING
        step.lease_owner = owner
        step.lease_expires_at = _expiry(now, lease_seconds)
        step.attempt += 1
        # Counted before anything runs, so a step that kills its worker counts too.
        step.failures += 1
        if step.started_at is None:
            step.started_at = now
    return claimed


def _count_takeovers(session: Session, kind: str, count: int) -> None:
    """``kiln_lease_takeovers_total``, once the claim commits."""
    if count:
        after_commit(session, functools.partial(metrics.lease_taken_over, kind, count))


def back_off_step(session: Session, step: Step, owner: str, not_before: Now) -> bool:
    """Give a step back after a failure (the try stays counted): nobody claims it again
    before ``not_before``. False if it is no longer ours."""
    if step.lease_owner != owner or step.state != StepState.RUNNING:
        return False
    step.lease_owner = None
    step.lease_expires_at = not_before
    return True


def _one_try_fewer(failures: InstrumentedAttribute[int]) -> Case[int]:
    """A claim given back unfinished through no fault of the row's: its try taken back."""
    return case((failures > 0, failures - 1), else_=0)


def give_back_steps(session: Session, owner: str, step_ids: Collection[int],
                    expires: Now) -> set[int]:
    """Hand claimed steps back uncounted (a graceful stop, a round cut short, a
    database outage): their try is taken back and anyone may claim them from
    ``expires``. One statement, so a count a concurrent write changed is not lost;
    only the steps still ours and running are touched. The ids given back."""
    if not step_ids:
        return set()
    result = session.execute(
        update(Step)
        .where(Step.id.in_(list(step_ids)), Step.lease_owner == owner,
               Step.state == StepState.RUNNING)
        .values(lease_owner=None, lease_expires_at=expires, failures=_one_try_fewer(Step.failures))
        .returning(Step.id), execution_options=UNSYNCED)
    return {row[0] for row in result}


def give_back_operations(session: Session, owner: str, operation_ids: Collection[str],
                         expires: Now) -> set[str]:
    """:func:`give_back_steps` for operations: their lease ends at ``expires`` and the
    phase's try is taken back, for those still ours. The ids given back."""
    if not operation_ids:
        return set()
    result = session.execute(
        update(Operation)
        .where(Operation.id.in_(list(operation_ids)), Operation.lease_owner == owner)
        .values(lease_expires_at=expires,
                failures=_one_try_fewer(Operation.failures))
        .returning(Operation.id), execution_options=UNSYNCED)
    return {row[0] for row in result}


def renew_steps(session: Session, owner: str, step_ids: Collection[int], now: Now,
                lease_seconds: float) -> set[int]:
    """Extend the leases still held; returns the ids that are still ours."""
    if not step_ids:
        return set()
    result = session.execute(
        update(Step)
        .where(Step.id.in_(list(step_ids)), Step.lease_owner == owner,
               Step.state == StepState.RUNNING)
        .values(lease_expires_at=_expiry(now, lease_seconds))
        .returning(Step.id)
    )
    return {row[0] for row in result}


def cancelled_steps(session: Session, step_ids: Collection[int]) -> set[int]:
    """Of ``step_ids``, those closed by their operation's end (a timeout or a cancel closes
    every open step, ``engine.db.steps.cancel_open_steps``), as opposed to taken over."""
    if not step_ids:
        return set()
    return set(session.scalars(select(Step.id).where(Step.id.in_(list(step_ids)),
                                                     Step.state == StepState.CANCELLED)))


def register_worker(session: Session, worker: Worker) -> None:
    session.add(worker)


def heartbeat_worker(session: Session, worker_id: str, now: Now,
                     stopped: bool = False) -> None:
    values: dict[str, Now] = {"heartbeat_at": now}
    if stopped:
        values["stopped_at"] = now
    session.execute(update(Worker).where(Worker.id == worker_id).values(**values))


def list_workers(session: Session, now: Now) -> list[tuple[Worker, int]]:
    """Every registered worker, oldest first, with how many steps it holds a live lease
    on now (one grouped count, not one per worker)."""
    held = dict(session.execute(
        select(Step.lease_owner, func.count())
        .where(Step.state == StepState.RUNNING, Step.lease_expires_at >= now)
        .group_by(Step.lease_owner)).all())
    workers = session.scalars(select(Worker).order_by(Worker.started_at, Worker.id))
    return [(worker, held.get(worker.id, 0)) for worker in workers]
