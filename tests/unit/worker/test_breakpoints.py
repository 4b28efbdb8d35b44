"""Breakpoints in one process: a step paused at a hook is parked (no worker holds it,
nothing polls it) until a signal's ``unset_hook`` clears it, with Heat's events and
refusals; an operation that ends meanwhile ends the wait."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from engine import reasons
from engine.context import RequestContext
from engine.db import transitions
from engine.db.models import Operation, ResourceHook, Step
from engine.db.session import Database
from engine.db.stack_rows import load_stack
from engine.errors import InvalidBreakPointHook, ResourceNotFound
from engine.services.events import EventQuery
from engine.worker.loop import WorkerLoop
from tests.stack_api import StackApi
from tests.unit.conftest import Clock
from tests.unit.worker.running import worker_for

# one <- two <- three: each waits for the one before it.
CHAIN = """\
heat_template_version: 2018-08-31
resources:
  one: {type: OS::Heat::RandomString}
  two: {type: OS::Heat::RandomString, depends_on: one}
  three: {type: OS::Heat::RandomString, depends_on: two}
"""


def start(stacks: StackApi, ctx: RequestContext, resources: dict[str, Any],
          **body: Any) -> tuple[str, str]:
    record = stacks.create(ctx, {"stack_name": "s", "template": CHAIN, **body,
                                 "environment": {"resource_registry": {"resources": resources}}})
    return record.name, record.id


def tick(loop: WorkerLoop, clock: Clock, times: int = 6) -> None:
    for _ in range(times):
        loop.run_once()
        clock.advance(1)


def states(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str) -> dict[str, str]:
    stack = stacks.get(ctx, name, stack_id)
    found = {r.name: f"{r.action}_{r.status}"
             for r in stacks.list_resources(ctx, name, stack_id, {})}
    return {"stack": f"{stack.action}_{stack.status}", **found}


def hook_events(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str
                ) -> list[tuple[str, str, str]]:
    return [(e.resource_name, f"{e.action}_{e.status}", e.reason)
            for e in stacks.list_events(ctx, name, stack_id, EventQuery(ascending=True))
            if "Hook" in e.reason or "waiting" in e.reason]


def step_of(db: Database, stack_id: str, resource: str) -> Step:
    with db.read() as session:
        step = session.scalars(select(Step).where(Step.stack_id == stack_id,
                                                  Step.resource_name == resource)
                               .order_by(Step.id.desc())).first()
        assert step is not None
        session.expunge(step)
        return step


def test_a_pre_create_hook_parks_the_step_until_unset_hook_clears_it(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    name, stack_id = start(stacks, ctx, {"two": {"hooks": "pre-create"}})
    loop = worker_for(stacks)
    tick(loop, clock)

    assert states(stacks, ctx, name, stack_id) == {
        "stack": "CREATE_IN_PROGRESS", "one": "CREATE_COMPLETE", "two": "INIT_COMPLETE",
        "three": "INIT_COMPLETE"}
    assert hook_events(stacks, ctx, name, stack_id) == [
        ("two", "INIT_COMPLETE", "CREATE paused until Hook pre-create is cleared")]
    parked = step_of(db, stack_id, "two")
    assert (parked.state, parked.lease_owner, parked.failures) == ("RUNNING", None, 0)
    assert parked.lease_expires_at is not None and parked.lease_expires_at > clock()
    assert loop.held_count == 0  # nothing holds it, so nothing polls it
    tick(loop, clock, 20)
    assert step_of(db, stack_id, "two").attempt == parked.attempt  # never claimed again

    stacks.signal(ctx, name, stack_id, "two", {"unset_hook": "pre-create"})
    assert step_of(db, stack_id, "two").lease_expires_at is None  # claimable at once
    tick(loop, clock)

    assert states(stacks, ctx, name, stack_id) == {
        "stack": "CREATE_COMPLETE", "one": "CREATE_COMPLETE", "two": "CREATE_COMPLETE",
        "three": "CREATE_COMPLETE"}
    assert hook_events(stacks, ctx, name, stack_id) == [
        ("two", "INIT_COMPLETE", "CREATE paused until Hook pre-create is cleared"),
        ("two", "INIT_COMPLETE", "Hook pre-create is cleared")]


def test_unset_hook_is_refused_as_heat_refuses_it(
        clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    name, stack_id = start(stacks, ctx, {"two": {"hooks": ["pre-create", "post-create"]}})
    tick(worker_for(stacks), clock)
    shown = f'RandomString "two" Stack "s" [{stack_id}]'

    with pytest.raises(InvalidBreakPointHook) as bogus:
        stacks.signal(ctx, name, stack_id, "two", {"unset_hook": "pre-bogus"})
    with pytest.raises(InvalidBreakPointHook) as not_set:
        stacks.signal(ctx, name, stack_id, "two", {"unset_hook": "post-create"})
    with pytest.raises(ResourceNotFound):
        stacks.signal(ctx, name, stack_id, "four", {"unset_hook": "pre-create"})

    assert bogus.value.message == f'Invalid hook type "pre-bogus" for {shown}'
    assert not_set.value.message == f'The "post-create" hook is not defined on {shown}'


def test_post_hooks_on_a_wildcard_pause_after_the_action_and_hold_back_dependents(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    name, stack_id = start(stacks, ctx, {"t*": {"hooks": ["post-create"]}})
    loop = worker_for(stacks)
    tick(loop, clock)

    assert states(stacks, ctx, name, stack_id)["two"] == "CREATE_COMPLETE"
    assert states(stacks, ctx, name, stack_id)["three"] == "INIT_COMPLETE"
    stacks.signal(ctx, name, stack_id, "two", {"unset_hook": "post-create"})
    tick(loop, clock)
    assert states(stacks, ctx, name, stack_id)["stack"] == "CREATE_IN_PROGRESS"
    stacks.signal(ctx, name, stack_id, "three", {"unset_hook": "post-create"})
    tick(loop, clock)

    assert states(stacks, ctx, name, stack_id)["stack"] == "CREATE_COMPLETE"
    assert hook_events(stacks, ctx, name, stack_id) == [
        ("two", "CREATE_COMPLETE", "CREATE paused until Hook post-create is cleared"),
        ("two", "CREATE_COMPLETE", "Hook post-create is cleared"),
        ("three", "CREATE_COMPLETE", "CREATE paused until Hook post-create is cleared"),
        ("three", "CREATE_COMPLETE", "Hook post-create is cleared")]


def test_a_time_out_ends_the_wait_at_a_pre_delete_hook(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    name, stack_id = start(stacks, ctx, {"one": {"hooks": "pre-delete"}}, timeout_mins=1)
    loop = worker_for(stacks)
    tick(loop, clock)
    assert states(stacks, ctx, name, stack_id)["stack"] == "CREATE_COMPLETE"

    stacks.delete(ctx, name, stack_id)
    tick(loop, clock)
    assert states(stacks, ctx, name, stack_id) == {
        "stack": "DELETE_IN_PROGRESS", "one": "CREATE_COMPLETE", "two": "DELETE_COMPLETE",
        "three": "DELETE_COMPLETE"}
    clock.advance(3600)
    tick(loop, clock)

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status, stack.status_reason) == (
        "DELETE", "FAILED", "Delete timed out")
    assert states(stacks, ctx, name, stack_id)["one"] == "CREATE_COMPLETE"
    assert hook_events(stacks, ctx, name, stack_id) == [
        ("one", "CREATE_COMPLETE", "DELETE paused until Hook pre-delete is cleared"),
        ("one", "CREATE_COMPLETE", "Failure occurred while waiting.")]
    with db.read() as session:
        assert session.scalars(select(ResourceHook)).all() == []


def test_pre_update_breaks_on_a_resource_the_update_leaves_as_it_is(
        clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    hooks = {"two": {"hooks": "pre-update"}}
    name, stack_id = start(stacks, ctx, hooks)
    loop = worker_for(stacks)
    tick(loop, clock)
    before = stacks.get_resource(ctx, name, stack_id, "two").physical_id

    stacks.update(ctx, name, stack_id, {"template": CHAIN, "environment": {
        "resource_registry": {"resources": hooks}}}, patch=False)
    tick(loop, clock)
    assert states(stacks, ctx, name, stack_id)["stack"] == "UPDATE_IN_PROGRESS"
    stacks.signal(ctx, name, stack_id, "two", {"unset_hook": "pre-update"})
    tick(loop, clock)

    assert states(stacks, ctx, name, stack_id)["stack"] == "UPDATE_COMPLETE"
    assert stacks.get_resource(ctx, name, stack_id, "two").physical_id == before
    assert hook_events(stacks, ctx, name, stack_id) == [
        ("two", "CREATE_COMPLETE", "UPDATE paused until Hook pre-update is cleared"),
        ("two", "CREATE_COMPLETE", "Hook pre-update is cleared")]


# a and c are independent of b, which fails once its create has run a few seconds.
SIBLINGS = """\
heat_template_version: 2018-08-31
resources:
  a: {type: OS::Heat::RandomString}
  b: {type: OS::Heat::TestResource, properties: {fail: true, wait_secs: 4}}
  c: {type: OS::Heat::RandomString}
"""


def test_a_sibling_failure_ends_the_waits_at_pre_and_post_hooks(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    record = stacks.create(ctx, {"stack_name": "s", "template": SIBLINGS, "environment": {
        "resource_registry": {"resources": {"a": {"hooks": "pre-create"},
                                            "c": {"hooks": "post-create"}}}}})
    name, stack_id = record.name, record.id
    loop = worker_for(stacks)
    tick(loop, clock, 2)
    assert states(stacks, ctx, name, stack_id) == {
        "stack": "CREATE_IN_PROGRESS", "a": "INIT_COMPLETE", "b": "CREATE_IN_PROGRESS",
        "c": "CREATE_COMPLETE"}
    tick(loop, clock)

    # Ended with b, as Heat ends them: not at the time-out an hour later.
    assert states(stacks, ctx, name, stack_id) == {
        "stack": "CREATE_FAILED", "a": "INIT_COMPLETE", "b": "CREATE_FAILED",
        "c": "CREATE_COMPLETE"}
    assert hook_events(stacks, ctx, name, stack_id) == [
        ("a", "INIT_COMPLETE", "CREATE paused until Hook pre-create is cleared"),
        ("c", "CREATE_COMPLETE", "CREATE paused until Hook post-create is cleared"),
        ("c", "CREATE_COMPLETE", "Failure occurred while waiting."),
        ("a", "INIT_COMPLETE", "Failure occurred while waiting.")]
    assert (step_of(db, stack_id, "a").state, step_of(db, stack_id, "c").state) == (
        "CANCELLED", "COMPLETE")
    with db.read() as session:
        assert session.scalars(select(ResourceHook)).all() == []
    with pytest.raises(InvalidBreakPointHook):  # nothing left to create a in a failed stack
        stacks.signal(ctx, name, stack_id, "a", {"unset_hook": "pre-create"})


def test_a_time_out_just_after_a_clear_leaves_the_resources_as_they_stand(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    record = stacks.create(ctx, {
        "stack_name": "s", "template": SIBLINGS.replace("fail: true", "fail: false"),
        "timeout_mins": 1, "environment": {"resource_registry": {"resources": {
            "a": {"hooks": "pre-create"}, "c": {"hooks": "post-create"}}}}})
    name, stack_id = record.name, record.id
    loop = worker_for(stacks)
    tick(loop, clock)
    stacks.signal(ctx, name, stack_id, "a", {"unset_hook": "pre-create"})
    stacks.signal(ctx, name, stack_id, "c", {"unset_hook": "post-create"})
    clock.advance(3600)  # both woken, and the time-out comes before a worker claims them
    tick(loop, clock)

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status, stack.status_reason) == (
        "CREATE", "FAILED", "Create timed out")
    assert states(stacks, ctx, name, stack_id) == {
        "stack": "CREATE_FAILED", "a": "INIT_COMPLETE", "b": "CREATE_COMPLETE",
        "c": "CREATE_COMPLETE"}
    assert sorted(hook_events(stacks, ctx, name, stack_id)[-2:]) == [
        ("a", "INIT_COMPLETE", "Failure occurred while waiting."),
        ("c", "CREATE_COMPLETE", "Failure occurred while waiting.")]


def test_an_operation_given_up_ends_the_wait_as_a_time_out_does(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    name, stack_id = start(stacks, ctx, {"two": {"hooks": "pre-create"}})
    tick(worker_for(stacks), clock)

    with db.transaction() as session:
        operation = session.scalars(select(Operation).where(
            Operation.stack_id == stack_id)).one()
        transitions.give_up(session, operation, load_stack(session, stack_id),
                            "CREATE aborted", "Kiln failed", clock(),
                            waiting_reason=reasons.HOOK_WAIT_FAILED)

    assert states(stacks, ctx, name, stack_id) == {
        "stack": "CREATE_FAILED", "one": "CREATE_COMPLETE", "two": "INIT_COMPLETE",
        "three": "INIT_COMPLETE"}
    assert hook_events(stacks, ctx, name, stack_id)[-1] == (
        "two", "INIT_COMPLETE", "Failure occurred while waiting.")


# d waits for r: an update of both and the delete of the stack pass r's hooks.
VALUES = """\
heat_template_version: 2018-08-31
resources:
  r: {type: OS::Heat::TestResource, properties: {value: %s}}
  d: {type: OS::Heat::TestResource, properties: {value: %s}, depends_on: r}
"""


def test_post_update_and_post_delete_hooks_pause_after_the_action(
        clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    hooks = {"resource_registry": {"resources": {"r": {"hooks": [
        "post-update", "post-delete"]}}}}
    record = stacks.create(ctx, {"stack_name": "s", "template": VALUES % ("x", "x"),
                                 "environment": hooks})
    name, stack_id = record.name, record.id
    loop = worker_for(stacks)
    tick(loop, clock)
    physical_id = stacks.get_resource(ctx, name, stack_id, "r").physical_id

    stacks.update(ctx, name, stack_id, {"template": VALUES % ("y", "y"),
                                        "environment": hooks}, patch=False)
    tick(loop, clock)
    assert states(stacks, ctx, name, stack_id) == {
        "stack": "UPDATE_IN_PROGRESS", "r": "UPDATE_COMPLETE", "d": "CREATE_COMPLETE"}
    stacks.signal(ctx, name, stack_id, "r", {"unset_hook": "post-update"})
    tick(loop, clock)
    assert states(stacks, ctx, name, stack_id) == {
        "stack": "UPDATE_COMPLETE", "r": "UPDATE_COMPLETE", "d": "UPDATE_COMPLETE"}
    assert stacks.get_resource(ctx, name, stack_id, "r").physical_id == physical_id

    stacks.delete(ctx, name, stack_id)
    tick(loop, clock)
    assert states(stacks, ctx, name, stack_id) == {
        "stack": "DELETE_IN_PROGRESS", "r": "DELETE_COMPLETE", "d": "DELETE_COMPLETE"}
    stacks.signal(ctx, name, stack_id, "r", {"unset_hook": "post-delete"})
    tick(loop, clock)

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status) == ("DELETE", "COMPLETE")
    assert hook_events(stacks, ctx, name, stack_id) == [
        ("r", "UPDATE_COMPLETE", "UPDATE paused until Hook post-update is cleared"),
        ("r", "UPDATE_COMPLETE", "Hook post-update is cleared"),
        ("r", "DELETE_COMPLETE", "DELETE paused until Hook post-delete is cleared"),
        ("r", "DELETE_COMPLETE", "Hook post-delete is cleared")]
