"""Lifecycle plugins around real operations: a SQLite file, the real stack services and a
real WorkerLoop with an injected clock, and small plugins that record how they were called.

The order of calls, what a denial or a failure leaves behind, post-ops that always happen
and happen once, and the hand-over of calls to another worker after one dies."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from sqlalchemy import func, select

from engine.context import ADMIN_ROLE, RequestContext
from engine.db.models import Operation, Resource, Stack, Step
from engine.db.session import Database
from engine.distributions import Origin
from engine.ir import build
from engine.ir.build import build_from_document
from engine.lifecycle.base import Denied, LifecyclePlugin, Warn
from engine.lifecycle.registry import LifecycleRegistry, LoadedPlugin
from engine.lifecycle.view import StackView
from engine.resources.registry import ResourceTypeRegistry
from engine.services.events import EventQuery
from engine.services.tenants import TenantService
from engine.vocabulary import OperationState
from engine.worker.loop import WorkerLoop
from tests.stack_api import StackApi
from tests.templates import FAILING_ONE as FAILING
from tests.templates import group_of_groups
from tests.unit.conftest import Clock
from tests.unit.worker.running import create, run, worker, worker_for

TEMPLATE = """\
heat_template_version: 2018-08-31
resources:
  first:
    type: OS::Heat::None
  second:
    type: OS::Heat::TestResource
    depends_on: first
"""
# (plugin, phase, action, is_stack_failure) -- is_stack_failure is None for a pre-op.
Entry = tuple[str, str, str | None, bool | None]


@dataclasses.dataclass
class Seen:
    """What one call was given."""

    phase: str
    action: str | None
    context: RequestContext
    stack: StackView


class Recording(LifecyclePlugin):
    """Records each call in a shared log, then does what its hooks say."""

    def __init__(self, name: str, log: list[Entry],
                 pre: Callable[[str | None], Warn | None] | None = None,
                 post: Callable[[str | None], None] | None = None) -> None:
        self.name, self.log, self.pre, self.post = name, log, pre, post
        self.seen: list[Seen] = []

    def do_pre_op(self, cnxt: RequestContext, stack: StackView,
                  current_stack: StackView | None = None,
                  action: str | None = None) -> Warn | None:
        self.log.append((self.name, "pre", action, None))
        self.seen.append(Seen("pre", action, cnxt, stack))
        return self.pre(action) if self.pre else None

    def do_post_op(self, cnxt: RequestContext, stack: StackView,
                   current_stack: StackView | None = None, action: str | None = None,
                   is_stack_failure: bool = False) -> None:
        self.log.append((self.name, "post", action, is_stack_failure))
        self.seen.append(Seen("post", action, cnxt, stack))
        if self.post:
            self.post(action)


def loaded(plugin: Recording, timeout: float = 10.0, on_timeout: str = "fail"
           ) -> LoadedPlugin:
    return LoadedPlugin(name=plugin.name, plugin=plugin, ordinal=100, timeout_seconds=timeout,
                        on_timeout=on_timeout, origin=Origin("", ""))


def recorders(log: list[Entry], *names: str) -> list[Recording]:
    return [Recording(name, log) for name in names]


def deny(message: str) -> Callable[[str | None], Warn | None]:
    def pre(action: str | None) -> Warn | None:
        raise Denied(message)
    return pre


class Gate:
    """Holds the first call that passes it until released; later calls go straight on."""

    def __init__(self, release: threading.Event) -> None:
        self.release = release
        self.reached = threading.Event()
        self._closed = True

    def __call__(self, action: str | None = None) -> None:
        if self._closed:
            self._closed = False
            self.reached.set()
            assert self.release.wait(30), "the test never released the gate"

    def pre(self, action: str | None = None) -> Warn | None:
        self(action)
        return None

    def wait_reached(self) -> None:
        assert self.reached.wait(10), "no call reached the gate"

    def tick_until_post_ops_reach(self, loop: WorkerLoop) -> None:
        """Ticks ``loop`` until its post-ops, on its operation thread, reach the gate."""
        deadline = time.monotonic() + 10
        while not self.reached.is_set():
            assert time.monotonic() < deadline, "the post-ops never started"
            loop.run_once()
            time.sleep(0.01)


def hang(release: threading.Event) -> Callable[[str | None], Warn | None]:
    """A pre-op that answers only when the test ends (or releases it)."""
    def pre(action: str | None) -> Warn | None:
        release.wait(30)
        return None
    return pre


# --- fixtures -----------------------------------------------------------------------------


@pytest.fixture
def ctx(db: Database, clock: Clock) -> RequestContext:
    tenant = TenantService(db, clock).create_tenant("t")
    return RequestContext(tenant_id=tenant.id, token_tenant_id=tenant.id, role=ADMIN_ROLE,
                          request_id="req-42", username="alice")


@pytest.fixture
def log() -> list[Entry]:
    return []


def dying_worker(stacks: StackApi, plugins: Sequence[LoadedPlugin]) -> WorkerLoop:
    """A worker that will stand for a dead one once a plugin call holds its one operation
    thread: no heartbeat renews its leases while the test runs."""
    return worker_for(stacks, plugins, operation_threads=1, heartbeat_interval_seconds=1000)


def timeline(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str) -> list[str]:
    """Every event of the stack, oldest first, in a few words."""
    return [f"{e.lifecycle['phase']} {e.lifecycle['plugin']} {e.lifecycle['verdict']}"
            if e.lifecycle else f"{e.resource_name} {e.action}_{e.status}"
            for e in stacks.list_events(ctx, name, stack_id, EventQuery(ascending=True))]


def calls(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str
          ) -> list[tuple[str, str, str, str]]:
    return [(c["plugin"], c["phase"], c["action"], c["verdict"])
            for c in stacks.lifecycle_calls(ctx, name, stack_id)]


def operations(db: Database, stack_id: str) -> list[Operation]:
    with db.read() as session:
        return list(session.scalars(select(Operation).where(Operation.stack_id == stack_id)
                                    .order_by(Operation.created_at)))


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def status(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str) -> str:
    stack = stacks.get(ctx, name, stack_id)
    return f"{stack.action}_{stack.status}"


# --- create -------------------------------------------------------------------------------


def test_create_calls_pre_ops_in_order_then_steps_then_post_ops_in_reverse(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    a, b, c = recorders(log, "a", "b", "c")
    b.pre = lambda action: Warn("second is big")
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(worker_for(stacks, [loaded(a), loaded(b), loaded(c)]))

    assert status(stacks, ctx, name, stack_id) == "CREATE_COMPLETE"
    assert log == [("a", "pre", "CREATE", None), ("b", "pre", "CREATE", None),
                   ("c", "pre", "CREATE", None), ("c", "post", "CREATE", False),
                   ("b", "post", "CREATE", False), ("a", "post", "CREATE", False)]
    assert timeline(stacks, ctx, name, stack_id) == [
        "s CREATE_IN_PROGRESS",
        "pre a allow", "pre b warn", "pre c allow",
        "first CREATE_IN_PROGRESS", "first CREATE_COMPLETE",
        "second CREATE_IN_PROGRESS", "second CREATE_COMPLETE",
        "s CREATE_COMPLETE",
        "post c done", "post b done", "post a done",
    ]
    recorded = stacks.lifecycle_calls(ctx, name, stack_id)
    assert [(r["plugin"], r["phase"], r.get("is_stack_failure")) for r in recorded] == [
        ("a", "pre", None), ("b", "pre", None), ("c", "pre", None),
        ("c", "post", False), ("b", "post", False), ("a", "post", False)]
    assert recorded[1]["message"] == "second is big"
    events = stacks.list_events(ctx, name, stack_id, EventQuery(ascending=True))
    warned = next(e for e in events if e.lifecycle and e.lifecycle["verdict"] == "warn")
    assert (warned.resource_type, warned.action, warned.status) == (
        "Kiln::LifecyclePlugin", "CREATE", "IN_PROGRESS")
    assert warned.reason == (
        f"Lifecycle plugin b pre-op CREATE: warn: second is big "
        f"({warned.lifecycle['duration_ms']} ms)")
    [operation] = operations(db, stack_id)
    assert (operation.state, operation.lease_owner) == (OperationState.COMPLETE, None)
    # Each call names its operation, in its event as in the list.
    assert {r["operation_id"] for r in recorded} == {operation.id}
    assert warned.lifecycle["operation_id"] == operation.id


def test_plugins_see_the_stack_before_and_after_and_who_asked(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    [plugin] = recorders(log, "watch")
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(worker_for(stacks, [loaded(plugin)]))

    before, after = plugin.seen
    assert (before.stack.id, before.stack.name, before.stack.tenant_id) == (
        stack_id, name, ctx.tenant_id)
    assert (before.context.tenant_id, before.context.request_id, before.context.username) == (
        ctx.tenant_id, "req-42", "alice")
    assert (before.stack.action, before.stack.status) == ("CREATE", "CREATE_IN_PROGRESS")
    assert {n: (r.type, r.status, r.depends_on) for n, r in before.stack.resources.items()} == {
        "first": ("OS::Heat::None", "", ()),
        "second": ("OS::Heat::TestResource", "", ("first",))}
    # Called after the final state is stored.
    assert (after.stack.action, after.stack.status) == ("CREATE", "CREATE_COMPLETE")
    assert {r.status for r in after.stack.resources.values()} == {"CREATE_COMPLETE"}
    assert all(r.physical_resource_id for r in after.stack.resources.values())
    # A top-level stack: no parent, its own root.
    for seen in (before.stack, after.stack):
        assert (seen.owner_id, seen.root_stack_id, seen.nested_depth, seen.path) == (
            None, stack_id, 0, ((None, name),))


def created_tree(db: Database, stacks: StackApi, ctx: RequestContext, clock: Clock,
                 plugins: list[Any]) -> tuple[str, str, tuple[str, str], tuple[str, str]]:
    """A root with one child with one child, created by a worker with ``plugins``: the
    root's name and id, and the (id, name) of the child and of the grandchild."""
    name, root_id = create(stacks, ctx, group_of_groups(1, 1))
    loop = worker_for(stacks, plugins)
    for _ in range(100):
        if status(stacks, ctx, name, root_id) != "CREATE_IN_PROGRESS":
            break
        loop.run_once()
        clock.advance(1)
    assert status(stacks, ctx, name, root_id) == "CREATE_COMPLETE"
    with db.read() as session:
        [child] = session.scalars(select(Stack).where(Stack.owner_id == root_id))
        [grandchild] = session.scalars(select(Stack).where(Stack.owner_id == child.id))
        return (name, root_id, (child.id, child.name), (grandchild.id, grandchild.name))


def test_each_stack_of_a_tree_shows_its_parent_root_and_path(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    [plugin] = recorders(log, "watch")
    name, root_id, (child_id, child_name), (grandchild_id, grandchild_name) = created_tree(
        db, stacks, ctx, clock, [loaded(plugin)])

    placed = {(seen.phase, seen.stack.id): (
        seen.stack.owner_id, seen.stack.root_stack_id, seen.stack.nested_depth,
        seen.stack.path) for seen in plugin.seen}
    for phase in ("pre", "post"):
        assert placed[phase, root_id] == (None, root_id, 0, ((None, name),))
        assert placed[phase, child_id] == (
            root_id, root_id, 1, ((None, name), ("outer", child_name)))
        assert placed[phase, grandchild_id] == (
            child_id, root_id, 2,
            ((None, name), ("outer", child_name), ("0", grandchild_name)))
    assert len(placed) == 6


def test_a_root_only_plugin_sees_the_root_and_an_every_stack_plugin_sees_the_whole_tree(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    every, root = recorders(log, "every", "root")
    name, root_id, (child_id, child_name), (grandchild_id, _) = created_tree(
        db, stacks, ctx, clock, [loaded(every), dataclasses.replace(
            loaded(root), tree_scope="root")])

    assert [(seen.phase, seen.stack.id) for seen in root.seen] == [
        ("pre", root_id), ("post", root_id)]
    assert {(seen.phase, seen.stack.nested_depth) for seen in every.seen} == {
        (phase, depth) for phase in ("pre", "post") for depth in (0, 1, 2)}
    assert len(every.seen) == 6
    # A child records the root-only plugin as skipped and owes it no post-op.
    assert [entry for entry in timeline(stacks, ctx, child_name, child_id)
            if entry.startswith(("pre", "post"))] == [
        "pre every allow", "pre root skipped", "post every done"]
    [operation] = operations(db, grandchild_id)
    assert operation.lifecycle["post_order"] == ["every"]
    assert operation.lifecycle["pre"][1]["message"] == (
        "this plugin is called for the root stack only")
    assert calls(stacks, ctx, name, root_id) == [
        ("every", "pre", "CREATE", "allow"), ("root", "pre", "CREATE", "allow"),
        ("root", "post", "CREATE", "done"), ("every", "post", "CREATE", "done")]


def test_a_request_made_on_a_nested_stack_itself_asks_a_root_only_plugin_too(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    """Skipping a child is for its parent's operation, which the plugin judged at the
    root; a tenant updating a child directly must not slip past a root-only policy."""
    every, root = recorders(log, "every", "root")
    plugins = [loaded(every), dataclasses.replace(loaded(root), tree_scope="root")]
    _name, _root_id, (child_id, child_name), _ = created_tree(db, stacks, ctx, clock, plugins)
    root.seen.clear()
    stacks.update(ctx, child_name, child_id, {}, patch=True)
    run(worker_for(stacks, plugins))

    assert status(stacks, ctx, child_name, child_id) == "UPDATE_COMPLETE"
    assert [(seen.phase, seen.action, seen.stack.nested_depth) for seen in root.seen] == [
        ("pre", "UPDATE", 1), ("post", "UPDATE", 1)]


def test_a_denial_fails_the_stack_before_any_resource_is_touched(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    a, b, c = recorders(log, "a", "policy", "c")
    b.pre = deny("second: OS::Heat::TestResource is not allowed")
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(worker_for(stacks, [loaded(a), loaded(b), loaded(c)]))

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status, stack.status_reason) == (
        "CREATE", "FAILED", "Lifecycle plugin policy pre-op CREATE: deny: second: "
        "OS::Heat::TestResource is not allowed")
    assert stacks.list_resources(ctx, name, stack_id, {}) == []
    with db.read() as session:
        assert session.scalar(select(func.count()).select_from(Resource)) == 0
        assert session.scalar(select(func.count()).select_from(Step)) == 0
    # The denier hears how it ended too; the plugin after it was never asked.
    assert log == [("a", "pre", "CREATE", None), ("policy", "pre", "CREATE", None),
                   ("policy", "post", "CREATE", True), ("a", "post", "CREATE", True)]
    assert c.seen == []
    assert [s.stack.status for s in a.seen] == ["CREATE_IN_PROGRESS", "CREATE_FAILED"]
    assert timeline(stacks, ctx, name, stack_id) == [
        "s CREATE_IN_PROGRESS", "pre a allow", "pre policy deny", "s CREATE_FAILED",
        "post policy done", "post a done"]
    [operation] = operations(db, stack_id)
    assert (operation.state, operation.lease_owner) == (OperationState.FAILED, None)


def test_a_pre_op_that_raises_denies_too(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    [buggy] = recorders(log, "buggy")

    def pre(action: str | None) -> Warn | None:
        raise KeyError("flavor")

    buggy.pre = pre
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(worker_for(stacks, [loaded(buggy)]))
    stack = stacks.get(ctx, name, stack_id)
    assert (stack.status, stack.status_reason) == (
        "FAILED", "Lifecycle plugin buggy pre-op CREATE: error: KeyError: 'flavor'")
    assert log[-1] == ("buggy", "post", "CREATE", True)


def test_a_failed_resource_gives_every_post_op_a_stack_failure(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    a, b = recorders(log, "a", "b")
    name, stack_id = create(stacks, ctx, FAILING)
    run(worker_for(stacks, [loaded(a), loaded(b)]))

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status) == ("CREATE", "FAILED")
    assert "Test Resource failed broken" in stack.status_reason
    assert log == [("a", "pre", "CREATE", None), ("b", "pre", "CREATE", None),
                   ("b", "post", "CREATE", True), ("a", "post", "CREATE", True)]
    assert b.seen[-1].stack.resources["broken"].status == "CREATE_FAILED"
    events = stacks.list_events(ctx, name, stack_id, EventQuery(ascending=True))
    assert [e.status for e in events if e.lifecycle and e.lifecycle["phase"] == "post"] == [
        "FAILED", "FAILED"]


# --- delete -------------------------------------------------------------------------------


def test_delete_calls_pre_and_post_ops_with_delete(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    a, b = recorders(log, "a", "b")
    loop = worker_for(stacks, [loaded(a), loaded(b)])
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(loop)
    log.clear()
    stacks.delete(ctx, name, stack_id)
    run(loop)

    assert status(stacks, ctx, name, stack_id) == "DELETE_COMPLETE"
    assert log == [("a", "pre", "DELETE", None), ("b", "pre", "DELETE", None),
                   ("b", "post", "DELETE", False), ("a", "post", "DELETE", False)]
    before, after = a.seen[-2:]
    assert (before.stack.action, before.stack.status) == ("DELETE", "DELETE_IN_PROGRESS")
    assert {r.status for r in before.stack.resources.values()} == {"CREATE_COMPLETE"}
    assert (after.stack.action, after.stack.status) == ("DELETE", "DELETE_COMPLETE")
    # The rows are gone; what remains is the template's resources, none of them stored.
    assert {(r.status, r.physical_resource_id) for r in after.stack.resources.values()} == {
        ("", "")}
    assert [(p, ph, ac) for p, ph, ac, _ in calls(stacks, ctx, name, stack_id)][-4:] == [
        ("a", "pre", "DELETE"), ("b", "pre", "DELETE"), ("b", "post", "DELETE"),
        ("a", "post", "DELETE")]


def test_a_denied_delete_keeps_the_resources(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    [guard] = recorders(log, "guard")
    guard.pre = lambda action: deny("stack is protected")(action) if action == "DELETE" else None
    loop = worker_for(stacks, [loaded(guard)])
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(loop)
    stacks.delete(ctx, name, stack_id)
    run(loop)

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status, stack.status_reason) == (
        "DELETE", "FAILED", "Lifecycle plugin guard pre-op DELETE: deny: stack is protected")
    assert {(r.name, r.action, r.status) for r in stacks.list_resources(
        ctx, name, stack_id, {})} == {("first", "CREATE", "COMPLETE"),
                                      ("second", "CREATE", "COMPLETE")}
    assert log[-1] == ("guard", "post", "DELETE", True)


def test_a_view_that_fails_unexpectedly_shows_the_stored_rows_and_the_delete_goes_on(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry], caplog: pytest.LogCaptureFixture) -> None:
    """A bug in building the plugins' view of the template (a walk of a value that
    recursed too deep, once) failed every operation of the stack, its delete included:
    a stack no one could delete."""
    [a] = recorders(log, "a")
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(worker_for(stacks, [loaded(a)]))
    base = types.get("OS::Heat::None")

    class Broken(base):  # type: ignore[valid-type,misc]
        @classmethod
        def validate_properties(cls, properties: Any) -> None:
            raise RecursionError("maximum recursion depth exceeded")

    broken = ResourceTypeRegistry({**{n: types.get(n) for n in types.names()},
                                   "OS::Heat::None": Broken})
    stacks.delete(ctx, name, stack_id)
    run(worker(db, broken, clock, [loaded(a)]))  # its own IRs, of its own types

    assert status(stacks, ctx, name, stack_id) == "DELETE_COMPLETE"
    seen = a.seen[-2].stack
    assert {(r.name, r.status) for r in seen.resources.values()} == {
        ("first", "CREATE_COMPLETE"), ("second", "CREATE_COMPLETE")}
    assert "its DELETE view for the lifecycle plugins failed" in caplog.text


# --- post-op failures and time limits -----------------------------------------------------


def test_a_post_op_that_raises_does_not_stop_the_others(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    a, b, c = recorders(log, "a", "b", "c")

    def post(action: str | None) -> None:
        raise RuntimeError("could not release the reservation")

    b.post = post
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(worker_for(stacks, [loaded(a), loaded(b), loaded(c)]))

    assert status(stacks, ctx, name, stack_id) == "CREATE_COMPLETE"
    assert [entry[:2] for entry in log[3:]] == [("c", "post"), ("b", "post"), ("a", "post")]
    posts = [c for c in stacks.lifecycle_calls(ctx, name, stack_id) if c["phase"] == "post"]
    assert [(p["plugin"], p["verdict"], p["message"]) for p in posts] == [
        ("c", "done", ""),
        ("b", "error", "RuntimeError: could not release the reservation"),
        ("a", "done", "")]
    [operation] = operations(db, stack_id)
    assert operation.state == OperationState.COMPLETE


def test_a_pre_op_past_its_timeout_fails_the_operation(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry], release: threading.Event) -> None:
    a, slow, c = recorders(log, "a", "slow", "c")
    slow.pre = hang(release)
    name, stack_id = create(stacks, ctx, TEMPLATE)
    started = time.monotonic()
    run(worker_for(stacks, [loaded(a), loaded(slow, timeout=0.2), loaded(c)]))

    assert time.monotonic() - started < 10  # did not wait for the plugin
    stack = stacks.get(ctx, name, stack_id)
    assert (stack.status, stack.status_reason) == (
        "FAILED", "Lifecycle plugin slow pre-op CREATE: timeout: no answer within 0.2 s")
    assert stacks.list_resources(ctx, name, stack_id, {}) == []
    assert c.seen == []
    assert log[-2:] == [("slow", "post", "CREATE", True), ("a", "post", "CREATE", True)]


def test_with_on_timeout_warn_a_slow_pre_op_lets_the_operation_go_on(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry], release: threading.Event) -> None:
    a, slow, c = recorders(log, "a", "slow", "c")
    slow.pre = hang(release)
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(worker_for(stacks, [loaded(a), loaded(slow, timeout=0.2, on_timeout="warn"),
                                  loaded(c)]))

    assert status(stacks, ctx, name, stack_id) == "CREATE_COMPLETE"
    assert ("c", "pre", "CREATE", None) in log
    assert calls(stacks, ctx, name, stack_id)[1] == ("slow", "pre", "CREATE", "timeout")


# --- a worker that dies -------------------------------------------------------------------


def test_a_worker_dying_during_pre_ops_leaves_the_rest_to_the_next_one(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry], release: threading.Event) -> None:
    a, b, c = recorders(log, "a", "b", "c")
    gate = Gate(release)
    c.pre = gate.pre
    plugins = [loaded(a), loaded(b), loaded(c, timeout=30)]
    name, stack_id = create(stacks, ctx, TEMPLATE)

    # The first worker records a and b, then hangs in c: it stands for a dead worker (no
    # heartbeat will renew its lease while the test runs).
    dying = dying_worker(stacks, plugins)
    dying.run_once()
    gate.wait_reached()
    assert calls(stacks, ctx, name, stack_id) == [("a", "pre", "CREATE", "allow"),
                                                  ("b", "pre", "CREATE", "allow")]

    clock.advance(31)  # its lease expires
    successor = worker_for(stacks, plugins)
    run(successor)
    assert status(stacks, ctx, name, stack_id) == "CREATE_COMPLETE"

    # The dead worker's call to c comes back: its record is refused (lease lost).
    release.set()
    dying.hand_back()
    # a and b are not asked again; c, whose answer was never recorded, is.
    assert [entry for entry in log if entry[1] == "pre"] == [
        ("a", "pre", "CREATE", None), ("b", "pre", "CREATE", None),
        ("c", "pre", "CREATE", None), ("c", "pre", "CREATE", None)]
    assert [entry for entry in log if entry[1] == "post"] == [
        ("c", "post", "CREATE", False), ("b", "post", "CREATE", False),
        ("a", "post", "CREATE", False)]
    assert calls(stacks, ctx, name, stack_id) == [
        ("a", "pre", "CREATE", "allow"), ("b", "pre", "CREATE", "allow"),
        ("c", "pre", "CREATE", "allow"), ("c", "post", "CREATE", "done"),
        ("b", "post", "CREATE", "done"), ("a", "post", "CREATE", "done")]
    [operation] = operations(db, stack_id)
    assert (operation.state, operation.lease_owner) == (OperationState.COMPLETE, None)


def test_a_worker_dying_during_post_ops_leaves_the_rest_to_the_next_one(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry], release: threading.Event) -> None:
    a, b, c = recorders(log, "a", "b", "c")
    gate = Gate(release)
    b.post = gate
    plugins = [loaded(a), loaded(b, timeout=30), loaded(c)]
    name, stack_id = create(stacks, ctx, FAILING)

    dying = dying_worker(stacks, plugins)
    gate.tick_until_post_ops_reach(dying)
    assert status(stacks, ctx, name, stack_id) == "CREATE_FAILED"
    [operation] = operations(db, stack_id)
    assert operation.state == OperationState.NOTIFYING

    clock.advance(31)
    successor = worker_for(stacks, plugins)
    run(successor)
    release.set()
    dying.hand_back()

    assert [entry for entry in log if entry[1] == "post"] == [
        ("c", "post", "CREATE", True), ("b", "post", "CREATE", True),
        ("b", "post", "CREATE", True), ("a", "post", "CREATE", True)]
    assert [(p, ph) for p, ph, _, _ in calls(stacks, ctx, name, stack_id)] == [
        ("a", "pre"), ("b", "pre"), ("c", "pre"), ("c", "post"), ("b", "post"), ("a", "post")]
    [operation] = operations(db, stack_id)
    assert (operation.state, operation.lease_owner) == (OperationState.FAILED, None)
    assert status(stacks, ctx, name, stack_id) == "CREATE_FAILED"


def test_a_plugin_gone_from_the_next_worker_is_recorded_as_an_error(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry], release: threading.Event) -> None:
    a, b = recorders(log, "a", "b")
    gate = Gate(release)
    b.pre = gate.pre
    name, stack_id = create(stacks, ctx, TEMPLATE)
    dying = dying_worker(stacks, [loaded(a), loaded(b, timeout=30)])
    dying.run_once()
    gate.wait_reached()

    clock.advance(31)
    run(worker_for(stacks, [loaded(b)]))  # "a" is no longer enabled here
    release.set()
    dying.hand_back()

    assert status(stacks, ctx, name, stack_id) == "CREATE_COMPLETE"
    posts = [c for c in stacks.lifecycle_calls(ctx, name, stack_id) if c["phase"] == "post"]
    assert [(p["plugin"], p["verdict"], p["message"]) for p in posts] == [
        ("b", "done", ""), ("a", "error", "plugin is no longer enabled on this worker")]


# --- the next operation waits for the post-ops --------------------------------------------


def test_a_new_operation_waits_while_the_previous_one_is_notifying(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry], release: threading.Event) -> None:
    [plugin] = recorders(log, "slow")
    gate = Gate(release)
    plugin.post = gate  # the first post-op (CREATE's) is held
    plugins = [loaded(plugin, timeout=30)]
    name, stack_id = create(stacks, ctx, TEMPLATE)

    notifier = worker_for(stacks, plugins, operation_threads=1)
    gate.tick_until_post_ops_reach(notifier)

    # The stack is finished for tenants, so a delete is accepted...
    assert status(stacks, ctx, name, stack_id) == "CREATE_COMPLETE"
    stacks.delete(ctx, name, stack_id)
    other = worker_for(stacks, plugins)
    run(other, ticks=3)
    # ...but not started while the create still owes its post-op.
    created, deleting = operations(db, stack_id)
    assert (created.action, created.state) == ("CREATE", OperationState.NOTIFYING)
    assert (deleting.action, deleting.state, deleting.lease_owner, deleting.attempt) == (
        "DELETE", OperationState.PENDING, None, 0)
    assert [entry for entry in log if entry[2] == "DELETE"] == []

    release.set()
    wait_until(lambda: operations(db, stack_id)[0].state == OperationState.COMPLETE,
               "the create to close")
    run(other)
    assert status(stacks, ctx, name, stack_id) == "DELETE_COMPLETE"
    assert log == [("slow", "pre", "CREATE", None), ("slow", "post", "CREATE", False),
                   ("slow", "pre", "DELETE", None), ("slow", "post", "DELETE", False)]
    notifier.hand_back()


def test_without_plugins_an_operation_never_waits_to_notify(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext) -> None:
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(worker_for(stacks))
    assert status(stacks, ctx, name, stack_id) == "CREATE_COMPLETE"
    [operation] = operations(db, stack_id)
    assert operation.state == OperationState.COMPLETE
    assert "post_order" in operation.lifecycle and operation.lifecycle["post_order"] == []
    assert stacks.lifecycle_calls(ctx, name, stack_id) == []


# --- other endings ------------------------------------------------------------------------


def test_a_stack_timeout_gives_every_post_op_a_stack_failure(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    a, b = recorders(log, "a", "b")
    template = ("heat_template_version: 2018-08-31\nresources:\n  slow:\n"
                "    type: OS::Heat::TestResource\n    properties: {wait_secs: 600}\n")
    record = stacks.create(ctx, {"stack_name": "s", "template": template, "timeout_mins": 1})
    loop = worker_for(stacks, [loaded(a), loaded(b)])
    run(loop)
    assert [entry[:2] for entry in log] == [("a", "pre"), ("b", "pre")]
    clock.advance(61)
    run(loop)

    stack = stacks.get(ctx, record.name, record.id)
    assert (stack.action, stack.status, stack.status_reason) == (
        "CREATE", "FAILED", "Create timed out")
    assert log[2:] == [("b", "post", "CREATE", True), ("a", "post", "CREATE", True)]


def abandon_post_ops(db: Database, types: ResourceTypeRegistry, clock: Clock,
                     stacks: StackApi, ctx: RequestContext, log: list[Entry],
                     release: threading.Event) -> tuple[str, str, WorkerLoop]:
    """A create whose post-op of "b" hangs in a worker that dies, as two workers did
    before it: the next claim finds the three tries (the default) spent."""
    a, b = recorders(log, "a", "b")
    gate = Gate(release)
    b.post = gate
    plugins = [loaded(a), loaded(b, timeout=30)]
    name, stack_id = create(stacks, ctx, TEMPLATE)
    dying = dying_worker(stacks, plugins)
    gate.tick_until_post_ops_reach(dying)
    with db.transaction() as session:
        operation = session.scalars(select(Operation).where(
            Operation.stack_id == stack_id)).one()
        operation.failures = 3
    clock.advance(31)
    run(worker_for(stacks, plugins), ticks=2)
    release.set()
    dying.hand_back()
    return name, stack_id, dying


def test_post_ops_that_keep_failing_are_abandoned_and_free_the_stack(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry], release: threading.Event) -> None:
    name, stack_id, _ = abandon_post_ops(db, types, clock, stacks, ctx, log, release)
    [operation] = operations(db, stack_id)
    assert operation.state == OperationState.COMPLETE
    assert [entry[:2] for entry in log if entry[1] == "post"] == [("b", "post")]  # not a
    assert status(stacks, ctx, name, stack_id) == "CREATE_COMPLETE"
    stacks.delete(ctx, name, stack_id)
    run(worker_for(stacks))
    assert status(stacks, ctx, name, stack_id) == "DELETE_COMPLETE"


def test_abandoned_post_ops_release_the_operation_lease(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry], release: threading.Event) -> None:
    _, stack_id, _ = abandon_post_ops(db, types, clock, stacks, ctx, log, release)
    [operation] = operations(db, stack_id)
    assert (operation.lease_owner, operation.lease_expires_at) == (None, None)


# --- one IR per definition ----------------------------------------------------------------


def test_the_pre_ops_the_plan_and_the_steps_share_one_ir_per_definition(
        stacks: StackApi, ctx: RequestContext, log: list[Entry],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """As in kiln-all: the services and the worker share one StoredIrs. The create's view
    for its pre-ops builds the IR its plan, steps and outputs use; the update's views
    build the new definition's IR, which its plan then uses (the stored one was kept)."""
    built: list[Any] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        built.append(args[0])
        return build_from_document(*args, **kwargs)

    # StoredIrs imports the builder on its first build: patched where it is looked up.
    monkeypatch.setattr(build, "build_from_document", counting)
    loop = worker_for(stacks, [loaded(Recording("a", log))])
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(loop)
    assert status(stacks, ctx, name, stack_id) == "CREATE_COMPLETE"
    assert len(built) == 1

    stacks.update(ctx, name, stack_id, {"template": TEMPLATE.replace("first", "third")},
                  patch=True)
    run(loop)

    assert status(stacks, ctx, name, stack_id) == "UPDATE_COMPLETE"
    assert len(built) == 2


# --- skipping what did not change ---------------------------------------------------------


class Cached(Recording):
    """A plugin whose cache key is the shape of the stack the update builds."""

    def cache_key(self, cnxt: RequestContext, stack: StackView,
                  current_stack: StackView | None = None,
                  action: str | None = None) -> str | None:
        target = current_stack or stack
        return repr(sorted((r.name, r.type, r.depends_on) for r in target.resources.values()))


def test_an_unchanged_update_skips_a_plugin_whose_cache_key_is_unchanged(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    cached, plain = Cached("cached", log), Recording("plain", log)
    loop = worker_for(stacks, LifecycleRegistry([loaded(cached), loaded(plain)]))
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(loop)

    def update(template: str) -> list[Entry]:
        log.clear()
        clock.advance(1)  # "last" is by finishing time
        stacks.update(ctx, name, stack_id, {"template": template}, patch=False)
        run(loop)
        assert status(stacks, ctx, name, stack_id) == "UPDATE_COMPLETE"
        return list(log)

    # The first update has no key to compare with; the second repeats it.
    assert update(TEMPLATE) == [("cached", "pre", "UPDATE", None),
                                ("plain", "pre", "UPDATE", None),
                                ("plain", "post", "UPDATE", False),
                                ("cached", "post", "UPDATE", False)]
    # Skipped: no pre-op, no post-op owed; the plugin without a key is called as ever.
    assert update(TEMPLATE) == [("plain", "pre", "UPDATE", None),
                                ("plain", "post", "UPDATE", False)]
    skipped = [c for c in stacks.lifecycle_calls(ctx, name, stack_id)
               if c["verdict"] == "skipped"]
    assert [(c["plugin"], c["phase"], c["action"], c["message"]) for c in skipped] == [
        ("cached", "pre", "UPDATE", "cache key unchanged since its last successful update")]
    assert "pre cached skipped" in timeline(stacks, ctx, name, stack_id)
    # A skip carries the key on: the next unchanged update skips again.
    assert update(TEMPLATE) == [("plain", "pre", "UPDATE", None),
                                ("plain", "post", "UPDATE", False)]
    # A changed template changes the key: the plugin is called.
    assert update(TEMPLATE.replace("first", "third")) == [
        ("cached", "pre", "UPDATE", None), ("plain", "pre", "UPDATE", None),
        ("plain", "post", "UPDATE", False), ("cached", "post", "UPDATE", False)]


def test_after_a_failed_update_an_unchanged_key_is_called_again(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    cached, veto = Cached("cached", log), Recording("veto", log)
    loop = worker_for(stacks, LifecycleRegistry([loaded(cached), loaded(veto)]))
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(loop)
    clock.advance(1)  # "last" is by finishing time
    stacks.update(ctx, name, stack_id, {"template": TEMPLATE}, patch=False)
    run(loop)
    veto.pre = deny("frozen")
    clock.advance(1)
    stacks.update(ctx, name, stack_id, {"template": TEMPLATE}, patch=False)
    run(loop)
    assert status(stacks, ctx, name, stack_id) == "UPDATE_FAILED"
    # The denied update skipped ``cached``, but failed: its key counts no more.
    veto.pre = None
    log.clear()
    clock.advance(1)
    stacks.update(ctx, name, stack_id, {"template": TEMPLATE}, patch=False)
    run(loop)

    assert status(stacks, ctx, name, stack_id) == "UPDATE_COMPLETE"
    assert [entry[:2] for entry in log] == [("cached", "pre"), ("veto", "pre"),
                                            ("veto", "post"), ("cached", "post")]


def test_a_resource_marked_unhealthy_since_the_last_update_is_seen_by_a_cached_plugin(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    """The key still matches, but the update now replaces ``second``: a policy on
    replacements must be asked, so the plugin is called (and its key kept)."""
    cached = Cached("cached", log)
    loop = worker_for(stacks, LifecycleRegistry([loaded(cached)]))
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(loop)
    for _ in range(2):
        clock.advance(1)
        stacks.update(ctx, name, stack_id, {"template": TEMPLATE}, patch=False)
        run(loop)
    assert [c[3] for c in calls(stacks, ctx, name, stack_id) if c[1] == "pre"][-1] == "skipped"
    stacks.mark_unhealthy(ctx, name, stack_id, "second",
                          {"mark_unhealthy": True, "resource_status_reason": "disk"})
    cached.seen.clear()
    clock.advance(1)
    stacks.update(ctx, name, stack_id, {"template": TEMPLATE}, patch=False)
    run(loop)

    assert status(stacks, ctx, name, stack_id) == "UPDATE_COMPLETE"
    [pre] = [seen for seen in cached.seen if seen.phase == "pre"]
    assert pre.stack.changes_known and pre.stack.changes["second"].action == "REPLACE"


def test_a_cache_key_that_raises_calls_the_pre_op(
        db: Database, types: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
        ctx: RequestContext, log: list[Entry]) -> None:
    class Broken(Recording):
        def cache_key(self, cnxt: RequestContext, stack: StackView,
                      current_stack: StackView | None = None,
                      action: str | None = None) -> str | None:
            raise RuntimeError("no key today")

    loop = worker_for(stacks, LifecycleRegistry([loaded(Broken("broken", log))]))
    name, stack_id = create(stacks, ctx, TEMPLATE)
    run(loop)
    for _ in range(2):
        stacks.update(ctx, name, stack_id, {"template": TEMPLATE}, patch=False)
        run(loop)
    assert status(stacks, ctx, name, stack_id) == "UPDATE_COMPLETE"
    assert [c[3] for c in calls(stacks, ctx, name, stack_id) if c[1] == "pre"] == [
        "allow", "allow", "allow"]
