"""engine.worker.operation's OperationDriver, phase by phase: a SQLite file, the real stack
services, and one worker's driver and step runner each moved by the test (no WorkerLoop),
so every state an operation passes through can be read between two claims.

The lifecycle plugins' order of calls is test_lifecycle_calls.py's, the rollback's own
run test_rollback.py's and the poison rule's counting test_poison.py's; here is what the
driver decides in each phase: what a plan writes, when an operation finishes, how it ends
after a deadline, a cancel or a denial, what the finish stores, and when it rolls back."""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from sqlalchemy import event, select

from engine import reasons
from engine.context import RequestContext
from engine.db import leases
from engine.db.models import Operation, Stack, Step
from engine.db.session import Database
from engine.ir.stored import StoredIrs
from engine.lifecycle.base import Denied, Warn
from engine.lifecycle.registry import LifecycleRegistry, LoadedPlugin
from engine.resources.registry import ResourceTypeRegistry
from engine.services.events import EventQuery
from engine.services.stack_actions import StackActions
from engine.vocabulary import Action, OperationState, Status, StepState
from engine.worker.held_step import HeldStep
from engine.worker.lifecycle_calls import LifecycleCalls
from engine.worker.operation import OperationDriver
from engine.worker.poison import PoisonRule
from engine.worker.step import StepRunner
from tests.stack_api import StackApi
from tests.templates import TWO_IN_ORDER as CHAIN
from tests.unit.conftest import Clock, alive_worker
from tests.unit.worker.test_lifecycle_calls import Entry, Recording, loaded

OWNER = "driver-1"
API_URL = "http://kiln"

# "slow" starts and never ends by itself; its delete is immediate.
SLOW = """\
heat_template_version: 2018-08-31
resources:
  quick: {type: OS::Heat::None}
  slow:
    type: OS::Heat::TestResource
    depends_on: quick
    properties: {action_wait_secs: {create: 600, update: 600, delete: 0}}
  after: {type: OS::Heat::None, depends_on: slow}
"""


class Driving:
    """One worker's operation driver and step runner; the test says when each runs."""

    def __init__(self, db: Database, types: ResourceTypeRegistry, clock: Clock,
                 plugins: Sequence[LoadedPlugin] = (), *, owner: str = OWNER,
                 rule: PoisonRule | None = None) -> None:
        self.db, self.clock, self.owner = db, clock, alive_worker(db, owner, clock())
        irs = StoredIrs(types.get, types.constraint)
        calls = LifecycleCalls(db, types, LifecycleRegistry(plugins), owner, clock,
                               irs=irs)
        self.driver = OperationDriver(db, types, owner, clock, calls, irs=irs, rule=rule)
        self.runner = StepRunner(db, types, owner, clock, 5, api_url=API_URL, irs=irs,
                                 rule=rule)
        self.held: list[HeldStep] = []

    def claim(self) -> list[str]:
        with self.db.transaction() as session:
            return [op.id for op in leases.claim_operations(session, self.owner, self.clock(),
                                                             10)]

    def advance(self) -> list[str]:
        """Claim the operations that need a worker and drive each; their ids."""
        claimed = self.claim()
        for operation_id in claimed:
            self.driver.advance(operation_id)
        return claimed

    def steps(self) -> None:
        """Start every step that is or becomes ready; those that wait are held."""
        while True:
            with self.db.transaction() as session:
                claimed = [claim.step.id for claim in leases.claim_steps(
                    session, self.owner, self.clock(), 100)]
            if not claimed:
                return
            self.held += self.runner.start_many(claimed)


# --- reading what the driver wrote --------------------------------------------------------


def operations(db: Database, stack_id: str) -> list[Operation]:
    with db.read() as session:
        return list(session.scalars(select(Operation).where(Operation.stack_id == stack_id)
                                    .order_by(Operation.created_at)))


def only_operation(db: Database, stack_id: str) -> Operation:
    [operation] = operations(db, stack_id)
    return operation


def steps(db: Database, operation_id: str) -> dict[str, tuple[str, str]]:
    """resource name: (step action, step state)."""
    with db.read() as session:
        return {step.resource_name: (step.action, step.state)
                for step in session.scalars(select(Step)
                                            .where(Step.operation_id == operation_id))}


def resources(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str
              ) -> dict[str, str]:
    return {r.name: f"{r.action}_{r.status}"
            for r in stacks.list_resources(ctx, name, stack_id, {})}


def state(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str
          ) -> tuple[str, str]:
    """The stack's ACTION_STATUS and its reason."""
    stack = stacks.get(ctx, name, stack_id)
    return f"{stack.action}_{stack.status}", stack.status_reason


def stack_events(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str
                 ) -> list[str]:
    """The stack's own events, oldest first."""
    return [f"{e.action}_{e.status}: {e.reason}"
            for e in stacks.list_events(ctx, name, stack_id, EventQuery(ascending=True))
            if e.resource_name == name and not e.lifecycle]


def create(stacks: StackApi, ctx: RequestContext, template: str, **body: Any
           ) -> tuple[str, str]:
    record = stacks.create(ctx, {"stack_name": "s", "template": template, **body})
    return record.name, record.id


# --- plan ---------------------------------------------------------------------------------


def test_the_plan_writes_a_step_per_resource_and_runs_the_operation(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, CHAIN)
    driving = Driving(db, types, clock)

    assert driving.advance() == [only_operation(db, stack_id).id]

    operation = only_operation(db, stack_id)
    assert (operation.state, operation.open_steps, operation.payload) == (
        OperationState.RUNNING, 2, {"planned": True})
    # The phase is done: the lease is given back and its tries start again.
    assert (operation.lease_owner, operation.lease_expires_at, operation.failures) == (
        None, None, 0)
    assert steps(db, operation.id) == {"a": ("CREATE", StepState.READY),
                                       "b": ("CREATE", StepState.WAITING)}
    assert resources(stacks, ctx, name, stack_id) == {"a": "INIT_COMPLETE",
                                                      "b": "INIT_COMPLETE"}
    assert state(stacks, ctx, name, stack_id) == ("CREATE_IN_PROGRESS",
                                                      "Stack CREATE started")
    # A running operation before its deadline is its steps' business, not a worker's.
    assert driving.claim() == []


def test_the_steps_done_the_next_claim_finishes_the_stack(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, CHAIN)
    driving = Driving(db, types, clock)
    driving.advance()
    driving.steps()
    assert only_operation(db, stack_id).state == OperationState.FINISHING

    driving.advance()

    operation = only_operation(db, stack_id)
    assert (operation.state, operation.failure_reason, operation.lease_owner) == (
        OperationState.COMPLETE, None, None)
    assert operation.finished_at == clock()
    assert state(stacks, ctx, name, stack_id) == (
        "CREATE_COMPLETE", "Stack CREATE completed successfully")
    assert stack_events(stacks, ctx, name, stack_id) == [
        "CREATE_IN_PROGRESS: Stack CREATE started",
        "CREATE_COMPLETE: Stack CREATE completed successfully"]


def test_a_plan_without_steps_finishes_under_the_same_claim(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, (
        "heat_template_version: 2018-08-31\noutputs:\n  one: {value: 1}\n"))

    Driving(db, types, clock).advance()

    operation = only_operation(db, stack_id)
    assert (operation.state, operation.open_steps) == (OperationState.COMPLETE, 0)
    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status) == ("CREATE", "COMPLETE")
    assert [(o["output_key"], o["output_value"]) for o in stack.outputs or []] == [("one", 1)]


def test_a_type_uninstalled_since_the_create_was_accepted_fails_the_operation(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, SLOW)
    without = ResourceTypeRegistry({n: types.get(n) for n in types.names()
                                    if n != "OS::Heat::TestResource"})

    Driving(db, without, clock).advance()

    operation = only_operation(db, stack_id)
    # A failed operation, not a failed phase: no try counted, no rollback (nothing was
    # touched), no step and no resource written.
    assert (operation.state, operation.failures) == (OperationState.FAILED, 0)
    assert "planned" not in (operation.payload or {})
    assert steps(db, operation.id) == {}
    assert resources(stacks, ctx, name, stack_id) == {}
    assert state(stacks, ctx, name, stack_id) == (
        "CREATE_FAILED", "Resource CREATE failed: resources.slow.type: The Resource Type "
                         "(OS::Heat::TestResource) could not be found.")


# --- deadline and cancel -------------------------------------------------------------------


def start_slow(stacks: StackApi, ctx: RequestContext, driving: Driving, **body: Any
               ) -> tuple[str, str]:
    """A create whose "slow" is mid-create: "quick" done, "after" waiting on "slow"."""
    name, stack_id = create(stacks, ctx, SLOW, timeout_mins=1, **body)
    driving.advance()
    driving.steps()
    assert resources(stacks, ctx, name, stack_id) == {
        "quick": "CREATE_COMPLETE", "slow": "CREATE_IN_PROGRESS", "after": "INIT_COMPLETE"}
    return name, stack_id


def test_past_its_deadline_a_running_operation_aborts_its_steps_and_times_out(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    driving = Driving(db, types, clock)
    name, stack_id = start_slow(stacks, ctx, driving, disable_rollback=True)
    clock.advance(59)
    assert driving.advance() == []  # before the deadline, nobody claims it

    clock.advance(2)
    driving.advance()

    operation = only_operation(db, stack_id)
    assert (operation.state, operation.failure_reason, operation.open_steps) == (
        OperationState.FAILED, "Create timed out", 0)
    assert steps(db, operation.id) == {"quick": ("CREATE", StepState.COMPLETE),
                                       "slow": ("CREATE", StepState.CANCELLED),
                                       "after": ("CREATE", StepState.CANCELLED)}
    # Only what a step was acting on is failed; what never started stays as it was.
    assert resources(stacks, ctx, name, stack_id) == {
        "quick": "CREATE_COMPLETE", "slow": "CREATE_FAILED", "after": "INIT_COMPLETE"}
    assert stacks.get_resource(ctx, name, stack_id, "slow").status_reason == (
        "CREATE aborted")
    assert stack_events(stacks, ctx, name, stack_id)[-1] == "CREATE_FAILED: Create timed out"


def test_a_timed_out_create_queues_its_rollback_with_the_same_timeout(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    driving = Driving(db, types, clock)
    name, stack_id = start_slow(stacks, ctx, driving, disable_rollback=False)
    clock.advance(61)

    driving.advance()

    failed, rollback = operations(db, stack_id)
    assert (failed.action, failed.state) == (Action.CREATE, OperationState.FAILED)
    # Queued, not run: its own claim plans it (and calls its own pre-ops).
    assert (rollback.action, rollback.state, rollback.payload) == (
        Action.ROLLBACK, OperationState.PENDING, {"kind": "create"})
    assert rollback.deadline_at - rollback.created_at == (
        failed.deadline_at - failed.created_at)
    assert rollback.context == failed.context
    assert state(stacks, ctx, name, stack_id) == (
        "ROLLBACK_IN_PROGRESS", "Stack ROLLBACK started")
    assert stack_events(stacks, ctx, name, stack_id)[-2:] == [
        "CREATE_FAILED: Create timed out", "ROLLBACK_IN_PROGRESS: Stack ROLLBACK started"]


def start_slow_update(stacks: StackApi, ctx: RequestContext, driving: Driving,
                      disable_rollback: bool) -> tuple[str, str]:
    """A stack whose update is mid-way: "slow" changes and its update never ends."""
    name, stack_id = create(stacks, ctx, CHAIN, disable_rollback=disable_rollback)
    driving.advance()
    driving.steps()
    driving.advance()
    driving.clock.advance(1)
    stacks.update(ctx, name, stack_id, {"template": SLOW}, patch=True)
    driving.advance()
    driving.steps()
    assert resources(stacks, ctx, name, stack_id)["slow"] == "CREATE_IN_PROGRESS"
    return name, stack_id


@pytest.mark.parametrize(("cancel", "disable_rollback", "rolls_back"), [
    ("cancel_update", True, True),  # a cancel_update rolls back whatever the stack says
    ("cancel_without_rollback", False, False),
])
def test_a_cancelled_update_ends_at_once_and_rolls_back_as_its_cancel_says(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, cancel: str, disable_rollback: bool, rolls_back: bool) -> None:
    driving = Driving(db, types, clock)
    name, stack_id = start_slow_update(stacks, ctx, driving, disable_rollback)
    clock.advance(1)
    StackActions(db, clock, 3600).act(ctx, name, stack_id, {cancel: None})
    clock.advance(0.1)  # claimed once its deadline, set to now, has passed

    driving.advance()

    update = operations(db, stack_id)[1]
    assert (update.action, update.state, update.failure_reason) == (
        Action.UPDATE, OperationState.FAILED, "Resource UPDATE failed: Operation cancelled")
    assert stacks.get_resource(ctx, name, stack_id, "slow").status_reason == (
        "UPDATE aborted")
    assert [op.action for op in operations(db, stack_id)[2:]] == (
        [Action.ROLLBACK] if rolls_back else [])
    assert state(stacks, ctx, name, stack_id)[0] == (
        "ROLLBACK_IN_PROGRESS" if rolls_back else "UPDATE_FAILED")


def test_a_delete_of_a_busy_stack_ends_the_running_create_and_then_deletes(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    driving = Driving(db, types, clock)
    name, stack_id = start_slow(stacks, ctx, driving, disable_rollback=False)
    clock.advance(1)
    stacks.delete(ctx, name, stack_id)
    clock.advance(0.1)  # claimed once its deadline, set to now, has passed

    driving.advance()

    create_op, delete_op = operations(db, stack_id)
    assert (create_op.state, create_op.failure_reason) == (
        OperationState.FAILED, "Resource CREATE failed: Operation cancelled")
    # No rollback: the delete follows, and the stack has shown it since it was asked.
    assert (delete_op.action, delete_op.state) == (Action.DELETE, OperationState.PENDING)
    assert state(stacks, ctx, name, stack_id)[0] == "DELETE_IN_PROGRESS"

    driving.advance()
    driving.steps()
    driving.advance()

    assert operations(db, stack_id)[1].state == OperationState.COMPLETE
    stack = stacks.get(ctx, name, stack_id)  # soft-deleted: still read by its id
    assert (stack.action, stack.status, stack.outputs) == ("DELETE", "COMPLETE", None)
    assert stack.deleted_at == clock()
    assert resources(stacks, ctx, name, stack_id) == {}


# --- finish -------------------------------------------------------------------------------


def test_the_finish_resolves_the_outputs_masks_hidden_values_and_keeps_errors(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, """\
heat_template_version: 2018-08-31
parameters:
  password: {type: string, hidden: true, default: hunter2}
resources:
  v:
    type: OS::Heat::Value
    properties: {value: {list_join: ['', [user-, {get_param: password}]]}}
outputs:
  shown:
    description: what v holds
    value: {get_attr: [v, value]}
  broken:
    value: {yaql: {expression: int($.data), data: {get_attr: [v, value]}}}
""")
    driving = Driving(db, types, clock)
    driving.advance()
    driving.steps()
    driving.advance()

    with db.read() as session:  # what the finish stored
        stored = session.get(Stack, stack_id)
        outputs = {o["output_key"]: o for o in (stored.outputs if stored else None) or []}
    assert outputs["shown"] == {"output_key": "shown", "description": "what v holds",
                                "output_value": "user-******"}
    # The error quotes the value it met; the hidden part of it is masked there too.
    assert (outputs["broken"]["output_value"], outputs["broken"]["output_error"]) == (
        None, 'outputs.broken.value.yaql: Evaluation of "yaql" failed: invalid literal '
              "for int() with base 10: 'user-******'")
    # A broken output does not fail the stack.
    assert state(stacks, ctx, name, stack_id)[0] == "CREATE_COMPLETE"


def test_an_update_takes_its_new_definition_at_the_plan_and_settles_at_the_finish(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    before = CHAIN + "  gone: {type: OS::Heat::None}\n"
    after = ("heat_template_version: 2018-08-31\nresources:\n"
             "  a: {type: OS::Heat::None}\n  c: {type: OS::Heat::None}\n"
             "  b: {type: OS::Heat::None, depends_on: c}\n")
    name, stack_id = create(stacks, ctx, before)
    driving = Driving(db, types, clock)
    driving.advance()
    driving.steps()
    driving.advance()
    stacks.update(ctx, name, stack_id, {"template": after}, patch=False)

    driving.advance()  # the plan

    assert "c" in stacks.get_template(ctx, name, stack_id)["resources"]
    records = {r.name: r for r in stacks.list_resources(ctx, name, stack_id, {})}
    assert (records["c"].action, records["c"].status) == ("INIT", "COMPLETE")
    # Until the update ends, b needs both what it needed and what it will need.
    assert (records["a"].required_by, records["c"].required_by) == (["b"], ["b"])
    assert "gone" in records

    driving.steps()
    driving.advance()  # the finish

    records = {r.name: r for r in stacks.list_resources(ctx, name, stack_id, {})}
    assert sorted(records) == ["a", "b", "c"]
    assert (records["a"].required_by, records["c"].required_by) == ([], ["b"])
    assert state(stacks, ctx, name, stack_id) == (
        "UPDATE_COMPLETE", "Stack UPDATE completed successfully")


def test_a_stacks_writes_take_as_many_statements_whatever_its_size(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    # A plan's rows and steps, and the events of each transaction, are a statement each.
    driving = Driving(db, types, clock)

    def lived(size: int) -> tuple[Counter[str], str, str]:
        """A flat stack of ``size`` created, then deleted: the statements the worker sent
        meanwhile, by their first three words; its name and id."""
        name, stack_id = create(stacks, ctx, "heat_template_version: 2018-08-31\n"
                                "resources:\n" + "".join(f"  r{n}: {{type: OS::Heat::None}}\n"
                                                           for n in range(size)))
        sent: Counter[str] = Counter()

        def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            sent[" ".join(statement.split()[:3])] += 1

        for then in ((), (name, stack_id)):
            if then:
                stacks.delete(ctx, *then)
            event.listen(db.engine, "before_cursor_execute", record)
            try:
                driving.advance()
                driving.steps()
                driving.advance()
            finally:
                event.remove(db.engine, "before_cursor_execute", record)
        assert state(stacks, ctx, name, stack_id)[0] == "DELETE_COMPLETE"
        return sent, name, stack_id

    small, _, _ = lived(5)
    large, name, stack_id = lived(60)

    assert small == large
    assert (large["INSERT INTO resources"], large["INSERT INTO steps"]) == (1, 2)
    assert [f"{e.action}_{e.status}" for e in stacks.list_events(
        ctx, name, stack_id, EventQuery(ascending=True), "r7")] == [
        "CREATE_IN_PROGRESS", "CREATE_COMPLETE", "DELETE_IN_PROGRESS", "DELETE_COMPLETE"]


@pytest.mark.parametrize(("kind", "reason"), [
    ("OS::Heat::TestResource", "Stack CHECK completed successfully"),
    ("OS::Heat::None", "Stack CHECK completed successfully" + reasons.CHECK_NOT_FULLY_SUPPORTED),
])
def test_a_check_says_when_some_type_has_no_real_check(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, kind: str, reason: str) -> None:
    name, stack_id = create(stacks, ctx, (
        f"heat_template_version: 2018-08-31\nresources:\n  r: {{type: '{kind}'}}\n"))
    driving = Driving(db, types, clock)
    driving.advance()
    driving.steps()
    driving.advance()
    clock.advance(1)
    StackActions(db, clock, 3600).act(ctx, name, stack_id, {"check": None})

    driving.advance()
    driving.steps()
    driving.advance()

    assert state(stacks, ctx, name, stack_id) == ("CHECK_COMPLETE", reason)


# --- lifecycle plugins: denial, notifying -------------------------------------------------


def watching(db: Database, stack_id: str, log: list[Entry], seen: list[Operation],
             pre: Any = None) -> Recording:
    """A plugin whose post-op records the operation row as the post-ops find it."""

    def post(action: str | None) -> None:
        seen.append(only_operation(db, stack_id))

    return Recording("watch", log, pre=pre, post=post)


def test_post_ops_run_while_the_operation_is_notifying_under_the_finishing_claim(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, CHAIN)
    log: list[Entry] = []
    seen: list[Operation] = []
    driving = Driving(db, types, clock, [loaded(watching(db, stack_id, log, seen))])
    driving.advance()
    driving.steps()

    driving.advance()

    [during] = seen
    assert (during.state, during.lease_owner, during.failures) == (
        OperationState.NOTIFYING, OWNER, 1)  # post-ops are a first try of their own
    assert during.lifecycle["outcome"] == Status.COMPLETE
    assert during.lifecycle["post_order"] == ["watch"]
    assert log[-1] == ("watch", "post", "CREATE", False)
    after = only_operation(db, stack_id)
    assert (after.state, after.lease_owner, after.failures) == (
        OperationState.COMPLETE, None, 0)
    assert state(stacks, ctx, name, stack_id)[0] == "CREATE_COMPLETE"


def test_a_denial_stops_the_operation_before_its_plan_and_is_never_rolled_back(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    def deny(action: str | None) -> Warn | None:
        raise Denied("not here")

    name, stack_id = create(stacks, ctx, CHAIN, disable_rollback=False)
    log: list[Entry] = []
    seen: list[Operation] = []
    driving = Driving(db, types, clock, [loaded(watching(db, stack_id, log, seen, deny))])

    driving.advance()

    [during] = seen
    assert (during.state, during.lifecycle["outcome"]) == (OperationState.NOTIFYING,
                                                           Status.FAILED)
    assert during.failure_reason == "Lifecycle plugin watch pre-op CREATE: deny: not here"
    assert log == [("watch", "pre", "CREATE", None), ("watch", "post", "CREATE", True)]
    operation = only_operation(db, stack_id)  # no rollback queued
    assert (operation.state, operation.payload) == (OperationState.FAILED, None)
    assert steps(db, operation.id) == {}
    assert state(stacks, ctx, name, stack_id) == (
        "CREATE_FAILED", "Lifecycle plugin watch pre-op CREATE: deny: not here")


# --- leases and the poison rule -------------------------------------------------------------


def test_an_operation_another_worker_holds_is_left_alone(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, CHAIN)
    [claimed] = Driving(db, types, clock, owner="other").claim()

    Driving(db, types, clock).driver.advance(claimed)

    operation = only_operation(db, stack_id)
    assert (operation.state, operation.lease_owner, operation.failures) == (
        OperationState.PENDING, "other", 1)
    assert steps(db, operation.id) == {}
    assert resources(stacks, ctx, name, stack_id) == {}


class BuggyRegistry(ResourceTypeRegistry):
    """Stands for a bug in Kiln that makes planning raise every time."""

    def get(self, type_name: str) -> Any:
        raise TypeError("a bug")


def test_a_phase_that_raises_waits_then_the_operation_is_given_up(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, CHAIN)
    driving = Driving(db, BuggyRegistry({}), clock, rule=PoisonRule(attempts=1,
                                                                    backoff_seconds=2))
    driving.advance()

    operation = only_operation(db, stack_id)
    # Given back, counted, and not to be claimed before the wait is over.
    assert (operation.state, operation.lease_owner, operation.failures) == (
        OperationState.PENDING, None, 1)
    assert operation.lease_expires_at == clock() + datetime.timedelta(seconds=2)
    clock.advance(1)
    assert driving.advance() == []

    clock.advance(1.5)
    driving.advance()

    operation = only_operation(db, stack_id)  # no rollback: it never planned
    assert (operation.state, operation.lease_owner) == (OperationState.FAILED, None)
    assert state(stacks, ctx, name, stack_id) == (
        "CREATE_FAILED", "Stack CREATE failed: Kiln failed unexpectedly (an internal error, "
                         f"1 try); the operator can find operation {operation.id} in the "
                         "engine log")
    assert steps(db, operation.id) == {}
