"""Drives one operation through its phases: pre-ops, plan (write steps), time out,
finish (store the final stack state), post-ops.

Each database phase runs in one transaction under the operation's claim, so a worker
that dies mid-phase leaves nothing half-written: it is fenced once its liveness lapses
and another worker redoes the phase. Lifecycle plugin calls run between those
transactions (see ``lifecycle_calls``). A phase that fails on an unexpected error is
tried again a moment later, and after a few tries the operation is ended as FAILED
(``poison``).
"""

from __future__ import annotations

import datetime
import functools
import logging
from collections.abc import Callable

from engine import logs, metrics, reasons
from engine.clock import Clock
from engine.db import event_rows, resource_rows, snapshot_rows, stack_rows, transitions
from engine.db.leases import (
    LeaseLost,
    back_off_operation,
    park_operation,
    release_operation,
)
from engine.db.models import Operation, Stack
from engine.db.session import Database, DbSession, after_commit
from engine.errors import DatabaseUnavailable, KilnError
from engine.ir.model import ResolvedStack
from engine.ir.plan import ExistingResource, Plan, plan_create, plan_stored, plan_update
from engine.ir.stored import StoredIrs, redefinition
from engine.lifecycle.runner import CallRecord, not_called
from engine.resources.abandon_data import layout
from engine.resources.outputs import StackOutput, output_resources, resolve_outputs
from engine.resources.registry import ResourceTypeRegistry
from engine.vocabulary import (
    UPDATE_LIKE,
    Action,
    CancelReason,
    OperationState,
    Status,
    stack_action,
)
from engine.worker.lifecycle_calls import LifecycleCalls
from engine.worker.liveness import NotLive
from engine.worker.poison import PoisonRule
from engine.worker.stored_scope import operation_secrets

LOG = logging.getLogger(__name__)
# Operations whose steps act on the stored resources rather than on a new IR.
STORED_ACTIONS = (Action.DELETE, Action.SUSPEND, Action.RESUME, Action.CHECK,
                  Action.SNAPSHOT)


class OperationDriver:
    def __init__(self, db: Database, registry: ResourceTypeRegistry, owner: str,
                 clock: Clock, lifecycle_calls: LifecycleCalls, *, irs: StoredIrs,
                 rule: PoisonRule | None = None) -> None:
        self._db = db
        self._rule = rule or PoisonRule()
        self._registry = registry
        self._irs = irs
        self._owner = owner
        self._clock = clock
        self._lifecycle_calls = lifecycle_calls

    def advance(self, operation_id: str) -> None:
        """Do whichever phases the claimed operation is ready for, then release it. Every
        line logged meanwhile, the lifecycle plugins' included, names the operation, its
        stack and the request that started it (``engine.logs``), with the stack's hidden
        values masked."""
        with self._db.read() as session:
            label = stack_rows.operation_labels(session, [operation_id]).get(operation_id)
            secrets = () if label is None else _secrets(session, operation_id, label.stack_id)
        with logs.bound(secrets=secrets,
                        **(label._asdict() if label else {"operation_id": operation_id})):
            try:
                outcome = self._guarded(operation_id, self._phases)
                if outcome is not None:
                    self._guarded(operation_id,
                                  functools.partial(self._notify, outcome=outcome))
            except LeaseLost:
                LOG.warning("operation %s was taken over by another worker", operation_id)

    def _guarded(self, operation_id: str, run: Callable[[str], str | None]) -> str | None:
        """``run`` a phase; an unexpected error in it is logged and the operation given
        back to be tried again after a wait (or ended, when giving up failed)."""
        try:
            return run(operation_id)
        except (LeaseLost, DatabaseUnavailable, NotLive):
            raise  # not the operation's fault: its claim (or the database) decides
        except Exception as exc:  # noqa: BLE001 -- a Kiln bug; plugins' errors are state
            self._failed(operation_id, exc)
            return None

    def _phases(self, operation_id: str) -> str | None:
        if self._needs_pre_ops(operation_id):
            self._lifecycle_calls.pre_ops(operation_id)
        return self._transition(operation_id)

    def _notify(self, operation_id: str, outcome: str) -> None:
        self._lifecycle_calls.post_ops(operation_id, is_stack_failure=outcome == Status.FAILED)
        self._close(operation_id)

    def _needs_pre_ops(self, operation_id: str) -> bool:
        with self._db.read() as session:
            operation = session.get(Operation, operation_id)
            return (operation is not None and operation.lease_owner == self._owner
                    and operation.state == OperationState.PENDING
                    and not self._rule.spent(operation.failures)
                    and transitions.cancelled_by(operation) is None)

    def _transition(self, operation_id: str) -> str | None:
        """The database phases, in one transaction. Returns the outcome (COMPLETE or
        FAILED) when post-ops are owed, keeping the lease for them."""
        now = self._clock()
        with self._db.transaction() as session:
            operation = session.get(Operation, operation_id, with_for_update=True)
            if operation is None or operation.lease_owner != self._owner:
                return None
            notifying = operation.state == OperationState.NOTIFYING
            if self._rule.spent(operation.failures):
                outcome = self._give_up(session, operation, now)
            else:
                outcome = self._phase(session, operation, now)
            if outcome is None:
                release_operation(session, operation)
                until = transitions.parked_until(operation)
                if until is not None:
                    # Waiting for a person: no worker holds it until a decision (or a
                    # cancel) wakes it, or its approval window ends.
                    park_operation(session, operation, until)
            elif not notifying:
                # This phase is done; the post-ops, begun under this claim, are the
                # first try of a phase of their own.
                operation.failures = 1
            return outcome

    def _phase(self, session: DbSession, operation: Operation, now: datetime.datetime
               ) -> str | None:
        if operation.state == OperationState.NOTIFYING:
            return str(operation.lifecycle["outcome"])
        stack = stack_rows.load_stack(session, operation.stack_id)
        if operation.state in (OperationState.PENDING, OperationState.RUNNING) \
                and transitions.cancelled_by(operation) is not None:
            self._time_out(session, operation, stack, now)
        elif operation.state == OperationState.PENDING:
            self._plan(session, operation, stack, now)
        elif operation.state == OperationState.RUNNING and operation.deadline_at <= now:
            self._time_out(session, operation, stack, now)
        if operation.state == OperationState.FINISHING:
            self._finish(session, operation, stack, now)
        if operation.state == OperationState.NOTIFYING:
            return str(operation.lifecycle["outcome"])
        return None

    def _failed(self, operation_id: str, exc: Exception) -> None:
        """Count a phase that raised: give the operation back to be tried again after a
        wait; the claim after the last try gives up (``_give_up``). Should giving up be
        what raised, end the operation with the fewest writes (``_abandon``)."""
        now = self._clock()
        with self._db.transaction() as session:
            operation = session.get(Operation, operation_id, with_for_update=True)
            if operation is None or operation.lease_owner != self._owner:
                LOG.error("operation %s failed unexpectedly, and is no longer ours",
                          operation_id, exc_info=exc)
                return
            LOG.error("operation %s (%s of stack %s, request %s) failed unexpectedly while "
                      "%s, try %d of %d", operation.id, operation.action, operation.stack_id,
                      stack_rows.request_id_of(session, operation.id), operation.state.lower(),
                      operation.failures, self._rule.attempts, exc_info=exc)
            if self._rule.spent(operation.failures):
                self._abandon(session, operation, now)
            else:
                back_off_operation(session, operation,
                                   now + self._rule.backoff(operation.failures))

    def _close(self, operation_id: str) -> None:
        with self._db.transaction() as session:
            operation = session.get(Operation, operation_id, with_for_update=True)
            if operation is None or operation.lease_owner != self._owner:
                raise LeaseLost(operation_id)
            transitions.settle(operation)
            release_operation(session, operation)

    # --- phases -------------------------------------------------------------------------

    def _give_up(self, session: DbSession, operation: Operation, now: datetime.datetime
                 ) -> str | None:
        """End an operation whose phase kept failing (a Kiln bug, logged each time, or a
        phase that killed its workers): better a FAILED stack an operator can see than
        a retry every lease for ever. Nothing of the failing phase is run again: no
        plan, no outputs, no rollback; the resources its running steps were acting on
        are FAILED, as a time-out leaves them. Returns the outcome when post-ops are
        owed (they are told ``is_stack_failure``); when the post-ops are what kept
        failing, the operation is settled without them."""
        request_id = stack_rows.request_id_of(session, operation.id)
        if operation.state == OperationState.NOTIFYING:
            LOG.error("operation %s (request %s): post-ops abandoned after %d tries",
                      operation.id, request_id, self._rule.attempts)
            _forgo_post_ops(session, operation, reasons.post_ops_given_up(self._rule.attempts),
                            now)
            transitions.settle(operation)
            return None
        stack = stack_rows.load_stack(session, operation.stack_id)
        transitions.owe_post_ops(operation)
        reason = self._internal_error(operation, request_id)
        LOG.error("operation %s (request %s): given up after %d tries; stack %s/%s %s",
                  operation.id, request_id, self._rule.attempts, stack.name, stack.id,
                  reason)
        transitions.give_up(session, operation, stack, reasons.aborted(operation.action),
                            reason, now, waiting_reason=reasons.HOOK_WAIT_FAILED)
        _log_end(session, operation, stack, Status.FAILED, now)
        return Status.FAILED if operation.state == OperationState.NOTIFYING else None

    def _abandon(self, session: DbSession, operation: Operation, now: datetime.datetime) -> None:
        """Giving up failed too: end the operation with the fewest writes, no post-ops
        (logged, and an event per plugin owed one), no follow-up operation. Only scalar
        columns are written, so a value that cannot be stored (an output, a lifecycle
        record) is not written again."""
        LOG.error("operation %s: giving up failed too; ending it without post-ops",
                  operation.id)
        request_id = stack_rows.request_id_of(session, operation.id)
        _forgo_post_ops(session, operation, reasons.POST_OPS_ABANDONED, now)
        ending = operation.finished_at is None  # else it ended already, and was counted
        transitions.abandon(session, operation, self._internal_error(operation, request_id),
                            now)
        if ending:
            _count_end(session, operation, Status.FAILED, now)
        release_operation(session, operation)

    def _internal_error(self, operation: Operation, request_id: str) -> str:
        error = self._rule.internal_error(f"operation {operation.id}", request_id)
        return reasons.stack_failed(operation.action, error.message)

    def _plan(self, session: DbSession, operation: Operation, stack: Stack,
              now: datetime.datetime) -> None:
        if transitions.awaited_approval(operation) is not None:
            return  # parked (``_transition``); the pre-ops go on once it is decided
        transitions.owe_post_ops(operation)
        pre = operation.lifecycle.get("pre", [])
        denial = next((item for item in pre if item.get("blocking")), None)
        if denial is not None:
            transitions.stop(operation, CallRecord(**denial).summary())
            return
        action, payload = operation.action, operation.payload or {}
        if action in (Action.DELETE, Action.ABANDON):
            # As Heat's delete (and abandon) does first: the snapshots go with the stack.
            snapshot_rows.delete_stack_snapshots(session, stack.id)
        # The rows' outlines, not the rows: a plan needs no properties, no data.
        rows = {row.name: row for row in resource_rows.list_outlines(session, stack.id)}
        stored = {name: ExistingResource(name, frozenset(row.requires or ()),
                                         replaced=row.replaced)
                  for name, row in rows.items()}
        ir: ResolvedStack | None = None
        if action == Action.ABANDON:
            plan = Plan(Action.ABANDON, ())  # the resources stay where they are
        elif action in STORED_ACTIONS:
            plan = plan_stored(stored, action)
        elif action == Action.ROLLBACK and payload.get("kind") == "create":
            # undo the create: delete it all
            plan = plan_stored(stored, Action.ROLLBACK, Action.DELETE)
        else:
            if action in UPDATE_LIKE:
                # The stack takes its new definition now: the steps evaluate it. The
                # pre-ops' views took it the same way (Redefined.of).
                (stack.template, stack.parameters, stack.environment,
                 stack.files) = redefinition(payload["target"], stack.files)
                stack.updated_at = now
            try:
                # Built already when the pre-ops viewed the new definition: one IR for both.
                ir = self._irs.for_operation(operation.id, stack)
            except KilnError as exc:
                # The template was valid when accepted; a type uninstalled since is the
                # usual cause. Fail the operation rather than the worker.
                transitions.stop(operation, reasons.resource_failed(action, exc))
                return
            widened: dict[int, list[str]] = {}
            new: list[resource_rows.NewResource] = []
            for name, node in ir.resources.items():
                row = rows.get(name)
                if row is None:
                    new.append(resource_rows.NewResource(name, node.type_name,
                                                         sorted(node.requires)))
                    continue
                # Until the update ends, both the old and the new users count.
                requires = sorted(set(row.requires or ()) | node.requires)
                if requires != row.requires:
                    widened[row.id] = requires
            resource_rows.set_requires(session, widened)
            resource_rows.add_resources(session, stack.id, new, now)
            plan = (plan_update(ir, stored, action) if action in UPDATE_LIKE
                    else plan_create(ir, action))
        types = {name: row.type for name, row in rows.items()}
        if ir is not None:
            types.update({name: node.type_name for name, node in ir.resources.items()})
        transitions.start_steps(session, operation,
                                {step.key: sorted(step.requires) for step in plan.steps},
                                types)

    def _time_out(self, session: DbSession, operation: Operation, stack: Stack,
                  now: datetime.datetime) -> None:
        """End a running operation past its deadline, or one a tenant cancelled."""
        transitions.owe_post_ops(operation)
        transitions.abort_open_steps(session, operation, stack,
                                     reasons.aborted(operation.action), now,
                                     waiting_reason=reasons.HOOK_WAIT_FAILED)
        cancelled = transitions.cancelled_by(operation) is not None
        transitions.stop(operation, reasons.operation_cancelled(operation.action)
                         if cancelled else reasons.timed_out(operation.action))

    def _finish(self, session: DbSession, operation: Operation, stack: Stack,
                now: datetime.datetime) -> None:
        failed = operation.failure_reason is not None
        action = operation.action
        if action in UPDATE_LIKE:
            resource_rows.drop_deleted_resources(session, stack.id)  # what the update removed
        if action in (Action.CREATE, Action.ADOPT, *UPDATE_LIKE):
            stack.outputs = [dict(o) for o in self._outputs(session, operation.id, stack)]
        if failed:
            status, reason = Status.FAILED, operation.failure_reason or ""
        else:
            status, reason = Status.COMPLETE, reasons.stack_completed(action)
            if action == Action.CHECK:
                reason += self._check_caveat(session, stack)
            if action in (Action.DELETE, Action.ABANDON):
                # Abandon forgets the resources; delete has removed them.
                transitions.mark_stack_deleted(session, stack, now)
            if action in UPDATE_LIKE:
                self._settle_requires(session, operation.id, stack)
        if action == Action.SNAPSHOT:
            # Kept whatever the outcome, as Heat keeps a failed snapshot's data.
            # Heat's snapshot: the abandon layout with the snapshot's status, nothing
            # masked (the restore takes the hidden values from it).
            snapshot_rows.settle(session, operation, status, reason, now, layout(
                stack, resource_rows.list_resources(session, stack.id), status))
        transitions.conclude(session, operation, stack, status, reason, now)
        _log_end(session, operation, stack, status, now)
        if failed and _rolls_back(operation, stack):
            transitions.start_rollback(session, operation, stack,
                                       reasons.stack_started(Action.ROLLBACK), now)

    def _settle_requires(self, session: DbSession, operation_id: str, stack: Stack) -> None:
        """After a completed update only the new template's dependencies hold."""
        try:
            ir = self._irs.for_operation(operation_id, stack)
        except KilnError:
            return
        settled: dict[int, list[str]] = {}
        for row in resource_rows.list_outlines(session, stack.id):
            node = ir.resources.get(row.name)
            if node is not None and sorted(node.requires) != row.requires:
                settled[row.id] = sorted(node.requires)
        resource_rows.set_requires(session, settled)

    def _check_caveat(self, session: DbSession, stack: Stack) -> str:
        """Heat's suffix when some resource types have no real check."""
        for row in resource_rows.list_outlines(session, stack.id):
            cls = self._registry.for_stored(row.type)
            if cls is None or not cls.check_supported:
                return reasons.CHECK_NOT_FULLY_SUPPORTED
        return ""

    def _outputs(self, session: DbSession, operation_id: str, stack: Stack
                 ) -> list[StackOutput]:
        """Resolve every output now (``engine.resources.outputs``), for what reads them
        stored: a parent's nested-stack resource, and a show once the template no
        longer builds."""
        try:
            ir: ResolvedStack = self._irs.for_operation(operation_id, stack)
        except KilnError:
            return []
        if not ir.outputs:
            return []  # and no row read
        rows = resource_rows.list_resources_named(session, stack.id,
                                                  sorted(output_resources(ir)))
        return resolve_outputs(ir, stack, {row.name: row for row in rows}, self._registry,
                               self._clock).outputs


def _secrets(session: DbSession, operation_id: str, stack_id: str) -> tuple[str, ...]:
    """The hidden values the operation may handle; the row read for them is not kept
    through the phases (an update's payload holds both templates)."""
    operation = session.get(Operation, operation_id)
    if operation is None:
        return ()
    return operation_secrets(stack_rows.load_stack(session, stack_id), operation.payload)


def _log_end(session: DbSession, operation: Operation, stack: Stack, status: Status,
             now: datetime.datetime) -> None:
    LOG.info("stack %s/%s %s %s", stack.name, stack.id, stack_action(operation.action),
             status)
    _count_end(session, operation, status, now)


def _count_end(session: DbSession, operation: Operation, status: Status,
               now: datetime.datetime) -> None:
    """Count the operation's end in the metrics once it commits: the stack's final
    status, or CANCELLED for one a cancel failed."""
    cancelled = status == Status.FAILED and transitions.cancelled_by(operation) is not None
    after_commit(session, functools.partial(
        metrics.operation_finished, operation.action,
        metrics.CANCELLED if cancelled else str(status),
        (now - operation.created_at).total_seconds()))


def _forgo_post_ops(session: DbSession, operation: Operation, why: str,
                    now: datetime.datetime) -> None:
    """The operation ends without the post-ops it still owes: an event for each plugin
    left uncalled says so and why, rather than a silent skip."""
    owed = transitions.owed_post_ops(operation)
    if not owed:
        return
    stack = stack_rows.load_stack(session, operation.stack_id)
    failure = operation.lifecycle.get("outcome") != Status.COMPLETE
    for plugin in owed:
        record = not_called(plugin, operation.action, failure, why)
        event_rows.add_lifecycle_event(session, stack, operation.id, record.as_dict(),
                                       record.summary(), now)
    LOG.error("operation %s: post-ops never called: %s (%s)", operation.id,
              ", ".join(owed), why)


def _rolls_back(operation: Operation, stack: Stack) -> bool:
    """A failed create or update is rolled back when rollback is enabled, or always
    after cancel_update; never when it failed before touching anything (a denial)."""
    payload = operation.payload or {}
    if operation.action not in (Action.CREATE, Action.UPDATE) or not payload.get("planned"):
        return False
    cancelled = transitions.cancelled_by(operation)
    if cancelled is not None:
        return cancelled == CancelReason.CANCEL_UPDATE
    return not stack.disable_rollback
