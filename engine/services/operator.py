"""The operator's view (``kiln-manage``): every tenant's stacks and operations, and the
repairs of last resort.

Reads of one stack reuse :class:`StackReads` with an admin context of the stack's own
tenant, so hidden parameters are masked exactly as the API masks them.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterator, Sequence
from typing import Any

from engine import reasons
from engine.clock import Clock
from engine.context import ADMIN_ROLE, RequestContext
from engine.db import admin, event_rows, stack_rows, transitions
from engine.db.models import Operation, Stack
from engine.db.session import Database, DbSession
from engine.errors import (
    AmbiguousName,
    EntityNotFound,
    InvalidFilter,
    NothingToCancel,
    OperatorViewForbidden,
    StackHeld,
)
from engine.lifecycle.runner import not_called
from engine.services.listing import split_statuses
from engine.services.records import StackRecord, stack_record
from engine.services.stack_reads import StackReads
from engine.services.tenants import TenantService
from engine.services.workers import WorkerRecord, WorkerService
from engine.vocabulary import CancelReason, OperationState, Status, stack_action

RESET_STATUSES = (Status.FAILED, Status.COMPLETE)
STACK_ORDERS = ("name", "status", "created", "updated")
SETTLED = (OperationState.COMPLETE, OperationState.FAILED)


@dataclasses.dataclass(frozen=True)
class StackRef:
    """A stack found by the operator, and the tenant it belongs to."""

    id: str
    name: str
    tenant_id: str
    tenant_name: str

    def context(self) -> RequestContext:
        """An admin of the stack's own tenant: what the operator reads it as."""
        return RequestContext(tenant_id=self.tenant_id, token_tenant_id=self.tenant_id,
                              role=ADMIN_ROLE, username="kiln-manage")


@dataclasses.dataclass(frozen=True)
class StackFilter:
    tenant: str | None = None  # name or id
    names: Sequence[str] = ()
    actions: Sequence[str] = ()
    statuses: Sequence[str] = ()  # COMPLETE, or with its action: CREATE_FAILED
    older_than: datetime.timedelta | None = None  # last changed longer ago than this
    show_deleted: bool = False
    show_nested: bool = False
    order: str = "created"
    descending: bool = True
    limit: int | None = None


@dataclasses.dataclass(frozen=True)
class ListedStack:
    stack: StackRecord
    tenant_name: str


@dataclasses.dataclass(frozen=True)
class OperationRecord:
    id: str
    stack_id: str
    stack_name: str
    tenant_id: str
    action: str
    state: str
    attempt: int
    created_at: datetime.datetime
    updated_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    deadline_at: datetime.datetime
    # The workers holding the operation's lease or a lease on one of its steps (a
    # running operation is held through its steps), and when the last lease runs out.
    held_by: tuple[str, ...]
    # Until when the liveness of its holders lasts (the latest).
    lease_expires_at: datetime.datetime | None
    # Whether any holder is a worker heartbeating now; None when nobody holds it.
    holder_alive: bool | None
    failure_reason: str | None
    cancelled: bool
    steps: admin.StepCounts
    step_holders: dict[str, int]  # worker id -> steps it holds (its claims standing)
    # The approval gate it is parked at (plugin, message, window, any decision not yet
    # taken up), or None.
    awaiting_approval: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        """Past its post-ops too."""
        return self.state in SETTLED


def _awaited(operation: Operation) -> dict[str, Any] | None:
    approval = transitions.awaited_approval(operation)
    return dict(approval) if approval is not None else None


def _settled(operation: Operation) -> bool:
    return operation.state in SETTLED


def _forgo_post_ops(session: DbSession, stack: Stack, operation: Operation, why: str,
                    now: datetime.datetime) -> None:
    """Settle ``operation`` without the post-ops it owes, each plugin's recorded as
    never called, and why."""
    failure = operation.lifecycle.get("outcome") != Status.COMPLETE
    for plugin in transitions.owed_post_ops(operation):
        record = not_called(plugin, operation.action, failure, why)
        event_rows.add_lifecycle_event(session, stack, operation.id, record.as_dict(),
                                       record.summary(), now)
    transitions.settle(operation)


def _notifying_operations(session: DbSession, stack_id: str) -> list[Operation]:
    """The stack's operations that are finished but still owe post-ops, locked, oldest
    first (there is one at most: the next operation waits for its post-ops)."""
    found = [operation for operation, _stack in admin.list_operations(
        session, unfinished_only=True, stack_id=stack_id)
        if operation.state == OperationState.NOTIFYING]
    locked = [session.get(Operation, operation.id, with_for_update=True,
                          populate_existing=True) for operation in reversed(found)]
    return [operation for operation in locked
            if operation is not None and operation.state == OperationState.NOTIFYING]


def _holders(session: DbSession, operations: Sequence[Operation]) -> set[str]:
    """The workers whose claim on one of ``operations``, or on one of their steps, still
    stands (neither fenced nor stopped)."""
    held = admin.step_holders(session, [operation.id for operation in operations])
    holders = {owner for operation in operations for owner in held.get(operation.id, {})}
    holders.update(admin.standing_claims(
        session, {operation.lease_owner for operation in operations if operation.lease_owner}))
    return holders


class OperatorService:
    def __init__(self, db: Database, clock: Clock, reads: StackReads,
                 tenants: TenantService, workers: WorkerService) -> None:
        self._db = db
        self._clock = clock
        self._reads = reads
        self._tenants = tenants
        self._workers = workers

    # --- stacks -------------------------------------------------------------------------

    def find_stack(self, name_or_id: str, tenant: str | None = None) -> StackRef:
        """A stack by id (deleted ones too) or by live name, in any tenant unless
        ``tenant`` (name or id) narrows it. A name used in several tenants is an error
        that names them."""
        tenant_id = self._tenants.get_tenant(tenant).id if tenant else None
        with self._db.read() as session:
            found = admin.find_stacks(session, name_or_id, tenant_id)
            names = admin.tenant_names(session, {stack.tenant_id for stack in found})
        if not found:
            raise EntityNotFound(entity="Stack", name=name_or_id)
        if len(found) > 1:
            raise AmbiguousName(
                kind="Stack", name=name_or_id,
                choices=", ".join(f"{s.id} in tenant {names.get(s.tenant_id, s.tenant_id)}"
                                  for s in found),
                hint="give the stack id, or the tenant with --tenant")
        stack = found[0]
        return StackRef(stack.id, stack.name, stack.tenant_id,
                        names.get(stack.tenant_id, stack.tenant_id))

    def list_stacks(self, wanted: StackFilter) -> list[ListedStack]:
        if wanted.order not in STACK_ORDERS:
            raise InvalidFilter(keys=[f"sort {wanted.order}"])
        tenant_id = self._tenants.get_tenant(wanted.tenant).id if wanted.tenant else None
        actions, statuses = split_statuses(wanted.statuses)
        unknown = [value for value in wanted.statuses if not split_statuses([value])[1]]
        if unknown:
            raise InvalidFilter(keys=[f"status {value}" for value in unknown])
        cutoff = self._clock() - wanted.older_than if wanted.older_than else None
        with self._db.read() as session:
            rows = admin.list_stacks(
                session, tenant_id=tenant_id, names=wanted.names,
                actions=sorted({a.upper() for a in wanted.actions} | actions),
                statuses=sorted(statuses), changed_before=cutoff,
                show_deleted=wanted.show_deleted, show_nested=wanted.show_nested,
                order=wanted.order, descending=wanted.descending, limit=wanted.limit)
            names = admin.tenant_names(session, {row.tenant_id for row in rows})
            return [ListedStack(stack_record(None, row), names.get(row.tenant_id, row.tenant_id))
                    for row in rows]

    def count_stacks(self, tenant_id: str) -> int:
        """The tenant's live stacks."""
        with self._db.read() as session:
            return admin.count_stacks(session, tenant_id, live_only=True)

    def stack(self, ref: StackRef) -> StackRecord:
        return self._reads.get(ref.context(), ref.name, ref.id)

    # --- operations ---------------------------------------------------------------------

    def operations(self, *, unfinished_only: bool = True, stack: StackRef | None = None,
                   limit: int | None = None) -> list[OperationRecord]:
        with self._db.read() as session:
            rows = admin.list_operations(session, unfinished_only=unfinished_only,
                                         stack_id=stack.id if stack else None, limit=limit)
            return self._records(session, rows)

    @staticmethod
    def check_operator(ctx: RequestContext) -> None:
        """Refuses a request for every tenant's operations unless its token is an
        admin's: the endpoint asks before it reads its query, so that a member's bad
        query is a 403 too, as every operator read answers a member."""
        if not ctx.is_admin:
            raise OperatorViewForbidden(what="the operations")

    def list_operations(self, ctx: RequestContext, *, unfinished_only: bool = True,
                        stack_id: str | None = None, limit: int | None = None
                        ) -> list[OperationRecord]:
        """:meth:`operations` for a request (the console's operations page): an admin's
        only, every tenant's; ``stack_id`` (an id, or a name no two tenants share)
        narrows it to one stack."""
        self.check_operator(ctx)
        stack = self.find_stack(stack_id) if stack_id is not None else None
        return self.operations(unfinished_only=unfinished_only, stack=stack, limit=limit)

    def operation(self, id_or_prefix: str) -> OperationRecord:
        with self._db.read() as session:
            rows = admin.find_operations(session, id_or_prefix)
            if len(rows) > 1:
                raise AmbiguousName(kind="Operation", name=id_or_prefix,
                                    choices=", ".join(op.id for op, _stack in rows),
                                    hint="give more of the id")
            if not rows:
                raise EntityNotFound(entity="Operation", name=id_or_prefix)
            return self._records(session, rows)[0]

    def current_operation(self, ref: StackRef) -> OperationRecord | None:
        """The stack's operation that has not finished its post-ops, if any."""
        found = self.operations(stack=ref, limit=1)
        return found[0] if found else None

    def cancel_operation(self, id_or_prefix: str) -> OperationRecord:
        """Have a worker end the operation now, failed and without rollback, as a
        tenant's ``cancel_without_rollback`` does; a PENDING one never starts."""
        operation_id = self.operation(id_or_prefix).id
        now = self._clock()
        with self._db.transaction() as session:
            operation = session.get(Operation, operation_id, with_for_update=True)
            if operation is None:
                raise EntityNotFound(entity="Operation", name=id_or_prefix)
            if operation.finished_at is not None:
                raise NothingToCancel(id=operation.id, state=operation.state)
            transitions.request_cancel(operation, CancelReason.OPERATOR, now)
        return self.operation(operation_id)

    def _records(self, session: DbSession, rows: Sequence[tuple[Operation, Stack]]
                 ) -> list[OperationRecord]:
        counts = admin.step_counts(session, [op.id for op, _stack in rows])
        unsettled = [op for op, _stack in rows if not _settled(op)]
        holding = admin.step_holders(session, [op.id for op in unsettled])
        standing = admin.standing_claims(
            session, {op.lease_owner for op in unsettled if op.lease_owner})
        alive = {w.id for w in self._workers.list_workers() if w.alive}
        records = []
        for op, stack in rows:
            holders = holding.get(op.id, {})
            leases = {owner: expires for owner, (_count, expires) in holders.items()}
            if op.lease_owner in standing and not _settled(op):
                leases[op.lease_owner] = standing[op.lease_owner]
            ends = [expires for expires in leases.values() if expires is not None]
            records.append(OperationRecord(
                id=op.id, stack_id=stack.id, stack_name=stack.name, tenant_id=stack.tenant_id,
                action=op.action, state=op.state, attempt=op.attempt,
                created_at=op.created_at, updated_at=op.updated_at,
                finished_at=op.finished_at, deadline_at=op.deadline_at,
                held_by=tuple(sorted(leases)),
                lease_expires_at=max(ends) if ends else None,
                holder_alive=bool(set(leases) & alive) if leases else None,
                failure_reason=op.failure_reason,
                cancelled=transitions.cancelled_by(op) is not None,
                steps=counts.get(op.id, admin.StepCounts()),
                step_holders={owner: count for owner, (count, _exp) in holders.items()},
                awaiting_approval=_awaited(op)))
        return records

    # --- repair -------------------------------------------------------------------------

    def reset_state(self, ref: StackRef, to: str, reason: str, actor: str, *,
                    force: bool = False, skip_post_ops: bool = False) -> StackRecord:
        """Set the stack to ``<ACTION>_<to>`` and end its unfinished operation (its open
        steps cancelled, resources mid-action marked FAILED), recording an event that
        says who did it and why. Refused while a live worker holds the operation or
        one of its steps, unless ``force``. The post-ops the ended operation still owes
        are left to a worker (told the stack is ``to``), so lifecycle plugins release
        what they reserved for it; with ``skip_post_ops`` they are never called and an
        event per plugin says so. An operation finished for the stack but still owing
        post-ops (NOTIFYING: a worker stuck in one, or gone) is taken from its worker
        the same way: its post-ops handed to the next worker, told ``to``, or skipped."""
        if to not in RESET_STATUSES:
            raise InvalidFilter(keys=[f"--to {to}"])
        now = self._clock()
        alive = {w.id: w for w in self._workers.list_workers() if w.alive}
        with self._db.transaction() as session:
            stack = stack_rows.get_stack(session, ref.tenant_id, ref.name, ref.id, for_update=True)
            operation = stack_rows.unfinished_operation(session, stack.id)
            # Oldest first: the unfinished one (if any) waits for the notifying one.
            ending = [*_notifying_operations(session, stack.id), *filter(None, [operation])]
            live = sorted(_holders(session, ending) & set(alive))
            if live and not force:
                raise StackHeld(stack=stack.name, workers=", ".join(
                    f"{w} on {alive[w].host} (pid {alive[w].pid})" for w in live))
            for ended in ending:
                transitions.end_operation(session, stack, ended,
                                          reasons.reset_by_operator(actor), now, Status(to))
            action = stack_action(operation.action) if operation else stack.action
            transitions.reset_stack(session, stack, action, to,
                                    reasons.stack_reset(action, to, actor, reason), now)
            if skip_post_ops:
                for ended in ending:
                    _forgo_post_ops(session, stack, ended,
                                    reasons.post_ops_skipped_by_operator(actor), now)
        return self.stack(ref)

    def purge_deleted(self, older_than: datetime.timedelta, *, dry_run: bool = False,
                      batch_size: int = 100) -> Iterator[list[admin.PurgedStack]]:
        """Soft-deleted stacks deleted longer ago than ``older_than``, one batch (one
        transaction) at a time, removed with their resources, events and operations
        unless ``dry_run``; yields each batch as it goes."""
        cutoff = self._clock() - older_than
        after: tuple[datetime.datetime, str] | None = None
        while True:
            with self._db.transaction() as session:
                batch = admin.deleted_before(session, cutoff, batch_size, after)
                if batch and not dry_run:
                    admin.delete_stacks(session, [stack.id for stack in batch])
            if not batch:
                return
            yield batch
            after = (batch[-1].deleted_at, batch[-1].id) if dry_run else None

    # --- workers ------------------------------------------------------------------------

    def forget_worker(self, id_or_prefix: str) -> WorkerRecord:
        return self._workers.forget(id_or_prefix)
