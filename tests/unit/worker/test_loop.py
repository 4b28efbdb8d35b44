"""Worker loops on a SQLite file with an injected clock: claims kept while a worker lives,
fencing and self-fencing, resume after a worker dies, and bounded parallelism. No server,
no sleeping (the worker's monotonic clock follows the test's)."""

from __future__ import annotations

import datetime
import logging
from typing import Any, ClassVar

import pytest
from sqlalchemy import event, select

from engine.context import RequestContext
from engine.db.models import Operation, Step, Worker
from engine.db.session import Database
from engine.resources.base import Resource
from engine.resources.registry import ResourceTypeRegistry
from engine.services.events import EventQuery
from engine.services.proposals import StackLimits
from tests.stack_api import StackApi
from tests.unit.conftest import Clock
from tests.unit.worker.running import create, run, worker_for

WAITING = """\
heat_template_version: 2018-08-31
resources:
  slow:
    type: OS::Heat::TestResource
    properties: {wait_secs: 60}
  after:
    type: OS::Heat::RandomString
    depends_on: slow
"""

WIDE = "heat_template_version: 2018-08-31\nresources:\n" + "".join(
    f"  r{i}:\n    type: OS::Heat::TestResource\n    properties: {{wait_secs: 5}}\n"
    for i in range(10))


def test_a_dead_workers_step_is_resumed_from_its_token(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, WAITING)
    first = worker_for(stacks)
    run(first)
    slow = stacks.get_resource(ctx, name, stack_id, "slow")
    assert (slow.action, slow.status) == ("CREATE", "IN_PROGRESS")
    physical_id = slow.physical_id
    assert physical_id  # recorded before waiting

    # The first worker dies: it stops renewing. Its lease expires after 30 s.
    clock.advance(31)
    second = worker_for(stacks)
    run(second)
    assert second.held_count == 1  # it took the step over, still waiting on the deadline
    clock.advance(30)
    run(second)

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status) == ("CREATE", "COMPLETE")
    slow = stacks.get_resource(ctx, name, stack_id, "slow")
    assert slow.physical_id == physical_id  # resumed, not created a second time
    events = stacks.list_events(ctx, name, stack_id, EventQuery(ascending=True), "slow")
    assert [f"{e.action}_{e.status}" for e in events] == ["CREATE_IN_PROGRESS",
                                                          "CREATE_COMPLETE"]


def test_a_worker_that_was_fenced_acts_no_more_and_writes_nothing(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, WAITING)
    # No heartbeat before its next poll: by then its liveness has lapsed.
    stalled = worker_for(stacks, heartbeat_interval_seconds=10_000)
    run(stalled)
    clock.advance(31)
    successor = worker_for(stacks)  # fences the stalled worker as it registers
    run(successor)
    clock.advance(30)
    run(successor)
    assert stacks.get(ctx, name, stack_id).status == "COMPLETE"
    events_before = len(stacks.list_events(ctx, name, stack_id, EventQuery()))

    # The stalled worker wakes up past the point where it may act: it asks, finds itself
    # fenced, and drops the step without looking at it or writing anything.
    run(stalled, ticks=1)
    assert stalled.held_count == 0
    assert len(stacks.list_events(ctx, name, stack_id, EventQuery())) == events_before


def test_a_step_its_operation_ended_is_dropped_without_a_warning(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, caplog: pytest.LogCaptureFixture) -> None:
    stacks.create(ctx, {"stack_name": "s", "template": WAITING, "timeout_mins": 1})
    holder = worker_for(stacks, lease_seconds=120)  # alive through the minute below
    run(holder)
    assert holder.held_count == 1
    clock.advance(61)
    run(worker_for(stacks), ticks=1)  # another worker times the create out

    with caplog.at_level(logging.INFO, logger="engine.worker.loop"):
        run(holder, ticks=1)  # its look at what it holds finds the step closed

    assert holder.held_count == 0
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", f"worker {holder.id} stops step {_step_id(db)}: its operation ended")]


def test_a_fenced_worker_drops_what_it_held_and_rejoins_under_a_new_id(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, caplog: pytest.LogCaptureFixture) -> None:
    create(stacks, ctx, WAITING)
    stalled = worker_for(stacks)
    run(stalled)
    fenced_id = stalled.id
    clock.advance(31)
    successor = worker_for(stacks)  # its liveness lapsed: another worker fences it
    run(successor, ticks=1)
    assert successor.held_count == 1

    caplog.clear()  # the successor's word that it fenced the stalled worker
    with caplog.at_level(logging.INFO, logger="engine.worker.loop"):
        run(stalled, ticks=1)

    assert stalled.held_count == 0
    assert stalled.id != fenced_id
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", f"worker {fenced_id} was fenced (its liveness lapsed: cut off from the "
                    "database, paused or stuck for over 30.0 s): it drops the 1 steps it "
                    f"held and goes on as worker {stalled.id}")]
    with db.read() as session:
        rows = {w.id: w for w in session.scalars(select(Worker))}
    assert rows[fenced_id].fenced_at is not None
    assert rows[stalled.id].fenced_at is None and rows[stalled.id].stopped_at is None
    # As a new worker it claims what comes, and keeps its claims.
    run(stalled)
    assert successor.held_count == 1


def _step_id(db: Database) -> int:
    """The id of the step of "slow", the one step these tests hold."""
    with db.transaction() as session:
        step_id = session.scalar(select(Step.id).where(Step.resource_name == "slow"))
    assert step_id is not None
    return step_id


def test_parallel_steps_are_bounded_and_hold_no_threads(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, WIDE)
    loop = worker_for(stacks, max_parallel_steps=4)
    run(loop)
    assert loop.held_count == 4
    in_progress = [r for r in stacks.list_resources(ctx, name, stack_id, {})
                   if r.status == "IN_PROGRESS"]
    assert len(in_progress) == 4
    for _ in range(3):
        clock.advance(6)
        run(loop)
    assert stacks.get(ctx, name, stack_id).status == "COMPLETE"


def test_graceful_stop_hands_steps_back_at_once(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, WAITING)
    leaving = worker_for(stacks)
    run(leaving)
    leaving.hand_back()
    assert leaving.held_count == 0
    # No lease to wait out: another worker takes the step over immediately.
    taker = worker_for(stacks)
    run(taker)
    assert taker.held_count == 1
    clock.advance(61)
    run(taker)
    assert stacks.get(ctx, name, stack_id).status == "COMPLETE"


class Exploding(Resource):
    """A type whose start raises, as a buggy plugin would."""

    def handle_create(self) -> Any:
        raise RuntimeError("backend said no")


def test_a_plugin_that_raises_fails_its_resource_not_the_worker(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, ctx: RequestContext) -> None:
    types = {name: registry.get(name) for name in registry.names()}
    with_exploding = ResourceTypeRegistry({**types, "Test::Exploding": Exploding})
    stacks = StackApi(db, with_exploding, StackLimits(), clock)
    template = ("heat_template_version: 2018-08-31\nresources:\n"
                "  bad: {type: 'Test::Exploding'}\n  fine: {type: OS::Heat::None}\n")
    name, stack_id = create(stacks, ctx, template)
    loop = worker_for(stacks)
    run(loop)
    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status) == ("CREATE", "FAILED")
    assert stack.status_reason == (
        "Resource CREATE failed: RuntimeError: resources.bad: backend said no")

    # The same worker goes on to serve other stacks.
    other = stacks.create(ctx, {"stack_name": "next", "template": template.replace(
        "  bad: {type: 'Test::Exploding'}\n", "")})
    run(loop)
    assert stacks.get(ctx, other.name, other.id).status == "COMPLETE"


def test_deleting_a_stack_whose_type_was_uninstalled_fails_only_that_type(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, ctx: RequestContext) -> None:
    types = {name: registry.get(name) for name in registry.names()}
    before = ResourceTypeRegistry({**types, "Test::Gone": types["OS::Heat::None"]})
    template = ("heat_template_version: 2018-08-31\nresources:\n"
                "  gone: {type: 'Test::Gone'}\n  kept: {type: OS::Heat::None}\n")
    installed = StackApi(db, before, StackLimits(), clock)
    name, stack_id = create(installed, ctx, template)
    run(worker_for(installed))

    after = StackApi(db, registry, StackLimits(), clock)
    after.delete(ctx, name, stack_id)
    loop = worker_for(after)
    run(loop)
    stack = after.get(ctx, name, stack_id)
    assert (stack.action, stack.status) == ("DELETE", "FAILED")
    assert "The Resource Type (Test::Gone) could not be found." in stack.status_reason
    statuses = {r.name: f"{r.action}_{r.status}"
                for r in after.list_resources(ctx, name, stack_id, {})}
    assert statuses == {"gone": "DELETE_FAILED", "kept": "DELETE_COMPLETE"}
    assert loop.held_count == 0


class Timed(Resource):
    """Done five seconds after it starts, and says so; counts the looks it gets."""

    checks: ClassVar[list[float]] = []

    def handle_create(self) -> Any:
        return self.runtime.now() + 5

    def check_create_complete(self, token: Any) -> bool:
        Timed.checks.append(self.runtime.now())
        return bool(self.runtime.now() >= token)

    def next_check_in(self, token: Any) -> float | None:
        return float(token) - self.runtime.now()


def test_a_step_is_looked_at_when_its_type_says_it_will_be_done(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, ctx: RequestContext) -> None:
    types = {name: registry.get(name) for name in registry.names()}
    timed = ResourceTypeRegistry({**types, "Test::Timed": Timed})
    stacks = StackApi(db, timed, StackLimits(), clock)
    name, stack_id = create(stacks, ctx, "heat_template_version: 2018-08-31\nresources:\n"
                                         "  t: {type: 'Test::Timed'}\n")
    loop = worker_for(stacks, max_step_poll_seconds=0.5)
    Timed.checks.clear()
    run(loop, 3)
    started = Timed.checks[0]

    for _ in range(9):  # without the hint it would be looked at every 0.5 s at most
        clock.advance(0.5)
        run(loop, 1)
    assert Timed.checks == [started]

    clock.advance(0.5)
    run(loop, 3)
    assert Timed.checks == [started, started + 5]
    assert stacks.get(ctx, name, stack_id).status == "COMPLETE"


def test_type_concurrency_bounds_the_steps_of_one_type(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, WIDE + "  other: {type: OS::Heat::None}\n")
    loop = worker_for(stacks, type_concurrency={"OS::Heat::TestResource": 3})
    held_at_most = 0
    for _ in range(40):
        run(loop, 1)
        held_at_most = max(held_at_most, loop.held_count)
        clock.advance(1)
    # Ten 5-second waits, three at a time; the unlimited type was not held back.
    assert held_at_most == 3
    assert stacks.get_resource(ctx, name, stack_id, "other").status == "COMPLETE"
    assert stacks.get(ctx, name, stack_id).status == "COMPLETE"


class SlowToStart(Resource):
    """Each start takes ten seconds of the test's clock; made things are counted."""

    clock: ClassVar[Clock]
    made: ClassVar[list[str]] = []

    def handle_create(self) -> Any:
        SlowToStart.clock.advance(10)
        SlowToStart.made.append(self.name)
        self.set_physical_id(self.name)
        return None

    def check_create_complete(self, token: Any) -> bool:
        return False

    def next_check_in(self, token: Any) -> float | None:
        return 3600.0


SLOW_STARTS = "heat_template_version: 2018-08-31\nresources:\n" + "".join(
    f"  r{i}: {{type: 'Test::SlowToStart'}}\n" for i in range(4))


@pytest.fixture
def slow_starts(db: Database, registry: ResourceTypeRegistry, clock: Clock) -> StackApi:
    SlowToStart.clock, SlowToStart.made = clock, []
    types = {name: registry.get(name) for name in registry.names()}
    return StackApi(db, ResourceTypeRegistry({**types, "Test::SlowToStart": SlowToStart}),
                    StackLimits(), clock)


def test_past_the_time_it_may_act_a_worker_starts_nothing_more_and_goes_on_once_renewed(
        clock: Clock, slow_starts: StackApi, ctx: RequestContext) -> None:
    create(slow_starts, ctx, SLOW_STARTS)
    loop = worker_for(slow_starts)  # renewed now: it may act for 30 - 5 s
    run(loop, ticks=1)  # plans, then starts r0, r1, r2 (30 s); r3 would be past 25 s

    assert SlowToStart.made == ["r0", "r1", "r2"]
    assert loop.held_count == 4, "r3 waits, held, not started"

    run(loop, ticks=1)  # renews (nobody fenced it: nothing was taken), then starts r3
    assert SlowToStart.made == ["r0", "r1", "r2", "r3"]


def test_a_worker_fenced_while_it_waited_leaves_its_steps_to_the_next_made_once(
        clock: Clock, slow_starts: StackApi, ctx: RequestContext) -> None:
    name, stack_id = create(slow_starts, ctx, SLOW_STARTS)
    stalled = worker_for(slow_starts)
    run(stalled, ticks=1)
    assert SlowToStart.made == ["r0", "r1", "r2"]

    clock.advance(1)  # its liveness (30 s from its renewal) has lapsed
    successor = worker_for(slow_starts)  # fences it as it registers
    run(successor)
    run(stalled)

    assert stalled.held_count == 0 and successor.held_count == 4
    assert sorted(SlowToStart.made) == ["r0", "r1", "r2", "r3"], "each made once"


def test_an_operation_a_bug_made_the_worker_drop_is_given_back_for_a_lease(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext,
        caplog: pytest.LogCaptureFixture) -> None:
    _, stack_id = create(stacks, ctx, WAITING)
    with db.transaction() as session:
        operation = session.scalars(select(Operation).where(
            Operation.stack_id == stack_id)).one()
        # What no request writes: reading the operation's hidden values raises, before
        # anything of it runs (and so before the poison rule could count it).
        operation.payload = {"target": 5}
    loop = worker_for(stacks)

    with caplog.at_level(logging.ERROR, logger="engine.worker.loop"):
        run(loop, ticks=2)

    with db.read() as session:
        dropped = session.get_one(Operation, operation.id)
    # Not held for good by a worker that lives on: nobody's, and anyone's after a lease.
    assert (dropped.lease_owner, dropped.lease_expires_at, dropped.failures) == (
        None, clock() + datetime.timedelta(seconds=30), 1)
    assert [r.getMessage().split(";")[1] for r in caplog.records] == [" given back for a lease"]


def test_after_an_outage_that_all_workers_saw_none_fences_another(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    create(stacks, ctx, WIDE.replace("wait_secs: 5", "wait_secs: 600"))
    first, second = worker_for(stacks, max_parallel_steps=5), worker_for(stacks)
    run(first, ticks=1)
    run(second, ticks=1)
    assert (first.held_count, second.held_count) == (5, 5)
    ids = (first.id, second.id)

    # Neither could renew for longer than a lease (the database was away): whichever
    # comes back first cannot tell the other is not dead, so it fences nobody.
    clock.advance(31)
    run(first, ticks=1)
    run(second, ticks=1)

    assert (first.id, second.id) == ids
    assert (first.held_count, second.held_count) == (5, 5)


def chain(count: int, kind: str = "OS::Heat::None", properties: str = "{}") -> str:
    return "heat_template_version: 2018-08-31\nresources:\n" + "".join(
        f"  r{i}:\n    type: {kind}\n    properties: {properties}\n"
        + (f"    depends_on: r{i - 1}\n" if i else "") for i in range(count))


def test_a_chain_goes_one_transaction_a_link_within_one_tick(
        db: Database, stacks: StackApi, ctx: RequestContext) -> None:
    # Each close claims and prepares the step it made ready in its own transaction, and
    # the tick starts it: a link was a claim, a prepare and a close, a tick each.
    links = 12
    name, stack_id = create(stacks, ctx, chain(links))
    loop = worker_for(stacks)
    writes: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if statement.startswith("BEGIN IMMEDIATE"):
            writes.append(statement)

    event.listen(db.engine, "before_cursor_execute", count)
    try:
        run(loop, 1)
    finally:
        event.remove(db.engine, "before_cursor_execute", count)
    statuses = {r.name: r.status for r in stacks.list_resources(ctx, name, stack_id, {})}
    assert set(statuses.values()) == {"COMPLETE"}
    # The operation's claim and its plan, the first step's claim and prepare, a close a
    # link; the operation's finish is the next tick's.
    assert len(writes) <= links + 4
    run(loop, 1)
    assert stacks.get(ctx, name, stack_id).status == "COMPLETE"


def test_steps_a_close_makes_ready_are_claimed_within_the_workers_limits(
        db: Database, stacks: StackApi, ctx: RequestContext, clock: Clock) -> None:
    fan = ("heat_template_version: 2018-08-31\nresources:\n  root: {type: OS::Heat::None}\n"
           + "".join(f"  w{i}:\n    type: OS::Heat::TestResource\n"
                     "    properties: {wait_secs: 5}\n    depends_on: root\n"
                     for i in range(6))
           + "".join(f"  n{i}: {{type: OS::Heat::None, depends_on: root}}\n" for i in range(2)))
    name, stack_id = create(stacks, ctx, fan)
    loop = worker_for(stacks, max_parallel_steps=5,
                      type_concurrency={"OS::Heat::TestResource": 3})
    run(loop, 1)
    held = {r.name for r in stacks.list_resources(ctx, name, stack_id, {})
            if r.status == "IN_PROGRESS"}
    # Three waiting ones at most; the quick ones came and went within the slots.
    assert loop.held_count == 3
    assert len(held) == 3 and all(name.startswith("w") for name in held)
    with db.read() as session:
        ready = set(session.scalars(select(Step.resource_name).where(
            Step.stack_id == stack_id, Step.state == "READY")))
    assert ready == {f"w{i}" for i in range(6)} - held
    for _ in range(3):
        clock.advance(6)
        run(loop)
    assert stacks.get(ctx, name, stack_id).status == "COMPLETE"
