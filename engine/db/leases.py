"""Claim and release operations and steps, and the workers' liveness that keeps a claim.

A claim (``lease_owner``) is its worker's for as long as that worker lives, and a worker
lives while its one row in ``workers`` is neither stopped nor fenced. Each worker renews
its row's ``alive_until`` at every heartbeat (``renew_liveness``), one row whatever it
holds; the same statement fences every other worker whose ``alive_until`` has passed
(``fenced_at``). Fencing is the only way a live worker's claims change hands, and it is
for good: a fenced worker's renewals fail from then on, so it learns it was fenced and
rejoins under a new id. A renewal and a fence of the same worker both update its row, so
the row lock puts one after the other and the second sees the first (PostgreSQL re-reads
the row it waited for); a claim needs the fence committed, never a lapse it merely saw.

Times of liveness are the database's clock on PostgreSQL (``now()``; one clock for every
engine host, so their skew does not matter) and the caller's on SQLite (whose file lives
on one host). A worker stops acting on its claims, by its own monotonic clock, before its
liveness can lapse (``engine/worker/liveness.py``); see ``specs/scale-out.rst``.

Rows with no owner (given back after a failure or a graceful stop, parked for a person)
carry a *not before* in ``lease_expires_at``: nobody claims them before then.

PostgreSQL: ``SELECT ... FOR UPDATE SKIP LOCKED``, so many workers claim disjoint rows
without waiting on each other. SQLite: the same statements; ``FOR UPDATE`` renders to
nothing and the ``BEGIN IMMEDIATE`` of every transaction makes the claim the only writer.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Collection, Mapping
from typing import NamedTuple

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Select,
    and_,
    bindparam,
    case,
    exists,
    func,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.orm import InstrumentedAttribute, Session, aliased
from sqlalchemy.sql.elements import Case

from engine import metrics
from engine.db.base import UTCDateTime
from engine.db.models import Operation, Step, Worker
from engine.db.session import after_commit
from engine.db.wakeup import work_written
from engine.vocabulary import OperationState, StepState

Now = datetime.datetime
# UPDATEs of rows the session may hold: nothing reads those objects again afterwards.
UNSYNCED = {"synchronize_session": False}


class LeaseLost(Exception):  # noqa: N818 -- control flow, not an error anyone reads
    """The operation or step is not ours any more (we were fenced and another worker
    claimed it, or its operation ended): drop the work on it without writing anything
    more of it."""


def _held_by_the_living(owner: InstrumentedAttribute[str | None]) -> ColumnElement[bool]:
    """Whether ``owner`` is a worker neither stopped nor fenced: its claims are its own.
    A primary-key probe of a small table per row the claim looks at."""
    return exists().where(Worker.id == owner, Worker.stopped_at.is_(None),
                          Worker.fenced_at.is_(None))


def claimable(owner: InstrumentedAttribute[str | None],
              not_before: InstrumentedAttribute[datetime.datetime | None],
              now: ColumnElement[Now] | BindParameter[Now]) -> ColumnElement[bool]:
    """A row anyone may claim as far as its claim goes: held by nobody and past its *not
    before*, or held by a worker that is stopped, fenced or unknown (forgotten)."""
    return or_(and_(owner.is_(None), or_(not_before.is_(None), not_before < now)),
               and_(owner.is_not(None), ~_held_by_the_living(owner)))


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
            claimable(Operation.lease_owner, Operation.lease_expires_at, now),
        )
        .order_by(Operation.created_at)
        .limit(bindparam("limit"))
        .with_for_update(skip_locked=True, of=Operation)
    )


def _claimable_steps() -> Select[Step]:
    return (
        select(Step)
        .where(or_(Step.state == StepState.READY,
                   and_(Step.state == StepState.RUNNING,
                        claimable(Step.lease_owner, Step.lease_expires_at,
                                  bindparam("now")))))
        .order_by(Step.id)
        .limit(bindparam("limit"))
        .with_for_update(skip_locked=True, of=Step)
    )


# Built once: every worker runs them on every tick, and building a statement anew costs
# more (about 2 ms each, in Python) than running it on an idle database.
CLAIMABLE_OPERATIONS = _claimable_operations()
CLAIMABLE_STEPS = _claimable_steps()
READY_AMONG = (select(Step)
               .where(Step.id.in_(bindparam("ids", expanding=True)),
                      Step.state == StepState.READY)
               .order_by(Step.id).limit(bindparam("limit")).with_for_update(of=Step))


def claim_operations(session: Session, owner: str, now: Now, limit: int) -> list[Operation]:
    """Operations that need a worker: to plan, to finish, to notify, or to time out.

    A new operation waits while the stack's previous one still owes post-op calls, so
    every plugin hears how one operation ended before it is asked about the next."""
    operations = list(session.scalars(CLAIMABLE_OPERATIONS, {"now": now, "limit": limit}))
    # A holder fenced mid-phase (it died): its try still counted. One that gave
    # the operation back (a graceful stop) took its try back, and one that finished a
    # phase released it.
    _count_takeovers(session, "operation", sum(
        1 for operation in operations
        if operation.lease_owner not in (None, owner) and operation.failures > 0))
    for operation in operations:
        operation.lease_owner = owner
        operation.lease_expires_at = None  # ours while we live
        operation.attempt += 1
        # Counted before the phase runs, so a phase that kills its worker counts too.
        operation.failures += 1
    return operations


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


def claim_steps(session: Session, owner: str, now: Now, limit: int,
                room: Mapping[str, int] | None = None,
                alone_from: int = 1) -> list[ClaimedStep]:
    """Ready steps, and running steps whose holder was fenced (it died, or was cut off
    for longer than its lease) or gave them back after a failure.

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
    query = _with_room(CLAIMABLE_STEPS, room)
    claimed: list[ClaimedStep] = []
    alone: bool | None = None  # whether the suspects claimed so far run one by one
    for step in session.scalars(query, {"now": now, "limit": limit}):
        suspect = step.failures > 0
        if suspect and alone is not None and (alone or step.failures >= alone_from):
            continue  # read but left as it is, as below
        if not _fits(step, room):
            continue  # read but left as it is: another claim takes it
        if suspect:
            alone = step.failures >= alone_from
        claimed.append(ClaimedStep(step, suspect))
    # A step given back (a failure's back-off, a graceful stop) has no owner left.
    _count_takeovers(session, "step", sum(
        1 for step, _ in claimed
        if step.state == StepState.RUNNING and step.lease_owner not in (None, owner)))
    for step, _ in claimed:
        _take(step, owner, now)
    return claimed


def claim_ready(session: Session, owner: str, now: Now, step_ids: Collection[int],
                limit: int, room: Mapping[str, int] | None = None) -> list[Step]:
    """Claim, for the worker whose closes made them READY in this transaction, up to
    ``limit`` of the steps ``step_ids`` (within ``room``, as ``claim_steps``): so a
    dependent starts in the transaction that closed its last prerequisite, not a round
    later. No other worker sees them before this commits (this transaction's UPDATE
    holds their rows), so none is missed or taken twice; those left stay READY for any
    worker's next claim."""
    if not step_ids or limit <= 0:
        return []
    room = dict(room or {})
    claimed = [step for step in session.scalars(
        _with_room(READY_AMONG, room), {"ids": sorted(step_ids), "limit": limit},
        execution_options={"populate_existing": True}) if _fits(step, room)]
    for step in claimed:
        _take(step, owner, now)
    return claimed


def _with_room(query: Select[Step], room: Mapping[str, int]) -> Select[Step]:
    """Leave unread the steps of the types with no room left."""
    full = [kind for kind, left in room.items() if left <= 0]
    if not full:
        return query
    return query.where(or_(Step.resource_type.is_(None), Step.resource_type.not_in(full)))


def _fits(step: Step, room: dict[str, int]) -> bool:
    """Whether ``step``'s type has room for one more; if so, that room is now taken."""
    if step.resource_type in room:
        if room[step.resource_type] <= 0:
            return False
        room[step.resource_type] -= 1
    return True


def _take(step: Step, owner: str, now: Now) -> None:
    step.state = StepState.RUNNING
    step.lease_owner = owner
    step.lease_expires_at = None  # ours while we live
    step.attempt += 1
    # Counted before anything runs, so a step that kills its worker counts too.
    step.failures += 1
    if step.started_at is None:
        step.started_at = now


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
    """:func:`give_back_steps` for operations: nobody's from ``expires``, and the
    phase's try is taken back, for those still ours. The ids given back."""
    if not operation_ids:
        return set()
    result = session.execute(
        update(Operation)
        .where(Operation.id.in_(list(operation_ids)), Operation.lease_owner == owner)
        .values(lease_owner=None, lease_expires_at=expires,
                failures=_one_try_fewer(Operation.failures))
        .returning(Operation.id), execution_options=UNSYNCED)
    return {row[0] for row in result}


def abandon_steps(session: Session, owner: str, step_ids: Collection[int],
                  not_before: Now) -> set[int]:
    """Give back steps a bug made us drop (the try stays counted): nobody claims them
    before ``not_before``. The ids given back: those still ours and running."""
    if not step_ids:
        return set()
    result = session.execute(
        update(Step)
        .where(Step.id.in_(list(step_ids)), Step.lease_owner == owner,
               Step.state == StepState.RUNNING)
        .values(lease_owner=None, lease_expires_at=not_before)
        .returning(Step.id), execution_options=UNSYNCED)
    return {row[0] for row in result}


def abandon_operations(session: Session, owner: str, operation_ids: Collection[str],
                       not_before: Now) -> set[str]:
    """:func:`abandon_steps` for operations."""
    if not operation_ids:
        return set()
    result = session.execute(
        update(Operation)
        .where(Operation.id.in_(list(operation_ids)), Operation.lease_owner == owner)
        .values(lease_owner=None, lease_expires_at=not_before)
        .returning(Operation.id), execution_options=UNSYNCED)
    return {row[0] for row in result}


def park_step(session: Session, owner: str, step_id: int, operation_id: str, now: Now,
              margin: datetime.timedelta) -> bool:
    """Release a step that waits at a breakpoint (``engine.db.hooks``): nobody claims it
    before ``margin`` past its operation's deadline (the deadline read now, a cancel may
    have moved it) unless a signal wakes it first (``wake_step``), so it holds no worker
    and nothing polls it meanwhile. Reaching the breakpoint was progress: its tries
    start again from none. False if it is no longer ours."""
    deadline = session.scalar(select(Operation.deadline_at).where(Operation.id == operation_id))
    until = max(deadline or now, now) + margin
    result = session.execute(
        update(Step)
        .where(Step.id == step_id, Step.lease_owner == owner,
               Step.state == StepState.RUNNING)
        .values(lease_owner=None, lease_expires_at=until, failures=0)
        .returning(Step.id), execution_options=UNSYNCED)
    return result.first() is not None


def wake_step(session: Session, step_id: int) -> None:
    """Make a parked step claimable at once, and wake the workers for it (at commit); a
    step a worker holds is left to it (it reads what changed before it parks again)."""
    session.execute(update(Step)
                    .where(Step.id == step_id, Step.lease_owner.is_(None),
                           Step.state == StepState.RUNNING)
                    .values(lease_expires_at=None), execution_options=UNSYNCED)
    work_written(session)


class HeldSteps(NamedTuple):
    kept: set[int]  # still ours and running
    ended: set[int]  # closed by their operation's end (a time-out, a cancel)


def still_held(session: Session, owner: str, step_ids: Collection[int]) -> HeldSteps:
    """Of ``step_ids``, those still ours and running, and those closed by their
    operation's end (``engine.db.steps.cancel_open_steps``) as opposed to lost otherwise.
    A read by primary key: nothing is renewed per step."""
    if not step_ids:
        return HeldSteps(set(), set())
    rows = session.execute(select(Step.id, Step.state, Step.lease_owner)
                           .where(Step.id.in_(list(step_ids))))
    kept: set[int] = set()
    ended: set[int] = set()
    for step_id, state, lease_owner in rows:
        if state == StepState.RUNNING and lease_owner == owner:
            kept.add(step_id)
        elif state == StepState.CANCELLED:
            ended.add(step_id)
    return HeldSteps(kept, ended)


# --- the workers' liveness ----------------------------------------------------------------


class Renewal(NamedTuple):
    alive: bool  # our liveness was renewed: nobody had fenced us
    fenced: list[Worker]  # the other workers this renewal fenced


def _liveness_clock(session: Session, now: Now, lease_seconds: float
                    ) -> tuple[ColumnElement[Now], ColumnElement[Now]]:
    """Now, and now plus the lease, by the clock that decides liveness: PostgreSQL's own
    (when the statement began, so after the caller read its monotonic clock), else the
    caller's (SQLite's file lives on one host, whose clock every worker reads)."""
    if session.get_bind().dialect.name == "postgresql":
        now_there = func.statement_timestamp()
        return now_there, now_there + datetime.timedelta(seconds=lease_seconds)
    return (literal(now, UTCDateTime()),
            literal(now + datetime.timedelta(seconds=lease_seconds), UTCDateTime()))


def register_worker(session: Session, worker_id: str, host: str, pid: int, now: Now,
                    lease_seconds: float) -> Renewal:
    """Add a worker, alive for a lease, and fence the others whose liveness lapsed (a
    restarted engine takes its predecessor's work over at once)."""
    session.add(Worker(id=worker_id, host=host, pid=pid, started_at=now, heartbeat_at=now))
    session.flush()
    return renew_liveness(session, worker_id, now, lease_seconds)


def renew_liveness(session: Session, worker_id: str, now: Now, lease_seconds: float,
                   fence: bool = True) -> Renewal:
    """The heartbeat: our ``alive_until`` moved to a lease from now unless we were fenced
    or stopped; then, if we live (and ``fence``), every other worker whose
    ``alive_until`` has passed fenced. Fencing says so at commit (``work_written``), so
    every engine claims what the fenced held without waiting for its idle poll.

    The fence skips a worker whose row another transaction holds (its renewal, about to
    extend it, or another fence): no heartbeat ever waits on another worker's, so a
    worker paused inside its renewal cannot hold the others' back (and let them lapse
    in turn). A renewal that waited on a fence sees it and fails."""
    database_now, alive_until = _liveness_clock(session, now, lease_seconds)
    renewed = session.execute(
        update(Worker)
        .where(Worker.id == worker_id, Worker.stopped_at.is_(None),
               Worker.fenced_at.is_(None))
        .values(alive_until=alive_until, heartbeat_at=now)
        .returning(Worker.id), execution_options=UNSYNCED).first()
    if renewed is None or not fence:
        return Renewal(alive=renewed is not None, fenced=[])
    lapsed = (select(Worker.id)
              .where(Worker.id != worker_id, Worker.stopped_at.is_(None),
                     Worker.fenced_at.is_(None),
                     or_(Worker.alive_until.is_(None), Worker.alive_until < database_now))
              .with_for_update(skip_locked=True))
    fenced = list(session.scalars(
        update(Worker).where(Worker.id.in_(lapsed))
        .values(fenced_at=database_now)
        .returning(Worker), execution_options=UNSYNCED))
    if fenced:
        work_written(session)
    return Renewal(alive=True, fenced=fenced)


def stop_worker(session: Session, worker_id: str, now: Now) -> None:
    """A graceful stop: the worker's claims (given back already) are nobody's now."""
    session.execute(update(Worker).where(Worker.id == worker_id)
                    .values(heartbeat_at=now, stopped_at=now), execution_options=UNSYNCED)


def is_alive(worker: Worker, now: Now) -> bool:
    """Whether ``worker`` is up as operators see it: not stopped, not fenced, and its
    liveness not past (by ``now``, the reader's clock)."""
    return (worker.stopped_at is None and worker.fenced_at is None
            and worker.alive_until is not None and worker.alive_until >= now)


def list_workers(session: Session, now: Now) -> list[tuple[Worker, int]]:
    """Every registered worker, oldest first, with how many steps it holds now (one
    grouped count, not one per worker): none for a worker that is not alive."""
    held = dict(session.execute(
        select(Step.lease_owner, func.count())
        .where(Step.state == StepState.RUNNING, Step.lease_owner.is_not(None))
        .group_by(Step.lease_owner)).all())
    workers = session.scalars(select(Worker).order_by(Worker.started_at, Worker.id))
    return [(worker, held.get(worker.id, 0) if is_alive(worker, now) else 0)
            for worker in workers]
