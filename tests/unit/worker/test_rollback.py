"""Rollback of timed-out creates and updates, and its place after the failed operation's
post-ops: a SQLite file, the real StackApi and a real WorkerLoop with an injected
clock, so a deadline passes when the test says so and nothing sleeps."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from engine.context import RequestContext
from engine.db.session import Database
from engine.resources.registry import ResourceTypeRegistry
from engine.services.events import EventQuery
from engine.vocabulary import OperationState
from tests.stack_api import StackApi
from tests.unit.conftest import Clock
from tests.unit.worker.running import run, worker_for
from tests.unit.worker.test_lifecycle_calls import (
    Entry,
    Gate,
    loaded,
    operations,
    recorders,
    status,
    wait_until,
)

# The create of "slow" outlives any deadline; its delete is immediate, so a rollback
# (or a test's teardown) can remove it.
CREATE_TIMES_OUT = """\
heat_template_version: 2018-08-31
resources:
  quick:
    type: OS::Heat::RandomString
  slow:
    type: OS::Heat::TestResource
    depends_on: quick
    properties: {action_wait_secs: {create: 600, delete: 0}}
"""

BEFORE = """\
heat_template_version: 2018-08-31
resources:
  word:
    type: OS::Heat::RandomString
  a:
    type: OS::Heat::TestResource
    properties: {value: one, update_replace: %(replace)s}
  b:
    type: OS::Heat::TestResource
    properties: {value: {get_attr: [a, output]}}
outputs:
  a: {value: {get_attr: [a, output]}}
"""

# "a" changes (replaced or in place, as BEFORE says) and its new action never ends;
# "extra" is new and created at once, so the rollback has something to delete too.
AFTER = """\
heat_template_version: 2018-08-31
resources:
  word:
    type: OS::Heat::RandomString
  a:
    type: OS::Heat::TestResource
    properties:
      value: two
      update_replace: %(replace)s
      action_wait_secs: {create: 600, update: 600, delete: 0}
  b:
    type: OS::Heat::TestResource
    properties: {value: {get_attr: [a, output]}}
  extra:
    type: OS::Heat::None
outputs:
  a: {value: {get_attr: [a, output]}}
"""

FAILING = """\
heat_template_version: 2018-08-31
resources:
  fine:
    type: OS::Heat::None
  broken:
    type: OS::Heat::TestResource
    depends_on: fine
    properties: {fail: true}
"""


def stack_events(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str
                 ) -> list[str]:
    """The stack's own status events, oldest first."""
    return [f"{e.action}_{e.status}: {e.reason}"
            for e in stacks.list_events(ctx, name, stack_id, EventQuery(ascending=True))
            if e.resource_name == name and not e.lifecycle]


def resources(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str
              ) -> dict[str, tuple[str, str]]:
    """name: (ACTION_STATUS, physical id)."""
    return {r.name: (f"{r.action}_{r.status}", r.physical_id)
            for r in stacks.list_resources(ctx, name, stack_id, {})}


def physical(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str
             ) -> dict[str, str]:
    return {n: pid for n, (_, pid) in resources(stacks, ctx, name, stack_id).items()}


# --- a create that times out ----------------------------------------------------------


def start_timing_out_create(stacks: StackApi, ctx: RequestContext, loop: Any,
                            clock: Clock, *, disable_rollback: bool) -> tuple[str, str]:
    record = stacks.create(ctx, {"stack_name": "s", "template": CREATE_TIMES_OUT,
                                 "timeout_mins": 1, "disable_rollback": disable_rollback})
    run(loop)
    assert {n: s for n, (s, _) in resources(stacks, ctx, record.name, record.id).items()} == {
        "quick": "CREATE_COMPLETE", "slow": "CREATE_IN_PROGRESS"}
    clock.advance(61)
    run(loop)
    return record.name, record.id


def test_a_timed_out_create_with_rollback_enabled_is_rolled_back(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    loop = worker_for(stacks)
    name, stack_id = start_timing_out_create(stacks, ctx, loop, clock,
                                             disable_rollback=False)

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status, stack.status_reason) == (
        "ROLLBACK", "COMPLETE", "Stack ROLLBACK completed successfully")
    assert stacks.list_resources(ctx, name, stack_id, {}) == []
    assert [(op.action, op.state) for op in operations(db, stack_id)] == [
        ("CREATE", OperationState.FAILED), ("ROLLBACK", OperationState.COMPLETE)]
    assert stack_events(stacks, ctx, name, stack_id) == [
        "CREATE_IN_PROGRESS: Stack CREATE started",
        "CREATE_FAILED: Create timed out",
        "ROLLBACK_IN_PROGRESS: Stack ROLLBACK started",
        "ROLLBACK_COMPLETE: Stack ROLLBACK completed successfully"]
    slow = [f"{e.action}_{e.status}" for e in stacks.list_events(
        ctx, name, stack_id, EventQuery(ascending=True), "slow")]
    assert slow == ["CREATE_IN_PROGRESS", "CREATE_FAILED", "DELETE_IN_PROGRESS",
                    "DELETE_COMPLETE"]


def test_a_timed_out_create_with_rollback_disabled_stays_failed(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    loop = worker_for(stacks)
    name, stack_id = start_timing_out_create(stacks, ctx, loop, clock,
                                             disable_rollback=True)
    clock.advance(120)  # nothing more happens, however long the worker goes on
    run(loop)

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status, stack.status_reason) == (
        "CREATE", "FAILED", "Create timed out")
    assert [(op.action, op.state) for op in operations(db, stack_id)] == [
        ("CREATE", OperationState.FAILED)]
    found = resources(stacks, ctx, name, stack_id)
    assert {n: s for n, (s, _) in found.items()} == {
        "quick": "CREATE_COMPLETE", "slow": "CREATE_FAILED"}
    assert all(pid for _, pid in found.values())  # kept, for a later update or delete


# --- an update that times out ---------------------------------------------------------


@pytest.mark.parametrize("replace", [True, False], ids=["replacement", "in-place"])
def test_a_timed_out_update_with_rollback_returns_to_the_previous_resources(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, replace: bool) -> None:
    flag = str(replace).lower()
    record = stacks.create(ctx, {"stack_name": "s", "template": BEFORE % {"replace": flag},
                                 "disable_rollback": False})
    name, stack_id = record.name, record.id
    loop = worker_for(stacks)
    run(loop)
    assert status(stacks, ctx, name, stack_id) == "CREATE_COMPLETE"
    before = physical(stacks, ctx, name, stack_id)

    stacks.update(ctx, name, stack_id, {"template": AFTER % {"replace": flag},
                                        "timeout_mins": 1}, patch=False)
    run(loop)
    midway = resources(stacks, ctx, name, stack_id)
    assert midway["a"][0] == ("CREATE_IN_PROGRESS" if replace else "UPDATE_IN_PROGRESS")
    assert midway["extra"][0] == "CREATE_COMPLETE"
    assert (midway["a"][1] != before["a"]) is replace
    clock.advance(61)
    run(loop)

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status, stack.status_reason) == (
        "ROLLBACK", "COMPLETE", "Stack ROLLBACK completed successfully")
    assert physical(stacks, ctx, name, stack_id) == before  # extra deleted, a restored
    assert {s for s, _ in resources(stacks, ctx, name, stack_id).values()} <= {
        "CREATE_COMPLETE", "UPDATE_COMPLETE"}
    assert stack.outputs == [{"output_key": "a", "description": "No description given",
                              "output_value": "one"}]
    template = stacks.get_template(ctx, name, stack_id)  # the previous definition again
    assert set(template["resources"]) == {"word", "a", "b"}
    assert template["resources"]["a"]["properties"] == {"value": "one",
                                                        "update_replace": replace}
    assert [(op.action, op.state) for op in operations(db, stack_id)] == [
        ("CREATE", OperationState.COMPLETE), ("UPDATE", OperationState.FAILED),
        ("ROLLBACK", OperationState.COMPLETE)]
    assert stack_events(stacks, ctx, name, stack_id)[-3:] == [
        "UPDATE_FAILED: Update timed out",
        "ROLLBACK_IN_PROGRESS: Stack ROLLBACK started",
        "ROLLBACK_COMPLETE: Stack ROLLBACK completed successfully"]


# --- the rollback waits for the failed operation's post-ops -----------------------------


def test_a_rollback_is_not_claimed_while_the_failed_create_is_notifying(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, release: threading.Event) -> None:
    log: list[Entry] = []
    [plugin] = recorders(log, "slow")
    gate = Gate(release)
    plugin.post = gate  # the first post-op (the failed CREATE's) is held
    plugins = [loaded(plugin, timeout=30)]
    record = stacks.create(ctx, {"stack_name": "s", "template": FAILING,
                                 "disable_rollback": False})
    name, stack_id = record.name, record.id

    notifier = worker_for(stacks, plugins, operation_threads=1)
    gate.tick_until_post_ops_reach(notifier)

    # The rollback is queued and the stack says so...
    assert status(stacks, ctx, name, stack_id) == "ROLLBACK_IN_PROGRESS"
    other = worker_for(stacks, plugins)
    run(other, ticks=5)
    # ...but it is not started while the create still owes its post-op: the plugin has
    # not heard that the create failed, and no resource has been touched.
    created, rollback = operations(db, stack_id)
    assert (created.action, created.state) == ("CREATE", OperationState.NOTIFYING)
    assert (rollback.action, rollback.state, rollback.lease_owner, rollback.attempt) == (
        "ROLLBACK", OperationState.PENDING, None, 0)
    assert log == [("slow", "pre", "CREATE", None), ("slow", "post", "CREATE", True)]
    assert {n: s for n, (s, _) in resources(stacks, ctx, name, stack_id).items()} == {
        "fine": "CREATE_COMPLETE", "broken": "CREATE_FAILED"}

    release.set()
    wait_until(lambda: operations(db, stack_id)[0].state == OperationState.FAILED,
               "the create to close")
    run(other)
    assert status(stacks, ctx, name, stack_id) == "ROLLBACK_COMPLETE"
    assert stacks.list_resources(ctx, name, stack_id, {}) == []
    assert log == [("slow", "pre", "CREATE", None), ("slow", "post", "CREATE", True),
                   ("slow", "pre", "ROLLBACK", None), ("slow", "post", "ROLLBACK", False)]
    notifier.hand_back()
