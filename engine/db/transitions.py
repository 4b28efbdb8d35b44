"""The named state transitions of stacks, operations and resources: every change of a
row's action/status/state goes through one of these, so each is written (with its event)
in one place and read by its name.

Functions take the caller's session and change rows in the caller's transaction; they
never commit. User-facing wording (Heat's status reasons, ``engine.reasons``) is passed
in by the caller, which owns the words; this layer only stores them."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, cast

from sqlalchemy.orm import Session

from engine.db import (
    admin,
    event_rows,
    hooks,
    resource_rows,
    snapshot_rows,
    stack_rows,
    steps,
)
from engine.db.leases import wake_operation
from engine.db.models import (
    ApprovalState,
    Operation,
    OperationContext,
    OperationPayload,
    Resource,
    Stack,
    Step,
)
from engine.db.wakeup import work_written
from engine.vocabulary import Action, CancelReason, OperationState, Status, Verdict, stack_action

# --- resources ------------------------------------------------------------------------


def set_resource_state(session: Session, stack: Stack, row: Resource, action: Action | str,
                       status: Status | str, reason: str, now: datetime.datetime) -> None:
    """Set the resource's action, status and reason and write its event, together."""
    row.action, row.status, row.status_reason, row.updated_at = action, status, reason, now
    event_rows.add_resource_event(session, stack, row, reason, now)


class NewState(NamedTuple):
    """One resource's new state, for :func:`set_resource_states`: its row (id, name,
    type), its physical id (written with it, and its event's), the state, and the other
    columns written with it."""

    row_id: int
    name: str
    type: str
    physical_id: str | None
    action: str
    status: str
    reason: str
    values: Mapping[str, Any]


def set_resource_states(session: Session, stack: Stack, states: Sequence[NewState],
                        now: datetime.datetime) -> None:
    """:func:`set_resource_state` for many resources of ``stack`` read as outlines (not
    as objects), in a statement per set of columns written, their events in order."""
    resource_rows.write_rows(session, [
        {"id": new.row_id, "action": new.action, "status": new.status,
         "status_reason": new.reason, "updated_at": now, "physical_id": new.physical_id,
         **new.values} for new in states])
    for new in states:
        event_rows.add_event(session, stack_id=stack.id, resource_name=new.name,
                             physical_resource_id=new.physical_id or "",
                             resource_type=new.type, action=new.action, status=new.status,
                             reason=new.reason, now=now)


def mark_resource(session: Session, stack: Stack, row: Resource, action: Action | str,
                  status: Status | str, reason: str, now: datetime.datetime) -> None:
    """A state set by request (Heat's mark-unhealthy): the reason is written either way,
    the event only when the state changes."""
    if (row.action, row.status) != (action, status):
        set_resource_state(session, stack, row, action, status, reason, now)
    else:
        row.status_reason, row.updated_at = reason, now


# --- starting an operation ------------------------------------------------------------


def new_operation(context: OperationContext, stack_id: str, action: str,
                  now: datetime.datetime, timeout_seconds: int,
                  payload: OperationPayload | None = None) -> Operation:
    """A PENDING operation. ``context`` is the requester's (tenant, role, request id):
    lifecycle plugins are called with it, as Heat calls them with the request's."""
    return Operation(id=str(uuid.uuid4()), stack_id=stack_id, action=action,
                     state=OperationState.PENDING, attempt=0, created_at=now,
                     context=context.copy(), lifecycle={}, payload=payload,
                     deadline_at=now + datetime.timedelta(seconds=timeout_seconds))


def begin_stack(session: Session, stack: Stack, operation: Operation, reason: str,
                now: datetime.datetime) -> None:
    """Insert a new stack with its first operation (StackExists if the name is taken),
    shown ``<ACTION>_IN_PROGRESS`` with ``reason`` and its first event."""
    stack.action, stack.status = stack_action(operation.action), Status.IN_PROGRESS
    stack.status_reason = reason
    stack_rows.add_stack_with_operation(session, stack, operation, now)


def begin(session: Session, stack: Stack, operation: Operation, reason: str,
          now: datetime.datetime) -> None:
    """Store ``operation`` on ``stack`` (ActionInProgress if one is unfinished) and show
    the stack ``<ACTION>_IN_PROGRESS`` with ``reason`` and its event."""
    stack_rows.add_operation(session, stack, operation)
    action = operation.action
    stack.action, stack.status = stack_action(action), Status.IN_PROGRESS
    stack.status_reason = reason
    if action not in (Action.DELETE, Action.ABANDON):
        stack.updated_at = now
    event_rows.add_stack_event(session, stack, now)


def request_cancel(operation: Operation, cancelled_by: CancelReason,
                   now: datetime.datetime) -> None:
    """Have a worker end ``operation`` now: it claims an operation past its deadline, and
    the payload says why, so the reason is "Operation cancelled" rather than a time-out
    (``stop``) and whether a rollback follows."""
    operation.payload = {**(operation.payload or {}), "cancelled": cancelled_by}
    operation.deadline_at = now
    wake_operation(operation)  # one parked for approval ends now, not when its window does


def cancelled_by(operation: Operation) -> str | None:
    """Who had ``operation`` ended early (a ``CancelReason``), or None: the one reader of
    what ``request_cancel`` writes."""
    return (operation.payload or {}).get("cancelled") or None


def cancel_then_delete(session: Session, stack: Stack, running: Operation,
                       context: OperationContext, timeout_seconds: int, reason: str,
                       now: datetime.datetime) -> None:
    """Have ``running`` ended now (without rollback) and a DELETE follow it, as Heat's
    delete of a busy stack does (``conclude`` starts it); the stack shows the delete
    from now, with ``reason``."""
    request_cancel(running, CancelReason.DELETE, now)
    running.payload = {**(running.payload or {}), "then": {
        "action": Action.DELETE, "context": context.copy(),
        "timeout_seconds": timeout_seconds}}
    stack.action, stack.status = Action.DELETE, Status.IN_PROGRESS
    stack.status_reason = reason
    event_rows.add_stack_event(session, stack, now)


# --- a worker's phases ----------------------------------------------------------------


def start_steps(session: Session, operation: Operation,
                requires: Mapping[steps.StepKey, Sequence[steps.StepKey]],
                types: Mapping[str, str]) -> None:
    """The plan is written as steps: the operation is RUNNING (FINISHING when the plan
    has none), and from now on its resources may be touched (``planned``)."""
    operation.payload = {**(operation.payload or {}), "planned": True}
    steps.add_steps(session, operation, requires, types)
    operation.state = OperationState.RUNNING if operation.open_steps \
        else OperationState.FINISHING


def stop(operation: Operation, failure_reason: str) -> None:
    """The operation acts no more (a time-out, a cancel, a denial, a plan that failed):
    it is FINISHING, failed with ``failure_reason``."""
    operation.failure_reason = failure_reason
    operation.state = OperationState.FINISHING


def fail_step(session: Session, stack: Stack, step: Step, owner: str, reason: str,
              now: datetime.datetime, *, waiting_reason: str) -> bool:
    """Fail ``step`` (``steps.fail_step``; False if it is no longer ours). The steps of
    its operation parked at a breakpoint wait no more: their resources keep their state,
    with an event saying so (``waiting_reason``), as Heat's do when a sibling fails."""
    failed = steps.fail_step(session, step, owner, now, reason)
    if failed is None:
        return False
    for name in failed.unwaited:
        row = resource_rows.get_resource(session, stack, name)
        event_rows.add_resource_event(session, stack, row, waiting_reason, now)
    return True


def abort_open_steps(session: Session, operation: Operation, stack: Stack, reason: str,
                     now: datetime.datetime, *, waiting_reason: str) -> None:
    """Cancel the operation's open steps; the resources they were acting on are FAILED
    with ``reason``, so none is left IN_PROGRESS under a stack that ended. Those waiting
    at a breakpoint (``hooks.waiting``) keep their state (they are not mid-action) with
    an event saying so (``waiting_reason``), as Heat's do."""
    waiting = hooks.end_waits(session, operation.id)
    for name in steps.cancel_open_steps(session, operation, now):
        row = resource_rows.get_resource(session, stack, name)
        if name in waiting:
            event_rows.add_resource_event(session, stack, row, waiting_reason, now)
        else:
            set_resource_state(session, stack, row, row.action, Status.FAILED, reason, now)


def mark_stack_deleted(session: Session, stack: Stack, now: datetime.datetime) -> None:
    """A completed delete (its resources removed) or abandon (its resources forgotten):
    the stack row stays, soft-deleted, without resources or outputs."""
    resource_rows.delete_resources(session, stack.id)
    stack.deleted_at = now
    stack.outputs = None


def conclude(session: Session, operation: Operation, stack: Stack, status: Status,
             reason: str, now: datetime.datetime) -> None:
    """Write the stack's final state with ``reason`` and its event, and close the
    operation: NOTIFYING while post-ops are owed, else COMPLETE or FAILED. When a delete
    cancelled the operation, the delete is started instead (the stack shows it already)."""
    # finished_at frees the stack for its next operation (written first: the
    # one-unfinished-operation index must see it before a follow-up is inserted);
    # that one still waits for the post-ops (see leases.claim_operations).
    operation.finished_at = now
    session.flush()
    snapshot_rows.settle(session, operation, status, reason, now)
    follow_up = (operation.payload or {}).get("then")
    if follow_up:
        # The stack already shows the delete, which starts now (after this operation's
        # post-ops).
        session.add(new_operation(follow_up["context"], stack.id, follow_up["action"],
                                  now, int(follow_up["timeout_seconds"])))
        work_written(session)
    else:
        # Heat has no ABANDON stack state: an abandoned stack ends as deleted.
        stack.action, stack.status = stack_action(operation.action), status
        stack.status_reason = reason
        event_rows.add_stack_event(session, stack, now)
    operation.lifecycle = {**operation.lifecycle, "outcome": status}
    if operation.lifecycle.get("post_order"):
        operation.state = OperationState.NOTIFYING
    else:
        settle(operation)


def start_rollback(session: Session, failed: Operation, stack: Stack, reason: str,
                   now: datetime.datetime) -> None:
    """Queue the rollback of a failed create or update as an operation of its own (with
    its own lifecycle calls; it waits for the failed one's post-ops); the stack shows
    ``ROLLBACK_IN_PROGRESS`` with ``reason`` from now."""
    payload = failed.payload or {}
    rollback: OperationPayload
    if failed.action == Action.UPDATE:
        rollback = {"kind": "update", "target": payload["previous"],
                    "previous": payload["target"]}
    else:
        rollback = {"kind": "create"}
    timeout = int((failed.deadline_at - failed.created_at).total_seconds())
    # A row whose context is JSON null (none was recorded) still rolls back.
    context = failed.context or cast("OperationContext", {})
    session.add(new_operation(context, stack.id, Action.ROLLBACK, now,
                              max(timeout, 60), rollback))
    work_written(session)
    stack.action, stack.status = Action.ROLLBACK, Status.IN_PROGRESS
    stack.status_reason = reason
    event_rows.add_stack_event(session, stack, now)


def owe_post_ops(operation: Operation) -> None:
    """Every plugin whose pre-op was called is owed a post-op (the one that denied
    included), in reverse order, so each can un-make what its pre-op decided. Fixed
    once, when the pre-ops end (however the operation then ends)."""
    if "post_order" not in operation.lifecycle:
        pre = operation.lifecycle.get("pre", [])
        operation.lifecycle = {**operation.lifecycle, "post_order": _called(pre)}


def owed_post_ops(operation: Operation) -> list[str]:
    """The plugins still owed a post-op, in calling order: those whose pre-op was called
    (``owe_post_ops``) less those whose post-op is recorded."""
    progress = operation.lifecycle or {}
    order = progress.get("post_order")
    if order is None:
        order = _called(progress.get("pre", []))
    done = {item["plugin"] for item in progress.get("post", [])}
    return [name for name in order if name not in done]


def _called(pre: list[dict[str, Any]]) -> list[str]:
    """The plugins whose pre-op was called, last first: a pre-op skipped for an
    unchanged cache key (verdict ``skipped``, engine.lifecycle.runner) decided nothing."""
    return [item["plugin"] for item in reversed(pre) if item.get("verdict") != Verdict.SKIPPED]


# --- approval gates ---------------------------------------------------------------------


def await_approval(operation: Operation, stack: Stack, record: Mapping[str, Any],
                   expires_at: datetime.datetime, reason: str,
                   now: datetime.datetime) -> None:
    """A pre-op asked for a person's decision (``record``, its pending call): the
    operation waits for one until ``expires_at``, the stack showing ``reason``."""
    approval: ApprovalState = {
        "plugin": record["plugin"], "message": record.get("message", ""),
        "override": bool(record.get("override")), "requested_at": now.isoformat(),
        "expires_at": expires_at.isoformat()}
    operation.lifecycle = {**operation.lifecycle, "approval": approval}
    stack.status_reason = reason


def awaited_approval(operation: Operation) -> ApprovalState | None:
    """The approval ``operation`` is parked for, undecided, or None: the one reader of
    what ``await_approval`` and ``decide_approval`` write."""
    progress = operation.lifecycle or {}
    pre = progress.get("pre", [])
    approval = progress.get("approval")
    if (operation.state != OperationState.PENDING or not pre or approval is None
            or pre[-1].get("verdict") != Verdict.PENDING):
        return None
    return approval


def parked_until(operation: Operation) -> datetime.datetime | None:
    """When a parked operation's approval window ends, or None if it is not parked: not
    waiting, or decided (or cancelled) and so to be taken up at once."""
    approval = awaited_approval(operation)
    if approval is None or "decision" in approval or cancelled_by(operation) is not None:
        return None
    return datetime.datetime.fromisoformat(approval["expires_at"])


def decide_approval(session: Session, operation: Operation, stack: Stack, decision: Verdict,
                    by: str, comment: str, reason: str, now: datetime.datetime) -> None:
    """A person approved or rejected the awaited approval (``awaited_approval``, not yet
    decided): recorded with who and why, as an event too, and the operation woken so that
    a worker takes it up (``settle_approval``)."""
    approval: ApprovalState = {**(awaited_approval(operation) or {}), "decision": decision,
                               "decided_by": by, "comment": comment,
                               "decided_at": now.isoformat()}
    operation.lifecycle = {**operation.lifecycle, "approval": approval}
    stack.status_reason = reason
    event_rows.add_lifecycle_event(session, stack, operation.id, {
        "plugin": approval.get("plugin", ""), "phase": "pre", "action": operation.action,
        "verdict": decision, "message": reason, "decided_by": by,
        "override": bool(approval.get("override"))}, reason, now)
    wake_operation(operation)
    work_written(session)


def settle_approval(operation: Operation, record: Mapping[str, Any],
                    now: datetime.datetime) -> None:
    """The awaited approval is decided (or expired): its pending call record becomes
    ``record`` (approved, or rejected or expired and so blocking). An approved operation
    goes on with the time it waited added to its deadline: the wait for a person is not
    the stack's time-out."""
    progress = operation.lifecycle
    approval = progress.get("approval", {})
    operation.lifecycle = {**progress, "pre": [*progress.get("pre", [])[:-1], dict(record)]}
    if record.get("verdict") == Verdict.APPROVED and "requested_at" in approval:
        operation.deadline_at += now - datetime.datetime.fromisoformat(
            approval["requested_at"])


def settle(operation: Operation) -> None:
    """Post-ops done (or given up): the operation is COMPLETE or FAILED, as its stack."""
    failed = operation.lifecycle.get("outcome") == Status.FAILED
    operation.state = OperationState.FAILED if failed else OperationState.COMPLETE


def give_up(session: Session, operation: Operation, stack: Stack, aborted: str,
            reason: str, now: datetime.datetime, *, waiting_reason: str) -> None:
    """End an operation whose phase kept failing, nothing of that phase run again: its
    open steps' resources FAILED with ``aborted`` (those waiting at a breakpoint keep
    their state, with ``waiting_reason``), the stack FAILED with ``reason``."""
    abort_open_steps(session, operation, stack, aborted, now, waiting_reason=waiting_reason)
    operation.failure_reason = reason
    conclude(session, operation, stack, Status.FAILED, reason, now)


def abandon(session: Session, operation: Operation, reason: str,
            now: datetime.datetime) -> None:
    """Giving up failed too: end the operation with the fewest writes, no post-ops, no
    follow-up operation, the stack FAILED with ``reason`` unless its state is written
    already. Only scalar columns are written, so a value that cannot be stored (an
    output, a lifecycle record) is not written again."""
    if operation.finished_at is not None:
        settle(operation)
        return
    steps.cancel_open_steps(session, operation, now)
    stack = stack_rows.load_stack(session, operation.stack_id)
    operation.failure_reason = reason
    stack.action = stack_action(operation.action)
    stack.status, stack.status_reason = Status.FAILED, reason
    event_rows.add_stack_event(session, stack, now)
    snapshot_rows.settle(session, operation, Status.FAILED, reason, now)
    operation.finished_at = now
    operation.state = OperationState.FAILED


# --- the operator's repairs -----------------------------------------------------------


def end_operation(session: Session, stack: Stack, operation: Operation, reason: str,
                  now: datetime.datetime, outcome: Status = Status.FAILED) -> None:
    """End ``operation`` at once, without its worker: its open steps cancelled, the
    stack's resources mid-action FAILED, all with ``reason``, and its lease dropped.
    The post-ops it owes are left to a worker, as after any ending: it is NOTIFYING
    (told ``outcome``, the stack's status from now) while some are owed, else settled
    (FAILED unless ``outcome`` is COMPLETE). A caller that must not wait for them
    records them as never called (``owed_post_ops``) and settles it itself."""
    steps.cancel_open_steps(session, operation, now)
    for row in admin.in_progress_resources(session, stack.id):
        set_resource_state(session, stack, row, row.action, Status.FAILED, reason, now)
    operation.failure_reason = reason
    operation.finished_at = operation.updated_at = now
    operation.lease_owner = operation.lease_expires_at = None
    # Even an operator's COMPLETE: the snapshot never got its data.
    snapshot_rows.settle(session, operation, Status.FAILED, reason, now)
    operation.failures = 0  # the post-ops are a phase of their own, not yet tried
    owe_post_ops(operation)
    operation.lifecycle = {**operation.lifecycle, "outcome": outcome}
    if owed_post_ops(operation):
        operation.state = OperationState.NOTIFYING
    else:
        settle(operation)


def reset_stack(session: Session, stack: Stack, action: str, status: Status | str,
                reason: str, now: datetime.datetime) -> None:
    """Set the stack's state by hand, with its event."""
    stack.action, stack.status = action, status
    stack.status_reason = reason
    stack.updated_at = now
    event_rows.add_stack_event(session, stack, now)


def add_refused_action_event(session: Session, stack: Stack, row: Resource,
                             action: Action | str, reason: str, now: datetime.datetime
                             ) -> None:
    """The ``<ACTION>_FAILED`` event of an action refused before it touched the resource
    (Heat's restricted action): the resource keeps its state, as in Heat."""
    event_rows.add_event(session, stack_id=stack.id, resource_name=row.name,
                         physical_resource_id=row.physical_id or "", resource_type=row.type,
                         action=action, status=Status.FAILED, reason=reason, now=now)


def add_replaced_resource_event(session: Session, stack: Stack, row: Resource,
                                physical_id: str | None, resource_type: str,
                                action: Action | str, status: Status | str, reason: str,
                                now: datetime.datetime) -> None:
    """An event of the physical resource an update replaced (kept in ``row.replaced``
    until its cleanup). The row is the replacement's: its state is not changed."""
    event_rows.add_event(session, stack_id=stack.id, resource_name=row.name,
                         physical_resource_id=physical_id or "", resource_type=resource_type,
                         action=action, status=status, reason=reason, now=now)
