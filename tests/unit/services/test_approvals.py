"""Approval gates on real operations: a pre-op returns ``Pending``, the operation parks
holding no worker, and a tenant admin's or an operator's decision (or the window's end)
takes it up on whichever worker claims it next. A SQLite file, the real services and
worker loops with a clock the tests move."""

from __future__ import annotations

import datetime

import pytest

from engine.context import MEMBER_ROLE, RequestContext
from engine.db.session import Database
from engine.errors import (
    ApprovalForbidden,
    BadRequest,
    EntityNotFound,
    NoApprovalAwaited,
    NoApprovalFound,
)
from engine.lifecycle.base import Pending
from engine.resources.registry import ResourceTypeRegistry
from engine.vocabulary import OperationState, Verdict
from tests.stack_api import StackApi
from tests.unit.conftest import Clock
from tests.unit.worker.running import create, run, worker_for
from tests.unit.worker.test_lifecycle_calls import (
    TEMPLATE,
    Entry,
    calls,
    loaded,
    operations,
    recorders,
    status,
    timeline,
)

ASK = "replacing the database needs the DBA's approval"


def parked(db: Database, stacks: StackApi, ctx: RequestContext, log: list[Entry],
           window: float | None = None) -> tuple[str, str, list[object]]:
    """A create whose second plugin (of three) asks for approval, run until it parks."""
    a, gate, c = recorders(log, "a", "gate", "c")
    gate.pre = lambda action: Pending(ASK, window_seconds=window) if action == "CREATE" else None
    plugins = [loaded(a), loaded(gate), loaded(c)]
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(worker_for(stacks, plugins))
    return name, stack_id, plugins


def test_a_pending_verdict_parks_the_operation_holding_no_worker(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    name, stack_id, plugins = parked(db, stacks, ctx, log)

    stack = stacks.get(ctx, name, stack_id)
    expires = clock() + datetime.timedelta(days=1)  # the default window
    assert (stack.action, stack.status, stack.status_reason) == (
        "CREATE", "IN_PROGRESS", f"Waiting for approval (lifecycle plugin gate): {ASK}; "
        f"rejected if not approved by {expires.isoformat(timespec='seconds')}")
    [operation] = operations(db, stack_id)
    assert (operation.state, operation.lease_owner) == (OperationState.PENDING, None)
    assert operation.lease_expires_at == expires
    assert stacks.list_resources(ctx, name, stack_id, {}) == []
    record = stacks.approvals.awaited(ctx, name, stack_id)
    assert (record.plugin, record.message, record.decision, record.expires_at) == (
        "gate", ASK, None, expires.isoformat())

    # Other workers pass it by: nothing is called again while nobody has decided.
    clock.advance(3600)
    run(worker_for(stacks, plugins))
    assert log == [("a", "pre", "CREATE", None), ("gate", "pre", "CREATE", None)]
    assert calls(stacks, ctx, name, stack_id)[-1] == ("gate", "pre", "CREATE", "pending")


def test_approved_the_operation_goes_on_at_another_worker_its_wait_not_counted(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    name, stack_id, plugins = parked(db, stacks, ctx, log)
    clock.advance(3 * 3600)  # past the stack's one-hour timeout: the wait is not counted

    record = stacks.approvals.decide(ctx, name, stack_id,
                                     {"decision": "approve", "comment": "ticket 4411"})
    assert (record.decision, record.decided_by, record.comment) == (
        "approved", f"an admin of tenant {ctx.tenant_id}", "ticket 4411")
    run(worker_for(stacks, plugins))  # a worker that never saw the operation

    assert status(stacks, ctx, name, stack_id) == "CREATE_COMPLETE"
    assert log == [("a", "pre", "CREATE", None), ("gate", "pre", "CREATE", None),
                   ("c", "pre", "CREATE", None), ("c", "post", "CREATE", False),
                   ("gate", "post", "CREATE", False), ("a", "post", "CREATE", False)]
    by = record.decided_by
    gate_call = [c for c in stacks.lifecycle_calls(ctx, name, stack_id)
                 if c["plugin"] == "gate" and c["phase"] == "pre"]
    assert [(c["verdict"], c.get("message")) for c in gate_call] == [
        ("pending", ASK), ("approved", f"Approval gate: approved by {by}: ticket 4411")]
    assert timeline(stacks, ctx, name, stack_id)[:4] == [
        "s CREATE_IN_PROGRESS", "pre a allow", "pre gate pending", "pre gate approved"]
    [operation] = operations(db, stack_id)
    # The decision's event (the request's) names the operation as the worker's do.
    assert {c["operation_id"] for c in stacks.lifecycle_calls(ctx, name, stack_id)} == {
        operation.id}
    assert operation.lifecycle["pre"][1]["verdict"] == Verdict.APPROVED
    assert operation.lifecycle["pre"][1]["message"] == f"by {by}: ticket 4411"
    with pytest.raises(NoApprovalFound):
        stacks.approvals.awaited(ctx, name, stack_id)


def test_rejected_the_operation_is_denied_and_the_plugins_called_are_unwound(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    name, stack_id, plugins = parked(db, stacks, ctx, log)
    record = stacks.approvals.decide(ctx, name, stack_id,
                                     {"decision": "reject", "comment": "not this week"})
    # The first decision stands.
    with pytest.raises(NoApprovalAwaited):
        stacks.approvals.decide(ctx, name, stack_id, {"decision": "approve"})
    run(worker_for(stacks, plugins))

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status, stack.status_reason) == (
        "CREATE", "FAILED", f"Lifecycle plugin gate pre-op CREATE: rejected: by "
        f"{record.decided_by}: not this week")
    assert stacks.list_resources(ctx, name, stack_id, {}) == []
    assert log == [("a", "pre", "CREATE", None), ("gate", "pre", "CREATE", None),
                   ("gate", "post", "CREATE", True), ("a", "post", "CREATE", True)]


def test_an_expired_window_denies_the_operation_with_an_event_saying_so(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    name, stack_id, plugins = parked(db, stacks, ctx, log, window=600)
    expires = (clock() + datetime.timedelta(seconds=600)).isoformat()
    clock.advance(599)
    run(worker_for(stacks, plugins))
    assert status(stacks, ctx, name, stack_id) == "CREATE_IN_PROGRESS"
    clock.advance(2)
    run(worker_for(stacks, plugins))

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.status, stack.status_reason) == (
        "FAILED", f"Lifecycle plugin gate pre-op CREATE: expired: no decision by {expires}")
    assert "pre gate expired" in timeline(stacks, ctx, name, stack_id)
    [operation] = operations(db, stack_id)
    [expired] = [c for c in stacks.lifecycle_calls(ctx, name, stack_id)
                 if c["verdict"] == "expired"]
    assert expired["operation_id"] == operation.id
    assert log[2:] == [("gate", "post", "CREATE", True), ("a", "post", "CREATE", True)]
    with pytest.raises(NoApprovalAwaited):
        stacks.approvals.decide(ctx, name, stack_id, {"decision": "approve"})


def test_an_operator_decides_by_operation_id(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    name, stack_id, plugins = parked(db, stacks, ctx, log)
    [operation] = operations(db, stack_id)
    shown = stacks.kiln.operator.operation(operation.id[:8]).awaiting_approval
    assert shown is not None and (shown["plugin"], shown["message"]) == ("gate", ASK)
    record = stacks.approvals.decide_operation(operation.id, Verdict.APPROVED, "ok  then",
                                               "root@ctl")
    assert (record.decided_by, record.comment) == ("operator root@ctl", "ok then")
    run(worker_for(stacks, plugins))
    assert status(stacks, ctx, name, stack_id) == "CREATE_COMPLETE"
    assert stacks.kiln.operator.operation(operation.id).awaiting_approval is None
    with pytest.raises(EntityNotFound):
        stacks.approvals.decide_operation("no-such-id", Verdict.APPROVED, "", "root@ctl")


def test_a_member_may_not_decide_and_a_bad_decision_is_refused(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    name, stack_id, _plugins = parked(db, stacks, ctx, log)
    member = RequestContext(tenant_id=ctx.tenant_id, token_tenant_id=ctx.tenant_id,
                            role=MEMBER_ROLE)
    with pytest.raises(ApprovalForbidden):
        stacks.approvals.decide(member, name, stack_id, {"decision": "approve"})
    for body, words in (({"decision": "maybe"}, "one of approve, reject"),
                        ({"decision": "approve", "why": "x"}, r"Unknown key\(s\)"),
                        ({"decision": "approve", "comment": 4}, "a string")):
        with pytest.raises(BadRequest, match=words):
            stacks.approvals.decide(ctx, name, stack_id, body)
    # The member may still see what it waits for.
    assert stacks.approvals.awaited(member, name, stack_id).plugin == "gate"


def test_deleting_a_parked_stack_ends_the_wait_at_once(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    name, stack_id, plugins = parked(db, stacks, ctx, log)
    stacks.delete(ctx, name, stack_id)
    run(worker_for(stacks, plugins))  # no clock moved: the delete woke it

    assert status(stacks, ctx, name, stack_id) == "DELETE_COMPLETE"
    created, deleted = operations(db, stack_id)
    assert (created.state, deleted.state) == (OperationState.FAILED, OperationState.COMPLETE)
    # The create's gate and the plugin before it hear it ended; then the delete's calls.
    assert log[2:4] == [("gate", "post", "CREATE", True), ("a", "post", "CREATE", True)]
    assert ("gate", "pre", "DELETE", None) in log
