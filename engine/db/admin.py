"""The operator's queries and repairs (``kiln-manage``): across tenants, by id or name.

Tenant-facing reads take a tenant id (``stack_rows``, ``tenant_rows``); these
deliberately do not, because the operator answers for every tenant from the control host.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import case, delete, func, or_, select
from sqlalchemy.orm import Session

from engine.db.models import Event, Operation, Resource, Stack, Step, Tenant, Token, Worker
from engine.vocabulary import OPEN_STEP_STATES, OperationState, Status, StepState

Now = datetime.datetime


@dataclasses.dataclass(frozen=True)
class StepCounts:
    total: int = 0
    done: int = 0  # finished one way or another: complete, failed or cancelled
    failed: int = 0
    running: int = 0


def find_stacks(session: Session, name_or_id: str, tenant_id: str | None = None
                ) -> list[Stack]:
    """Stacks with this id (soft-deleted ones too) or, failing that, live stacks with this
    name, in any tenant unless ``tenant_id`` narrows it; oldest first."""
    query = select(Stack).order_by(Stack.created_at, Stack.id)
    if tenant_id is not None:
        query = query.where(Stack.tenant_id == tenant_id)
    by_id = list(session.scalars(query.where(Stack.id == name_or_id)))
    if by_id:
        return by_id
    return list(session.scalars(
        query.where(Stack.name == name_or_id, Stack.deleted_at.is_(None))))


def tenant_names(session: Session, tenant_ids: Collection[str]) -> dict[str, str]:
    rows = session.execute(select(Tenant.id, Tenant.name).where(Tenant.id.in_(tenant_ids)))
    return {tenant_id: name for tenant_id, name in rows}


def list_stacks(session: Session, *, tenant_id: str | None, names: Sequence[str],
                actions: Sequence[str], statuses: Sequence[str], changed_before: Now | None,
                show_deleted: bool, show_nested: bool, order: str, descending: bool,
                limit: int | None) -> list[Stack]:
    """Stacks of every tenant (or one), filtered; ``changed_before`` keeps those whose
    last change (update, else creation) is older. ``order``: name, status, created,
    updated."""
    changed = func.coalesce(Stack.updated_at, Stack.created_at)
    query = select(Stack)
    if tenant_id is not None:
        query = query.where(Stack.tenant_id == tenant_id)
    if names:
        query = query.where(Stack.name.in_(names))
    if actions:
        query = query.where(Stack.action.in_(actions))
    if statuses:
        query = query.where(Stack.status.in_(statuses))
    if changed_before is not None:
        query = query.where(changed < changed_before)
    if not show_deleted:
        query = query.where(Stack.deleted_at.is_(None))
    if not show_nested:
        query = query.where(Stack.owner_id.is_(None))
    column = {"name": Stack.name, "status": Stack.status, "created": Stack.created_at,
              "updated": changed}[order]
    keys = (column, Stack.id)
    query = query.order_by(*(key.desc() if descending else key.asc() for key in keys))
    if limit is not None:
        query = query.limit(limit)
    return list(session.scalars(query))


# --- operations ---------------------------------------------------------------------------

def list_operations(session: Session, *, unfinished_only: bool, stack_id: str | None = None,
                    limit: int | None = None) -> list[tuple[Operation, Stack]]:
    """Operations with their stacks, newest first. Unfinished: not yet past their
    post-ops (a NOTIFYING operation has ``finished_at`` but still owes plugin calls)."""
    query = select(Operation, Stack).join(Stack, Stack.id == Operation.stack_id)
    if unfinished_only:
        query = query.where(Operation.state.not_in((OperationState.COMPLETE,
                                                    OperationState.FAILED)))
    if stack_id is not None:
        query = query.where(Operation.stack_id == stack_id)
    query = query.order_by(Operation.created_at.desc(), Operation.id)
    if limit is not None:
        query = query.limit(limit)
    return [(operation, stack) for operation, stack in session.execute(query)]


def find_operations(session: Session, id_or_prefix: str) -> list[tuple[Operation, Stack]]:
    """The operation with this id, or those whose id starts with it (people paste the
    first block of a UUID)."""
    query = select(Operation, Stack).join(Stack, Stack.id == Operation.stack_id)
    exact = [(operation, stack) for operation, stack
             in session.execute(query.where(Operation.id == id_or_prefix))]
    pattern = _prefix(id_or_prefix)
    if exact or pattern is None:
        return exact
    return [(operation, stack) for operation, stack
            in session.execute(query.where(Operation.id.like(pattern))
                               .order_by(Operation.created_at).limit(10))]


def _prefix(id_or_prefix: str) -> str | None:
    """A LIKE pattern for ids starting with this (4 characters at least), or None."""
    if len(id_or_prefix) < 4:
        return None
    return id_or_prefix.replace("%", "").replace("_", "") + "%"


def step_counts(session: Session, operation_ids: Collection[str]) -> dict[str, StepCounts]:
    """Steps of each operation by outcome, in one grouped query."""
    if not operation_ids:
        return {}
    finished = case((Step.state.in_(OPEN_STEP_STATES), 0), else_=1)
    rows = session.execute(
        select(Step.operation_id, func.count(), func.sum(finished),
               func.sum(case((Step.state == StepState.FAILED, 1), else_=0)),
               func.sum(case((Step.state == StepState.RUNNING, 1), else_=0)))
        .where(Step.operation_id.in_(operation_ids))
        .group_by(Step.operation_id))
    return {op: StepCounts(int(total), int(done or 0), int(failed or 0), int(running or 0))
            for op, total, done, failed, running in rows}


def step_holders(session: Session, operation_ids: Collection[str]
                 ) -> dict[str, dict[str, tuple[int, Now | None]]]:
    """Operation id -> worker id -> (how many of the operation's steps it holds, until
    when its liveness lasts), for the workers whose claims still stand (neither fenced
    nor stopped: a worker whose liveness lapsed holds them until another fences it); one
    grouped query."""
    if not operation_ids:
        return {}
    rows = session.execute(
        select(Step.operation_id, Step.lease_owner, func.count(), func.max(Worker.alive_until))
        .join(Worker, Worker.id == Step.lease_owner)
        .where(Step.operation_id.in_(operation_ids), Step.state == StepState.RUNNING,
               Worker.stopped_at.is_(None), Worker.fenced_at.is_(None))
        .group_by(Step.operation_id, Step.lease_owner))
    found: dict[str, dict[str, tuple[int, Now | None]]] = {}
    for operation_id, owner, count, alive_until in rows:
        if owner is not None:  # the join has none: for the type checker
            found.setdefault(operation_id, {})[owner] = (count, alive_until)
    return found


def standing_claims(session: Session, owners: Collection[str]) -> dict[str, Now | None]:
    """Of ``owners``, the workers whose claims still stand (neither fenced nor stopped),
    with until when their liveness lasts."""
    if not owners:
        return {}
    rows = session.execute(
        select(Worker.id, Worker.alive_until)
        .where(Worker.id.in_(list(owners)), Worker.stopped_at.is_(None),
               Worker.fenced_at.is_(None)))
    return {worker_id: alive_until for worker_id, alive_until in rows}


def in_progress_resources(session: Session, stack_id: str) -> list[Resource]:
    return list(session.scalars(
        select(Resource).where(Resource.stack_id == stack_id,
                               Resource.status == Status.IN_PROGRESS).order_by(Resource.name)))


# --- workers ------------------------------------------------------------------------------

def find_workers(session: Session, id_or_prefix: str) -> list[Worker]:
    exact = session.get(Worker, id_or_prefix)
    if exact is not None:
        return [exact]
    pattern = _prefix(id_or_prefix)
    if pattern is None:
        return []
    return list(session.scalars(select(Worker).where(Worker.id.like(pattern)).limit(10)))


def delete_worker(session: Session, worker_id: str) -> None:
    session.execute(delete(Worker).where(Worker.id == worker_id))


# --- tenants and tokens -------------------------------------------------------------------

def count_stacks(session: Session, tenant_id: str, *, live_only: bool) -> int:
    query = select(func.count()).where(Stack.tenant_id == tenant_id)
    if live_only:
        query = query.where(Stack.deleted_at.is_(None))
    return int(session.scalar(query) or 0)


def delete_tenant(session: Session, tenant_id: str) -> None:
    """The tenant, its tokens (cascade) and its soft-deleted stacks with theirs."""
    gone = select(Stack.id).where(Stack.tenant_id == tenant_id).scalar_subquery()
    session.execute(delete(Stack).where(Stack.id.in_(gone)))
    session.execute(delete(Token).where(Token.tenant_id == tenant_id))
    session.execute(delete(Tenant).where(Tenant.id == tenant_id))


def revoke_token(session: Session, token_id: str, now: Now) -> Token | None:
    """The revoked token (revoked when first asked), or None if there is no such token."""
    token = session.get(Token, token_id, with_for_update=True)
    if token is not None and token.revoked_at is None:
        token.revoked_at = now
    return token


# --- purge --------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class PurgedStack:
    id: str
    name: str
    tenant_id: str
    deleted_at: Now
    resources: int
    events: int


def deleted_before(session: Session, cutoff: Now, limit: int,
                   after: tuple[Now, str] | None = None) -> list[PurgedStack]:
    """Up to ``limit`` soft-deleted stacks deleted before ``cutoff``, oldest first (after
    ``after``, a (deleted_at, id) already seen), with how many rows each takes along."""
    query = (select(Stack.id, Stack.name, Stack.tenant_id, Stack.deleted_at)
             .where(Stack.deleted_at < cutoff))
    if after is not None:
        query = query.where(or_(Stack.deleted_at > after[0],
                                (Stack.deleted_at == after[0]) & (Stack.id > after[1])))
    rows = list(session.execute(
        query.order_by(Stack.deleted_at, Stack.id).limit(limit)))
    ids = [row[0] for row in rows]
    resources = _counts(session, Resource.stack_id, ids)
    events = _counts(session, Event.stack_id, ids)
    return [PurgedStack(id=stack_id, name=name, tenant_id=tenant, deleted_at=deleted,
                        resources=resources.get(stack_id, 0), events=events.get(stack_id, 0))
            for stack_id, name, tenant, deleted in rows if deleted is not None]


def delete_stacks(session: Session, stack_ids: Collection[str]) -> None:
    """Rows of these stacks and everything that hangs off them (the foreign keys
    cascade: resources, their signals and tokens, events, operations, steps)."""
    session.execute(delete(Stack).where(Stack.id.in_(stack_ids)))


def _counts(session: Session, column: Any, ids: Collection[str]) -> dict[str, int]:
    if not ids:
        return {}
    rows = session.execute(select(column, func.count()).where(column.in_(ids))
                           .group_by(column))
    return {key: int(count) for key, count in rows}
