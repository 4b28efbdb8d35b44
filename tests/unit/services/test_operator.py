"""engine.services.operator: the operator's reset of a stuck stack and the post-ops its
ended operation still owes, with real plugins called by a real worker."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import select

from engine.context import ADMIN_ROLE, RequestContext
from engine.db.models import Operation
from engine.db.session import Database
from engine.distributions import Origin
from engine.errors import StackHeld
from engine.lifecycle.base import LifecyclePlugin
from engine.lifecycle.registry import LoadedPlugin
from engine.lifecycle.view import StackView
from engine.services.events import EventQuery
from engine.services.tenants import TenantService
from engine.vocabulary import OperationState
from tests.stack_api import StackApi
from tests.unit.conftest import Clock
from tests.unit.worker.running import run, worker_for
from tests.unit.worker.test_lifecycle_calls import Gate

SLOW = ("heat_template_version: 2018-08-31\nresources:\n  slow:\n"
        "    type: OS::Heat::TestResource\n    properties: {wait_secs: 600}\n")


class Reserving(LifecyclePlugin):
    """Quota-like: its pre-op reserves for the stack, its post-op of a failed operation
    gives the reservation back."""

    def __init__(self, gate: Gate | None = None) -> None:
        self.held: set[str] = set()
        self.posts: list[tuple[str | None, bool]] = []
        self._gate = gate  # holds its first post-op

    def do_pre_op(self, cnxt: RequestContext, stack: StackView,
                  current_stack: StackView | None = None, action: str | None = None) -> None:
        self.held.add(stack.id)

    def do_post_op(self, cnxt: RequestContext, stack: StackView,
                   current_stack: StackView | None = None, action: str | None = None,
                   is_stack_failure: bool = False) -> None:
        if self._gate is not None:
            self._gate(action)
        self.posts.append((action, is_stack_failure))
        if is_stack_failure:
            self.held.discard(stack.id)


def loaded(name: str, plugin: LifecyclePlugin) -> LoadedPlugin:
    return LoadedPlugin(name=name, plugin=plugin, ordinal=100, timeout_seconds=10,
                        on_timeout="fail", origin=Origin("", ""))


@pytest.fixture
def ctx(db: Database, clock: Clock) -> RequestContext:
    tenant = TenantService(db, clock).create_tenant("t")
    return RequestContext(tenant_id=tenant.id, token_tenant_id=tenant.id, role=ADMIN_ROLE,
                          request_id="req-1", username="alice")


def operation_of(db: Database, stack_id: str) -> Operation:
    with db.read() as session:
        return session.scalars(select(Operation).where(Operation.stack_id == stack_id)).one()


def stuck(stacks: StackApi, ctx: RequestContext, plugins: list[LoadedPlugin]
          ) -> tuple[str, str, Any]:
    """A create whose pre-ops reserved and whose step is still running."""
    record = stacks.create(ctx, {"stack_name": "stuck", "template": SLOW})
    loop = worker_for(stacks, plugins)
    run(loop, ticks=3)
    assert operation_of(stacks.kiln.db, record.id).state == OperationState.RUNNING
    return record.name, record.id, loop


@pytest.mark.parametrize(("to", "is_stack_failure"), [("FAILED", True), ("COMPLETE", False)])
def test_a_reset_leaves_the_owed_post_ops_to_a_worker_which_calls_them(
        db: Database, stacks: StackApi, ctx: RequestContext, to: str,
        is_stack_failure: bool) -> None:
    quota = Reserving()
    name, stack_id, loop = stuck(stacks, ctx, [loaded("quota", quota)])
    assert quota.held == {stack_id}
    operator = stacks.kiln.operator
    ref = operator.find_stack(stack_id)

    reset = operator.reset_state(ref, to, "host lost", "admin@ops", force=True)

    assert (reset.action, reset.status) == ("CREATE", to)
    assert operation_of(db, stack_id).state == OperationState.NOTIFYING
    run(loop, ticks=3)  # any live worker: the post-ops are an ordinary claim
    assert quota.posts == [("CREATE", is_stack_failure)]
    assert quota.held == (set() if is_stack_failure else {stack_id})
    operation = operation_of(db, stack_id)
    assert operation.state == (OperationState.FAILED if is_stack_failure
                               else OperationState.COMPLETE)
    stack = stacks.get(ctx, name, stack_id)  # the post-ops leave the reset's state alone
    assert (stack.status, stack.status_reason) == (reset.status, reset.status_reason)
    assert [(c["plugin"], c["phase"], c["verdict"])
            for c in stacks.lifecycle_calls(ctx, name, stack_id)] == [
        ("quota", "pre", "allow"), ("quota", "post", "done")]


def test_a_reset_that_skips_the_post_ops_records_each_as_never_called(
        db: Database, stacks: StackApi, ctx: RequestContext) -> None:
    quota, placement = Reserving(), Reserving()
    name, stack_id, loop = stuck(stacks, ctx, [loaded("placement", placement),
                                               loaded("quota", quota)])
    operator = stacks.kiln.operator

    operator.reset_state(operator.find_stack(stack_id), "FAILED", "host lost", "admin@ops",
                         force=True, skip_post_ops=True)

    assert operation_of(db, stack_id).state == OperationState.FAILED  # nothing left owed
    run(loop, ticks=3)
    assert quota.posts == placement.posts == []
    assert quota.held == placement.held == {stack_id}  # what the operator chose to leak
    skipped = [c for c in stacks.lifecycle_calls(ctx, name, stack_id) if c["phase"] == "post"]
    assert [(c["plugin"], c["verdict"], c["is_stack_failure"]) for c in skipped] == [
        ("quota", "not_called", True), ("placement", "not_called", True)]
    assert all(c["message"] == "skipped by operator admin@ops (reset-state --skip-post-ops)"
               for c in skipped)
    assert {c["operation_id"] for c in skipped} == {operation_of(db, stack_id).id}
    events = stacks.list_events(ctx, name, stack_id, EventQuery())
    assert any(e.reason.startswith("Lifecycle plugin quota post-op CREATE: not_called: "
                                   "skipped by operator admin@ops") for e in events)


# --- a stack whose operation is finished but still owes post-ops (NOTIFYING) ---------------


def owing_post_ops(stacks: StackApi, ctx: RequestContext, plugins: list[LoadedPlugin],
                   to: str = "COMPLETE") -> tuple[str, str, Any]:
    """A stack reset once (``to``) whose operation still owes its post-ops: no worker has
    called them yet (the one that would is gone, or its plugin is broken)."""
    name, stack_id, loop = stuck(stacks, ctx, plugins)
    operator = stacks.kiln.operator
    operator.reset_state(operator.find_stack(stack_id), to, "host lost", "admin@ops",
                         force=True)
    assert operation_of(stacks.kiln.db, stack_id).state == OperationState.NOTIFYING
    return name, stack_id, loop


def test_a_reset_that_skips_the_post_ops_settles_an_operation_that_still_owes_them(
        db: Database, stacks: StackApi, ctx: RequestContext) -> None:
    quota = Reserving()
    name, stack_id, loop = owing_post_ops(stacks, ctx, [loaded("quota", quota)])
    operator = stacks.kiln.operator

    reset = operator.reset_state(operator.find_stack(stack_id), "FAILED", "plugin broken",
                                 "admin@ops", skip_post_ops=True)

    assert (reset.action, reset.status) == ("CREATE", "FAILED")
    assert operation_of(db, stack_id).state == OperationState.FAILED  # nothing left owed
    run(loop, ticks=3)
    assert quota.posts == []
    assert [(c["plugin"], c["phase"], c["verdict"], c.get("is_stack_failure"),
             c.get("message"))
            for c in stacks.lifecycle_calls(ctx, name, stack_id)][-1] == (
        "quota", "post", "not_called", True,
        "skipped by operator admin@ops (reset-state --skip-post-ops)")
    assert [(c["plugin"], c["phase"]) for c in stacks.lifecycle_calls(ctx, name, stack_id)
            ] == [("quota", "pre"), ("quota", "post")]


def test_a_reset_of_an_operation_that_still_owes_post_ops_tells_them_the_new_status(
        db: Database, stacks: StackApi, ctx: RequestContext) -> None:
    quota = Reserving()
    _name, stack_id, loop = owing_post_ops(stacks, ctx, [loaded("quota", quota)],
                                           to="COMPLETE")
    operator = stacks.kiln.operator

    operator.reset_state(operator.find_stack(stack_id), "FAILED", "it did fail", "admin@ops")

    assert operation_of(db, stack_id).state == OperationState.NOTIFYING
    run(loop, ticks=3)  # a worker calls them, as after any reset
    assert quota.posts == [("CREATE", True)]
    assert quota.held == set()
    assert operation_of(db, stack_id).state == OperationState.FAILED


def test_a_reset_waits_for_a_live_worker_calling_the_post_ops_unless_forced(
        db: Database, stacks: StackApi, ctx: RequestContext, release: threading.Event
        ) -> None:
    gate = Gate(release)
    quota = Reserving(gate)
    plugins = [loaded("quota", quota)]
    name, stack_id, _loop = owing_post_ops(stacks, ctx, plugins)
    # A live worker's post-op that does not answer, on its operation thread.
    calling = worker_for(stacks, plugins, operation_threads=1)
    gate.tick_until_post_ops_reach(calling)
    operator = stacks.kiln.operator
    ref = operator.find_stack(stack_id)

    with pytest.raises(StackHeld):
        operator.reset_state(ref, "FAILED", "plugin hangs", "admin@ops", skip_post_ops=True)
    assert operation_of(db, stack_id).state == OperationState.NOTIFYING

    operator.reset_state(ref, "FAILED", "plugin hangs", "admin@ops", force=True,
                         skip_post_ops=True)
    assert operation_of(db, stack_id).state == OperationState.FAILED
    release.set()  # the post-op answers at last: its worker's lease is gone, it is dropped
    run(calling, ticks=3)
    assert [(c["plugin"], c["phase"], c["verdict"])
            for c in stacks.lifecycle_calls(ctx, name, stack_id)] == [
        ("quota", "pre", "allow"), ("quota", "post", "not_called")]
