"""engine.worker.nested: child stacks as their parent resources start them, on a SQLite
file with worker loops and an injected clock.

``max_resources_per_stack`` bounds a whole tree of nested stacks, as Heat's
``_validate_nested_resources`` does: a child is not started when its resources and every
resource already in its root's tree together would pass it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from engine import budget
from engine.context import RequestContext
from engine.db import stack_trees
from engine.db.models import Event, EventDelivery
from engine.db.session import Database
from engine.ir.stored import StoredIrs
from engine.resources.registry import ResourceTypeRegistry
from engine.services.records import StackRecord
from engine.worker.loop import WorkerLoop, WorkerSettings
from tests.stack_api import StackApi
from tests.templates import group_of_groups
from tests.unit.conftest import Clock

LIMIT = 10


def stack_of(count: int) -> str:
    """One OS::Heat::Stack whose template holds ``count`` resources."""
    body = "".join(f"\\n    r{i}: {{type: OS::Heat::None}}" for i in range(count))
    return f"""\
heat_template_version: 2018-08-31
resources:
  child:
    type: OS::Heat::Stack
    properties:
      template: "heat_template_version: 2018-08-31\\nresources:{body}"
"""


@pytest.fixture(autouse=True)
def limit() -> Iterator[None]:
    """``[api] max_resources_per_stack`` as LIMIT for this process: the worker's steps
    may run on threads of their own, which a per-thread evaluation would not reach."""
    configured = budget.limits()
    budget.configure(dataclasses.replace(configured, max_resources_per_stack=LIMIT))
    yield
    budget.configure(configured)


@pytest.fixture
def loop(db: Database, registry: ResourceTypeRegistry, clock: Clock) -> WorkerLoop:
    worker = WorkerLoop(db, registry, WorkerSettings(lease_seconds=30,
                                                     heartbeat_interval_seconds=5),
                        host="test", clock=clock,
                        irs=StoredIrs(registry.get, registry.constraint))
    worker.register()
    return worker


def settle(loop: WorkerLoop, clock: Clock, stacks: StackApi, ctx: RequestContext,
           record: StackRecord) -> StackRecord:
    """Run the worker, a second of the clock per round, until the stack has settled."""
    for _ in range(200):
        loop.run_once()
        clock.advance(1)
        stack = stacks.get(ctx, record.name, record.id)
        if stack.status != "IN_PROGRESS":
            return stack
    raise AssertionError(f"{record.name} never settled")


def tree_total(db: Database, stack_id: str) -> int:
    with db.read() as session:
        return stack_trees.tree_resources(session, stack_id).rows


def test_a_group_of_groups_past_the_limit_fails_with_heats_message(
        db: Database, stacks: StackApi, ctx: RequestContext, loop: WorkerLoop,
        clock: Clock) -> None:
    # 1 + 3 + 3 * 3 = 13 resources; each group alone is well within 10. The third
    # inner group would bring the tree from 10 to 13.
    record = stacks.create(ctx, {"stack_name": "s", "template": group_of_groups(3, 3)})

    stack = settle(loop, clock, stacks, ctx, record)

    assert (stack.action, stack.status) == ("CREATE", "FAILED")
    assert "RequestLimitExceeded: resources.2: Request limit exceeded: Maximum resources " \
           "per stack exceeded." in stack.status_reason
    assert tree_total(db, record.id) == LIMIT  # never past it


def test_a_tree_at_the_limit_is_created(
        db: Database, stacks: StackApi, ctx: RequestContext, loop: WorkerLoop,
        clock: Clock) -> None:
    record = stacks.create(ctx, {"stack_name": "s", "template": group_of_groups(3, 2)})

    stack = settle(loop, clock, stacks, ctx, record)

    assert (stack.action, stack.status) == ("CREATE", "COMPLETE")
    assert tree_total(db, record.id) == 1 + 3 + 3 * 2


def test_an_update_counts_the_childs_resources_as_its_new_templates(
        db: Database, stacks: StackApi, ctx: RequestContext, loop: WorkerLoop,
        clock: Clock) -> None:
    record = stacks.create(ctx, {"stack_name": "s", "template": stack_of(5)})
    assert settle(loop, clock, stacks, ctx, record).status == "COMPLETE"

    # 1 + 8: the child's 5 are replaced by 8, not added to them (1 + 5 + 8 = 14).
    stacks.update(ctx, record.name, record.id, {"template": stack_of(8)}, patch=True)
    stack = settle(loop, clock, stacks, ctx, record)
    assert (stack.action, stack.status) == ("UPDATE", "COMPLETE")
    assert tree_total(db, record.id) == 9

    stacks.update(ctx, record.name, record.id, {"template": stack_of(10)}, patch=True)
    stack = settle(loop, clock, stacks, ctx, record)
    assert (stack.action, stack.status) == ("UPDATE", "FAILED")
    assert "Maximum resources per stack exceeded." in stack.status_reason


def test_a_child_stack_sends_its_events_to_its_parents_sinks(
        db: Database, stacks: StackApi, ctx: RequestContext, loop: WorkerLoop,
        clock: Clock) -> None:
    sink = {"type": "webhook", "target": "http://receiver.example/", "secret": "s"}
    record = stacks.create(ctx, {"stack_name": "s", "template": stack_of(1),
                                 "environment": {"event_sinks": [sink]}})

    assert settle(loop, clock, stacks, ctx, record).status == "COMPLETE"
    with db.read() as session:
        owed = {(row.stack_id, row.event_id, row.target)
                for row in session.scalars(select(EventDelivery))}
        events = {(row.stack_id, row.id, sink["target"])
                  for row in session.scalars(select(Event))}
    assert owed == events, "every event of the tree, the child's too, once"
    assert len({stack_id for stack_id, _, _ in owed}) == 2
