"""The poison rule on a SQLite file with an injected clock: an operation phase or a step
that keeps failing on a Kiln bug, or that kills its worker, is tried a few times a short
wait apart and then ends FAILED with a reason that leads an operator into the log; what
is cut short through no fault of its own (a stop, an outage, a round that took too long)
is not counted. Concurrent writers are tried on PostgreSQL:
tests/functional/worker/test_poison_postgresql.py."""

from __future__ import annotations

import contextlib
import datetime
import logging
import threading
import uuid
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from oslo_config import cfg
from sqlalchemy import select

from engine import config
from engine.context import ADMIN_ROLE, RequestContext
from engine.db import leases
from engine.db.models import Operation, Stack, Step
from engine.db.session import Database
from engine.errors import DatabaseUnavailable, InternalError
from engine.ir.stored import StoredIrs
from engine.lifecycle.registry import LifecycleRegistry, LoadedPlugin
from engine.resources.base import Resource, Token
from engine.resources.registry import ResourceTypeRegistry
from engine.schema import Attribute
from engine.services.events import EventQuery
from engine.services.proposals import StackLimits
from engine.services.tenants import TenantService
from engine.vocabulary import OperationState, StepState
from engine.worker.lifecycle_calls import LifecycleCalls
from engine.worker.loop import WorkerLoop, WorkerSettings
from engine.worker.operation import OperationDriver
from engine.worker.poison import PoisonRule
from tests.stack_api import StackApi
from tests.unit.conftest import Clock, alive_worker
from tests.unit.worker.running import create, run, worker, worker_for
from tests.unit.worker.test_lifecycle_calls import Entry, Gate, Recording, loaded
from tests.unit.worker.test_loop import WAITING

REQUEST = "req-7f3c"
PLAIN = "heat_template_version: 2018-08-31\nresources:\n  fine: {type: OS::Heat::None}\n"


class Killed(BaseException):  # noqa: N818 -- stands for SIGKILL: nothing in Kiln catches it
    """The worker process dies here."""


class Unstorable(Resource):
    """Answers ``get_attr`` with a value JSON cannot hold, as the one-branch ``if`` once
    left its marker in outputs (issue 17): the finish phase fails when it commits."""

    attributes_schema: ClassVar[dict[str, Attribute]] = {"value": Attribute("a set")}

    def get_attribute(self, name: str) -> Any:
        return {"not", "json"}


class Killing(Resource):
    """Kills its worker whenever Kiln reads its attribute (at finish, for an output)."""

    attributes_schema: ClassVar[dict[str, Attribute]] = {"value": Attribute("never read")}
    reads: ClassVar[int] = 0

    def get_attribute(self, name: str) -> Any:
        Killing.reads += 1
        raise Killed()


class LeavesUnstorableData(Resource):
    """Its create leaves private data Kiln cannot store (a plugin's mistake, but what
    fails is Kiln's write); ``Failing`` raises after that, so recording the failure
    meets the same write. It makes its backend thing once, as the resource contract
    asks: a create tried again goes on with the physical id recorded."""

    creates: ClassVar[int] = 0

    def handle_create(self) -> Token:
        if self.physical_id is None:
            type(self).creates += 1
            self.set_physical_id(f"thing-{type(self).creates}")
        self.data["left"] = {"a set"}
        return None


class FailingWithUnstorableData(LeavesUnstorableData):
    creates: ClassVar[int] = 0

    def handle_create(self) -> Token:
        super().handle_create()
        raise RuntimeError("backend said no")


class KillingCreate(Resource):
    creates: ClassVar[int] = 0

    def handle_create(self) -> Token:
        KillingCreate.creates += 1
        raise Killed()


class KillingFirstCreate(Resource):
    """Kills the first worker that creates it (a crash mid-round); then creates."""

    creates: ClassVar[int] = 0

    def handle_create(self) -> Token:
        KillingFirstCreate.creates += 1
        if KillingFirstCreate.creates == 1:
            raise Killed()
        return None


class FailingSecondLook(Resource):
    """Its create starts, and each instance's second look fails as a Kiln bug would:
    by killing the worker (``how = "kills"``) or by leaving data Kiln cannot store
    (``"unstorable"``)."""

    how: ClassVar[str] = "kills"
    looks: ClassVar[int] = 0

    def handle_create(self) -> Token:
        if self.physical_id is None:
            self.set_physical_id("thing")
        self.instance_looks = 0
        return {"started": True}

    def check_create_complete(self, token: Token) -> bool:
        FailingSecondLook.looks += 1
        self.instance_looks = getattr(self, "instance_looks", 0) + 1
        if self.instance_looks == 2:
            if FailingSecondLook.how == "kills":
                raise Killed()
            self.data["left"] = {"a set"}
        return False


class SlowToRead(Resource):
    """Reading its attribute takes 1.5 s of the (injected) clock: stands for a yaql or
    pattern evaluation that uses most of its budget."""

    attributes_schema: ClassVar[dict[str, Attribute]] = {"value": Attribute("slow")}
    clock: ClassVar[Clock | None] = None

    def get_attribute(self, name: str) -> Any:
        assert SlowToRead.clock is not None
        SlowToRead.clock.advance(1.5)
        return "read"


class CutByOutage(Resource):
    """The database goes away while its create runs, ``outages`` times (the round's
    write fails); then it creates."""

    outage: ClassVar[Outage | None] = None
    outages: ClassVar[int] = 0

    def handle_create(self) -> Token:
        assert CutByOutage.outage is not None
        if CutByOutage.outages:
            CutByOutage.outages -= 1
            CutByOutage.outage.transactions_left = 0
        return None


class Outage:
    """Stands for the database going away: once ``transactions_left`` reaches 0, the
    next transaction raises ``DatabaseUnavailable`` (None: it never goes away)."""

    def __init__(self, db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
        self.transactions_left: int | None = None
        real = db.transaction

        @contextlib.contextmanager
        def transaction() -> Iterator[Any]:
            if self.transactions_left is not None:
                if self.transactions_left <= 0:
                    self.transactions_left = None
                    raise DatabaseUnavailable(reason="connection refused")
                self.transactions_left -= 1
            with real() as session:
                yield session

        monkeypatch.setattr(db, "transaction", transaction)


TYPES = {"Test::Unstorable": Unstorable, "Test::Killing": Killing,
         "Test::LeavesUnstorableData": LeavesUnstorableData,
         "Test::FailingWithUnstorableData": FailingWithUnstorableData,
         "Test::KillingCreate": KillingCreate, "Test::KillingFirstCreate": KillingFirstCreate,
         "Test::FailingSecondLook": FailingSecondLook, "Test::SlowToRead": SlowToRead,
         "Test::CutByOutage": CutByOutage}


class BuggyRegistry(ResourceTypeRegistry):
    """Stands for a bug in Kiln that makes planning raise every time."""

    def get(self, type_name: str) -> Any:
        raise TypeError("a bug")


class BrokenPostOps(LifecycleRegistry):
    """Stands for a bug in Kiln's post-op calls: finding the plugin to call raises."""

    def find(self, name: str) -> LoadedPlugin | None:
        raise TypeError("a bug in the post-ops")


@pytest.fixture
def ctx(db: Database, clock: Clock) -> RequestContext:
    tenant = TenantService(db, clock).create_tenant("t")
    return RequestContext(tenant_id=tenant.id, token_tenant_id=tenant.id, role=ADMIN_ROLE,
                          request_id=REQUEST)


@pytest.fixture
def types(registry: ResourceTypeRegistry) -> ResourceTypeRegistry:
    return ResourceTypeRegistry({**{name: registry.get(name) for name in registry.names()},
                                 **TYPES})


@pytest.fixture
def stacks(db: Database, types: ResourceTypeRegistry, clock: Clock) -> StackApi:
    return StackApi(db, types, StackLimits(), clock)


def operation_of(db: Database, stack_id: str) -> Operation:
    with db.read() as session:
        return session.scalars(select(Operation).where(Operation.stack_id == stack_id)
                               .order_by(Operation.created_at)).all()[-1]


def step_of(db: Database, stack_id: str, name: str) -> Step:
    with db.read() as session:
        return session.scalars(select(Step).where(Step.stack_id == stack_id,
                                                  Step.resource_name == name)).one()


def plan(db: Database, types: ResourceTypeRegistry, clock: Clock) -> None:
    """Plan the next operation: its steps are written, none claimed."""
    irs = StoredIrs(types.get, types.constraint)
    planner = alive_worker(db, f"planner-{uuid.uuid4().hex[:12]}", clock())
    driver = OperationDriver(db, types, planner, clock,
                             LifecycleCalls(db, types, LifecycleRegistry(()), planner, clock,
                                            irs=irs), irs=irs)
    with db.transaction() as session:
        [operation] = leases.claim_operations(session, planner, clock(), 1)
    driver.advance(operation.id)


def until_dead(loop: WorkerLoop, ticks: int = 20, clock: Clock | None = None) -> bool:
    """Run ``loop`` until it is killed (True) or has had ``ticks`` ticks (False); with
    ``clock``, half a second passes after each tick."""
    try:
        for _ in range(ticks):
            loop.run_once()
            if clock is not None:
                clock.advance(0.5)
    except Killed:
        return True
    return False


def tick_through_outage(loop: WorkerLoop) -> bool:
    """One tick; True if the database went away during it."""
    try:
        loop.run_once()
    except DatabaseUnavailable:
        return True
    return False


def statuses(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str
             ) -> dict[str, str]:
    return {r.name: f"{r.action}_{r.status}"
            for r in stacks.list_resources(ctx, name, stack_id, {})}


def internal_error(subject: str) -> str:
    return (f"Kiln failed unexpectedly (an internal error, 3 tries); the operator can find "
            f"{subject} (request {REQUEST}) in the engine log")


# --- operations ---------------------------------------------------------------------------


def test_a_phase_that_keeps_failing_is_tried_three_times_a_short_wait_apart(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, caplog: pytest.LogCaptureFixture) -> None:
    name, stack_id = create(stacks, ctx, PLAIN)
    loop = worker(db, BuggyRegistry({}), clock)  # the defaults: 3 tries, 0.5 s doubling
    started = clock.now
    waits = []
    run(loop, ticks=1)
    for attempt in (1, 2, 3):
        operation = operation_of(db, stack_id)
        assert (operation.attempt, operation.failures) == (attempt, attempt)
        assert operation.lease_owner is None  # given back, not held for a lease
        assert operation.lease_expires_at is not None
        wait = operation.lease_expires_at - clock.now
        waits.append(wait.total_seconds())
        clock.advance(wait.total_seconds() - 0.01)
        run(loop, ticks=1)
        assert operation_of(db, stack_id).attempt == attempt  # not before the wait is over
        clock.advance(0.02)
        run(loop, ticks=1)
    assert waits == [0.5, 1.0, 2.0]
    # Ended within seconds of the first try, not after leases (30 s each here).
    assert clock.now - started < datetime.timedelta(seconds=3.6)

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status) == ("CREATE", "FAILED")
    assert stack.status_reason == (
        f"Stack CREATE failed: {internal_error(f'operation {operation.id}')}")
    # Each failure is in the log with the ids the reason names, and its traceback.
    failures = [r for r in caplog.records if r.levelno == logging.ERROR and r.exc_info
                and operation.id in r.getMessage() and REQUEST in r.getMessage()]
    assert len(failures) == 3
    assert all(r.exc_info and r.exc_info[0] is TypeError for r in failures)


def test_an_output_json_cannot_hold_is_that_outputs_error_not_a_failed_finish(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    plugins = LifecycleRegistry([loaded(Recording("audit", log))])
    name, stack_id = create(stacks, ctx, (
        "heat_template_version: 2018-08-31\nresources:\n  u: {type: 'Test::Unstorable'}\n"
        "outputs:\n  out: {value: {get_attr: [u, value]}}\n"))
    loop = worker_for(stacks, plugins)
    for _ in range(10):
        run(loop, ticks=2)
        clock.advance(1)

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status) == ("CREATE", "COMPLETE")
    error = ("The output value cannot be represented as JSON: Object of type set is not "
             "JSON serializable")
    assert stack.outputs == [{"output_key": "out", "description": "No description given",
                              "output_value": None, "output_error": error}]
    with db.read() as session:  # what the finish stored: the same
        stored = session.get(Stack, stack_id)
        assert stored is not None and stored.outputs == stack.outputs
    assert log == [("audit", "pre", "CREATE", None), ("audit", "post", "CREATE", False)]


def test_post_ops_that_keep_failing_on_a_bug_are_skipped_and_the_stack_freed(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, caplog: pytest.LogCaptureFixture) -> None:
    log: list[Entry] = []
    plugins = BrokenPostOps([loaded(Recording("audit", log))])
    name, stack_id = create(stacks, ctx, PLAIN)
    loop = worker_for(stacks, plugins)
    for _ in range(10):
        run(loop, ticks=1)
        clock.advance(1)

    assert stacks.get(ctx, name, stack_id).status == "COMPLETE"  # decided before them
    operation = operation_of(db, stack_id)
    assert (operation.state, operation.lease_owner) == (OperationState.COMPLETE, None)
    assert log == [("audit", "pre", "CREATE", None)]
    assert any("post-ops abandoned after 3 tries" in r.getMessage()
               and operation.id in r.getMessage() for r in caplog.records)
    # Not a silent skip: the stack's events name the plugin never told, and why.
    assert [(c["plugin"], c["phase"], c["verdict"], c["message"])
            for c in stacks.lifecycle_calls(ctx, name, stack_id) if c["phase"] == "post"] == [
        ("audit", "post", "not_called",
         "the post-op phase failed unexpectedly 3 times and was given up")]
    assert {c["operation_id"] for c in stacks.lifecycle_calls(ctx, name, stack_id)} == {
        operation.id}
    stacks.delete(ctx, name, stack_id)
    for _ in range(10):
        run(loop, ticks=1)
        clock.advance(1)
    assert stacks.get(ctx, name, stack_id).action == "DELETE"
    assert stacks.get(ctx, name, stack_id).status == "COMPLETE"


class GiveUpBug(OperationDriver):
    """Stands for a bug in the writes that end an operation, which giving up meets too."""

    def _give_up(self, *args: Any, **kwargs: Any) -> str | None:
        raise TypeError("a bug in giving up")


def test_when_giving_up_fails_too_the_operation_ends_with_the_fewest_writes(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, caplog: pytest.LogCaptureFixture) -> None:
    name, stack_id = create(stacks, ctx, PLAIN)
    buggy = BuggyRegistry({})
    owner = alive_worker(db, "worker-1", clock())
    irs = StoredIrs(buggy.get, buggy.constraint)
    lifecycle_calls = LifecycleCalls(db, buggy, LifecycleRegistry(()), owner, clock,
                                     irs=irs)
    driver = GiveUpBug(db, buggy, owner, clock, lifecycle_calls, irs=irs)
    for _ in range(4):
        with db.transaction() as session:
            [claimed] = [op.id for op in leases.claim_operations(session, owner, clock(),
                                                                  1)]
        driver.advance(claimed)
        clock.advance(5)

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status, stack.status_reason) == (
        "CREATE", "FAILED", f"Stack CREATE failed: {internal_error(f'operation {claimed}')}")
    operation = operation_of(db, stack_id)
    assert (operation.state, operation.lease_owner) == (OperationState.FAILED, None)
    assert operation.finished_at is not None  # the stack takes its next request
    assert any("giving up failed too" in r.getMessage() and claimed in r.getMessage()
               for r in caplog.records)
    stacks.delete(ctx, name, stack_id)
    run(worker_for(stacks))
    assert stacks.get(ctx, name, stack_id).status == "COMPLETE"


def test_when_giving_up_fails_too_each_owed_post_op_is_recorded_as_never_called(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    name, stack_id = create(stacks, ctx, PLAIN)
    buggy = BuggyRegistry({})
    owner = alive_worker(db, "worker-1", clock())
    irs = StoredIrs(buggy.get, buggy.constraint)
    plugins = LifecycleRegistry([loaded(Recording("quota", log))])
    lifecycle_calls = LifecycleCalls(db, buggy, plugins, owner, clock, irs=irs)
    driver = GiveUpBug(db, buggy, owner, clock, lifecycle_calls, irs=irs)
    for _ in range(4):
        with db.transaction() as session:
            [claimed] = [op.id for op in leases.claim_operations(session, owner, clock(),
                                                                  1)]
        driver.advance(claimed)
        clock.advance(5)

    assert operation_of(db, stack_id).state == OperationState.FAILED
    assert log == [("quota", "pre", "CREATE", None)]  # the plan raised; no post-op ran
    [never] = [c for c in stacks.lifecycle_calls(ctx, name, stack_id) if c["phase"] == "post"]
    assert (never["plugin"], never["verdict"], never["is_stack_failure"], never["message"]) == (
        "quota", "not_called", True,
        "the operation was abandoned after repeated internal errors")
    assert never["operation_id"] == operation_of(db, stack_id).id


def test_a_phase_that_kills_its_worker_is_failed_by_the_worker_after_the_third(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, (
        "heat_template_version: 2018-08-31\nresources:\n  k: {type: 'Test::Killing'}\n"
        "outputs:\n  out: {value: {get_attr: [k, value]}}\n"))
    Killing.reads = 0
    deaths = 0
    while until_dead(worker_for(stacks)):
        deaths += 1
        assert deaths <= 3, "the operation was tried again after its third death"
        clock.advance(31)  # the dead worker's lease lapses; a restarted one claims it

    assert (deaths, Killing.reads) == (3, 3)
    # Without its outputs: resolving them now would read the attribute once more.
    stack = stacks.get(ctx, name, stack_id, with_outputs=False)
    operation = operation_of(db, stack_id)
    assert (stack.status, stack.status_reason) == (
        "FAILED", f"Stack CREATE failed: {internal_error(f'operation {operation.id}')}")


def test_a_phase_cut_short_by_a_graceful_stop_is_not_counted(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, release: threading.Event) -> None:
    gate = Gate(release)
    plugins = LifecycleRegistry([loaded(Recording("slow", [], pre=gate.pre))])
    _, stack_id = create(stacks, ctx, PLAIN)
    leaving = worker_for(stacks, plugins, operation_threads=1,
                     heartbeat_interval_seconds=0.05)
    run(leaving, ticks=1)
    gate.wait_reached()
    assert operation_of(db, stack_id).failures == 1
    leaving.hand_back()
    operation = operation_of(db, stack_id)
    assert (operation.failures, operation.attempt) == (0, 1)


# --- steps --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["LeavesUnstorableData", "FailingWithUnstorableData"])
def test_a_step_that_keeps_failing_is_retried_alone_then_fails_its_resource(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, kind: str) -> None:
    cls: type[LeavesUnstorableData] = TYPES[f"Test::{kind}"]  # type: ignore[assignment]
    cls.creates = 0
    name, stack_id = create(stacks, ctx, (
        "heat_template_version: 2018-08-31\nresources:\n"
        f"  bad: {{type: 'Test::{kind}'}}\n"
        "  after: {type: OS::Heat::None, depends_on: bad}\n"
        + "".join(f"  fine{i}: {{type: OS::Heat::None}}\n" for i in range(3))))
    loop = worker_for(stacks)
    run(loop, ticks=3)
    # The batch it was claimed with went through in the same round.
    statuses = {r.name: f"{r.action}_{r.status}"
                for r in stacks.list_resources(ctx, name, stack_id, {})}
    assert {statuses[f"fine{i}"] for i in range(3)} == {"CREATE_COMPLETE"}
    assert statuses["bad"] == "CREATE_IN_PROGRESS"
    bad = step_of(db, stack_id, "bad")
    assert (bad.failures, bad.lease_owner) == (1, None)

    for _ in range(20):
        clock.advance(0.5)
        run(loop, ticks=1)

    # The physical id outlived the writes that failed: the thing was made once, and
    # each try went on with it (a real backend would hold no leaked copies).
    assert cls.creates == 1
    bad = step_of(db, stack_id, "bad")
    reason = ("InternalError: resources.bad: "
              + internal_error(f"step {bad.id} of operation {bad.operation_id}"))
    resource = stacks.get_resource(ctx, name, stack_id, "bad")
    assert (resource.action, resource.status, resource.status_reason,
            resource.physical_id) == ("CREATE", "FAILED", reason, "thing-1")
    assert step_of(db, stack_id, "after").state == StepState.CANCELLED
    stack = stacks.get(ctx, name, stack_id)
    assert (stack.status, stack.status_reason) == (
        "FAILED", f"Resource CREATE failed: {reason}")


def test_a_step_that_kills_its_workers_is_failed_and_its_batch_completes(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    names = [f"r{i}" for i in range(5)]
    killer = names[2]
    kinds = {n: "Test::KillingCreate" if n == killer else "OS::Heat::None" for n in names}
    name, stack_id = create(stacks, ctx, "heat_template_version: 2018-08-31\nresources:\n"
                            + "".join(f"  {n}: {{type: '{kind}'}}\n"
                                      for n, kind in kinds.items()))
    KillingCreate.creates = 0
    deaths = 0
    while until_dead(worker_for(stacks)):
        deaths += 1
        assert deaths <= 3, "the step was tried again after its third death"
        clock.advance(31)

    assert (deaths, KillingCreate.creates) == (3, 3)
    statuses = {r.name: f"{r.action}_{r.status}"
                for r in stacks.list_resources(ctx, name, stack_id, {})}
    assert statuses == {n: "CREATE_FAILED" if n == killer else "CREATE_COMPLETE"
                        for n in names}
    step = step_of(db, stack_id, killer)
    assert stacks.get_resource(ctx, name, stack_id, killer).status_reason == (
        f"InternalError: resources.{killer}: "
        + internal_error(f"step {step.id} of operation {step.operation_id}"))
    assert stacks.get(ctx, name, stack_id).status == "FAILED"


@pytest.mark.parametrize(("how", "deaths", "looks"), [("kills", 4, 8), ("unstorable", 0, 6)])
def test_a_step_that_fails_on_its_second_look_ends_after_the_configured_tries(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, how: str, deaths: int, looks: int) -> None:
    # Each claim's first look passes: were it progress, the count would never pass 1.
    FailingSecondLook.how, FailingSecondLook.looks = how, 0
    name, stack_id = create(stacks, ctx, (
        "heat_template_version: 2018-08-31\nresources:\n"
        "  bad: {type: 'Test::FailingSecondLook'}\n"))
    died = 0
    while until_dead(worker_for(stacks), ticks=20, clock=clock):
        died += 1
        assert died <= deaths, "tried again after its last try"
        clock.advance(31)

    # Three tries after its progress (the started create); a death that came after the
    # progress of its own claim costs no try.
    assert (died, FailingSecondLook.looks) == (deaths, looks)
    step = step_of(db, stack_id, "bad")
    resource = stacks.get_resource(ctx, name, stack_id, "bad")
    assert (resource.status, resource.status_reason) == (
        "FAILED", "InternalError: resources.bad: "
        + internal_error(f"step {step.id} of operation {step.operation_id}"))
    assert stacks.get(ctx, name, stack_id).status == "FAILED"


def test_a_waiting_step_handed_back_by_a_graceful_stop_is_not_counted(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    _, stack_id = create(stacks, ctx, WAITING)
    run(worker_for(stacks), ticks=3)
    assert step_of(db, stack_id, "slow").failures == 0  # started: progress
    clock.advance(31)  # its worker died
    second = worker_for(stacks)
    run(second, ticks=3)
    step = step_of(db, stack_id, "slow")
    assert (step.failures, step.lease_owner) == (1, second.id)  # a look is not progress
    second.hand_back()
    step = step_of(db, stack_id, "slow")
    assert (step.failures, step.lease_owner) == (0, None)
    assert step.lease_expires_at is not None and step.lease_expires_at < clock()


def test_suspects_are_claimed_together_until_one_more_death_would_leave_no_try_alone(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    _, stack_id = create(stacks, ctx, "heat_template_version: 2018-08-31\nresources:\n"
                         + "".join(f"  r{i}: {{type: OS::Heat::None}}\n" for i in range(5)))
    plan(db, types, clock)  # five ready steps
    # By id: one fresh, two whose holder died once (a crash mid-round), one that died
    # twice, then another fresh.
    counts = [0, 1, 1, 2, 0]
    with db.transaction() as session:
        rows = session.scalars(select(Step).where(Step.stack_id == stack_id)
                               .order_by(Step.id)).all()
        names = [row.resource_name for row in rows]
        for row, failures in zip(rows, counts, strict=True):
            if failures:
                row.state, row.failures = StepState.RUNNING, failures
                row.lease_expires_at = clock() - datetime.timedelta(seconds=1)

    alive_worker(db, "w", clock())

    def claim() -> dict[str, tuple[int, bool]]:
        with db.transaction() as session:
            return {step.resource_name: (step.failures, suspect)
                    for step, suspect in leases.claim_steps(
                        session, "w", clock(), 10, alone_from=PoisonRule().alone_from)}

    # The once-dead come back in one round; the twice-dead waits for a claim alone.
    assert claim() == {names[0]: (1, False), names[1]: (2, True), names[2]: (2, True),
                       names[4]: (1, False)}
    assert claim() == {names[3]: (3, True)}


def test_a_round_cut_short_by_a_crash_comes_back_in_one_round(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    names = [f"r{i}" for i in range(6)]
    name, stack_id = create(stacks, ctx, "heat_template_version: 2018-08-31\nresources:\n"
                            + "".join(f"  {n}: {{type: OS::Heat::None}}\n" for n in names)
                            + "  k: {type: 'Test::KillingFirstCreate'}\n")
    KillingFirstCreate.creates = 0
    assert until_dead(worker_for(stacks))
    assert {step_of(db, stack_id, n).failures for n in [*names, "k"]} == {1}
    clock.advance(31)

    run(worker_for(stacks), ticks=1)  # one claim, one round
    assert set(statuses(stacks, ctx, name, stack_id).values()) == {"CREATE_COMPLETE"}


def test_a_round_that_takes_longer_than_an_evaluation_hands_the_rest_back_uncounted(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    # Each value reads an attribute that takes 1.5 s; an evaluation may take 2 s.
    SlowToRead.clock = clock
    values = [f"v{i}" for i in range(5)]
    name, stack_id = create(stacks, ctx, (
        "heat_template_version: 2018-08-31\nresources:\n  slow: {type: 'Test::SlowToRead'}\n"
        + "".join(f"  {v}:\n    type: OS::Heat::Value\n"
                  "    properties: {value: {get_attr: [slow, value]}}\n" for v in values)))
    loop = worker_for(stacks)
    run(loop, ticks=1)  # plans, and creates slow
    assert statuses(stacks, ctx, name, stack_id)["slow"] == "CREATE_COMPLETE"

    run(loop, ticks=1)  # claims the five values
    # The round stopped once it had taken 3 s (more than 2): two were prepared and
    # created; the others were handed back at once, their claim not counted.
    assert [statuses(stacks, ctx, name, stack_id)[v] for v in values] == (
        ["CREATE_COMPLETE"] * 2 + ["INIT_COMPLETE"] * 3)
    for value in values[2:]:
        step = step_of(db, stack_id, value)
        assert (step.state, step.lease_owner, step.failures, step.lease_expires_at) == (
            StepState.RUNNING, None, 0, clock())

    for _ in range(3):
        clock.advance(0.1)
        run(loop, ticks=1)
    assert stacks.get(ctx, name, stack_id).status == "COMPLETE"


def test_database_outages_do_not_count_against_a_step(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, monkeypatch: pytest.MonkeyPatch) -> None:
    CutByOutage.outage, CutByOutage.outages = Outage(db, monkeypatch), 4
    name, stack_id = create(stacks, ctx, (
        "heat_template_version: 2018-08-31\nresources:\n  r: {type: 'Test::CutByOutage'}\n"))
    loop = worker_for(stacks)
    outages = 0
    for _ in range(12):
        if tick_through_outage(loop):
            outages += 1
            run(loop, ticks=1)  # the database is back: the claim is given back
            step = step_of(db, stack_id, "r")
            assert (step.failures, step.lease_owner) == (0, None)
        clock.advance(31)  # past the lease, so the count would show without the fix

    assert outages == 4
    assert stacks.get(ctx, name, stack_id).status == "COMPLETE"


def test_database_outages_do_not_count_against_an_operation(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, monkeypatch: pytest.MonkeyPatch) -> None:
    outage = Outage(db, monkeypatch)
    calls: list[Entry] = []

    def pre(action: str | None) -> None:
        if len(calls) <= 4:  # the database goes away before the call is recorded
            outage.transactions_left = 0

    plugins = LifecycleRegistry([loaded(Recording("audit", calls, pre=pre))])
    name, stack_id = create(stacks, ctx, PLAIN)
    loop = worker_for(stacks, plugins)
    outages = 0
    for _ in range(8):
        if tick_through_outage(loop):
            outages += 1
            run(loop, ticks=1)  # the database is back: the claim is given back
            operation = operation_of(db, stack_id)
            assert (operation.failures, operation.lease_expires_at) == (0, clock())
        clock.advance(31)  # past the lease, so the count would show without the fix

    assert outages == 4
    assert stacks.get(ctx, name, stack_id).status == "COMPLETE"


class TimeOutBug(OperationDriver):
    """Stands for a bug in the time-out phase: it raises every time."""

    def _time_out(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a bug in timing out")


def test_giving_up_fails_the_resources_its_steps_were_acting_on(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, WAITING)
    run(worker_for(stacks), ticks=3)
    assert statuses(stacks, ctx, name, stack_id)["slow"] == "CREATE_IN_PROGRESS"
    clock.advance(3601)  # past the operation's deadline: it is to be timed out
    owner = alive_worker(db, "worker-2", clock())
    irs = StoredIrs(types.get, types.constraint)
    driver = TimeOutBug(db, types, owner, clock,
                        LifecycleCalls(db, types, LifecycleRegistry(()), owner, clock,
                                       irs=irs),
                        irs=irs)
    for _ in range(4):
        with db.transaction() as session:
            [claimed] = [op.id for op in leases.claim_operations(session, owner, clock(),
                                                                  1)]
        driver.advance(claimed)
        clock.advance(5)

    assert stacks.get(ctx, name, stack_id).status_reason == (
        f"Stack CREATE failed: {internal_error(f'operation {claimed}')}")
    slow = stacks.get_resource(ctx, name, stack_id, "slow")
    assert (slow.action, slow.status, slow.status_reason) == (
        "CREATE", "FAILED", "CREATE aborted")
    events = stacks.list_events(ctx, name, stack_id, EventQuery(ascending=True), "slow")
    assert [f"{e.action}_{e.status}" for e in events][-1] == "CREATE_FAILED"
    assert statuses(stacks, ctx, name, stack_id)["after"] == "INIT_COMPLETE"


def test_the_rule_doubles_its_wait_and_names_what_to_grep_for() -> None:
    rule = PoisonRule(attempts=1)
    assert (rule.spent(1), rule.spent(2)) == (False, True)
    assert [rule.backoff(n).total_seconds() for n in (0, 1, 2, 3, 30)] == [
        0.5, 0.5, 1.0, 2.0, 60.0]
    error = rule.internal_error("operation x", "")
    assert isinstance(error, InternalError)  # one hierarchy: engine.errors
    assert error.message == (
        "Kiln failed unexpectedly (an internal error, 1 try); the operator can find "
        "operation x in the engine log")
    assert "find step 3 (request req-1) in" in rule.internal_error("step 3", "req-1").message
    # Suspects run together while one more death there leaves each a try alone.
    assert [PoisonRule(attempts=n).alone_from for n in (1, 2, 3, 5)] == [1, 1, 2, 4]


def test_the_rules_defaults_are_the_configurations() -> None:
    conf = cfg.ConfigOpts()
    config.register_opts(conf)
    conf([], default_config_files=[])
    assert PoisonRule() == PoisonRule(conf.engine.internal_error_attempts,
                                      conf.engine.internal_error_backoff_seconds)
    assert WorkerSettings().poison == PoisonRule()



def test_a_bug_preparing_a_step_its_prerequisites_close_made_ready_is_counted_against_it(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, caplog: pytest.LogCaptureFixture) -> None:
    # ``user`` is claimed and prepared in the transaction that closes ``made`` (Follow),
    # and its properties cannot be stored: only that part is undone, so ``made`` stays
    # created, and ``user``'s tries are counted as its own.
    name, stack_id = create(stacks, ctx, (
        "heat_template_version: 2018-08-31\nresources:\n"
        "  made: {type: 'Test::Unstorable'}\n"
        "  user:\n    type: OS::Heat::None\n"
        "    properties: {v: {get_attr: [made, value]}}\n"))
    loop = worker_for(stacks)
    run(loop, ticks=2)
    assert "preparing the 1 steps a round made ready failed" in caplog.text
    assert step_of(db, stack_id, "made").state == StepState.COMPLETE
    assert stacks.get_resource(ctx, name, stack_id, "made").status == "COMPLETE"
    assert step_of(db, stack_id, "user").failures == 1, "its first try, by the next claim"

    for _ in range(20):
        clock.advance(0.5)
        run(loop, ticks=1)

    user = step_of(db, stack_id, "user")
    reason = ("InternalError: resources.user: "
              + internal_error(f"step {user.id} of operation {user.operation_id}"))
    resource = stacks.get_resource(ctx, name, stack_id, "user")
    assert (resource.action, resource.status, resource.status_reason) == (
        "CREATE", "FAILED", reason)
    assert stacks.get_resource(ctx, name, stack_id, "made").status == "COMPLETE"
