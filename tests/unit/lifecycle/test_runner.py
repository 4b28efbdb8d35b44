"""engine.lifecycle.runner: one bounded plugin call turned into a recorded verdict."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from engine import logs
from engine.context import RequestContext
from engine.distributions import Origin
from engine.lifecycle.base import Denied, LifecyclePlugin, Warn
from engine.lifecycle.registry import LoadedPlugin
from engine.lifecycle.runner import (
    MAX_MESSAGE,
    POST,
    PRE,
    Call,
    CallRecord,
    dry_run,
    invoke,
)
from engine.lifecycle.view import StackView, freeze
from tests.unit.metric_deltas import Moved

CONTEXT = RequestContext(tenant_id="tenant-1", token_tenant_id="tenant-1", role="member",
                         request_id="req-1")


def stack(action: str = "CREATE", dry: bool = False) -> StackView:
    return StackView(id="stack-1", name="teststack", tenant_id="tenant-1", action=action,
                     status=f"{action}_IN_PROGRESS", status_reason="", template=freeze({}),
                     parameters=freeze({}), environment=freeze({}), resources=freeze({}),
                     dry_run=dry)


def call(action: str = "CREATE", *, failure: bool = False, dry: bool = False,
         current: StackView | None = None) -> Call:
    return Call(context=CONTEXT, stack=stack(action, dry), action=action,
                current_stack=current, is_stack_failure=failure)


class Scripted(LifecyclePlugin):
    """Answers what it is told to and remembers how it was called."""

    def __init__(self, pre: Any = None, post: Any = None) -> None:
        self.pre, self.post = pre, post
        self.calls: list[tuple[Any, ...]] = []

    def do_pre_op(self, cnxt: RequestContext, stack: StackView,
                  current_stack: StackView | None = None,
                  action: str | None = None) -> Warn | None:
        self.calls.append((PRE, cnxt, stack, current_stack, action))
        if isinstance(self.pre, BaseException):
            raise self.pre
        return self.pre  # type: ignore[no-any-return]

    def do_post_op(self, cnxt: RequestContext, stack: StackView,
                   current_stack: StackView | None = None, action: str | None = None,
                   is_stack_failure: bool = False) -> None:
        self.calls.append((POST, cnxt, stack, current_stack, action, is_stack_failure))
        if isinstance(self.post, BaseException):
            raise self.post


class Hanging(LifecyclePlugin):
    """Answers only once ``release`` is set: stands for a plugin stuck on a backend."""

    def __init__(self, release: threading.Event) -> None:
        self.release = release

    def do_pre_op(self, cnxt: RequestContext, stack: StackView,
                  current_stack: StackView | None = None,
                  action: str | None = None) -> Warn | None:
        self.release.wait(60)
        return None

    def do_post_op(self, cnxt: RequestContext, stack: StackView,
                   current_stack: StackView | None = None, action: str | None = None,
                   is_stack_failure: bool = False) -> None:
        self.release.wait(60)


def loaded(plugin: LifecyclePlugin, name: str = "gate", timeout: float = 10.0,
           on_timeout: str = "fail") -> LoadedPlugin:
    return LoadedPlugin(name=name, plugin=plugin, ordinal=100, timeout_seconds=timeout,
                        on_timeout=on_timeout, origin=Origin("", ""))


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown so no abandoned call outlives its test."""
    event = threading.Event()
    yield event
    event.set()
    for thread in threading.enumerate():
        if thread.name.startswith("lifecycle-"):
            thread.join(5)


# --- verdicts -----------------------------------------------------------------------------


def test_a_pre_op_that_returns_nothing_allows() -> None:
    plugin = Scripted()
    current = stack("UPDATE")
    the_call = call("UPDATE", current=current)
    record = invoke(loaded(plugin), PRE, the_call)
    assert record == CallRecord(plugin="gate", phase=PRE, action="UPDATE", verdict="allow",
                                message="", duration_ms=record.duration_ms, blocking=False,
                                is_stack_failure=None, dry_run=False)
    assert plugin.calls == [(PRE, CONTEXT, the_call.stack, current, "UPDATE")]
    assert record.as_dict() == {"plugin": "gate", "phase": "pre", "action": "UPDATE",
                                "verdict": "allow", "message": "", "blocking": False,
                                "duration_ms": record.duration_ms, "dry_run": False}


def test_a_warning_lets_the_operation_go_on() -> None:
    record = invoke(loaded(Scripted(pre=Warn("quota 90% used"))), PRE, call())
    assert (record.verdict, record.message, record.blocking) == (
        "warn", "quota 90% used", False)


def test_denied_blocks_with_its_message() -> None:
    record = invoke(loaded(Scripted(pre=Denied("server: 64 GB flavors are not allowed"))),
                    PRE, call())
    assert (record.verdict, record.message, record.blocking) == (
        "deny", "server: 64 GB flavors are not allowed", True)


def test_a_denial_without_a_message_still_says_denied() -> None:
    record = invoke(loaded(Scripted(pre=Denied())), PRE, call())
    assert (record.verdict, record.message, record.blocking) == ("deny", "denied", True)


def test_any_other_exception_in_a_pre_op_is_an_error_that_blocks() -> None:
    record = invoke(loaded(Scripted(pre=KeyError("flavor"))), PRE, call())
    assert (record.verdict, record.message, record.blocking) == (
        "error", "KeyError: 'flavor'", True)


def test_a_pre_op_returning_something_else_allows() -> None:
    record = invoke(loaded(Scripted(pre="yes")), PRE, call())
    assert record.verdict == "allow"


@pytest.mark.parametrize("failure", [False, True])
def test_a_post_op_is_done_and_told_how_the_operation_ended(failure: bool) -> None:
    plugin = Scripted()
    the_call = call("DELETE", failure=failure)
    record = invoke(loaded(plugin), POST, the_call)
    assert (record.phase, record.action, record.verdict, record.blocking,
            record.is_stack_failure) == (POST, "DELETE", "done", False, failure)
    assert plugin.calls == [(POST, CONTEXT, the_call.stack, None, "DELETE", failure)]
    assert record.as_dict()["is_stack_failure"] is failure


@pytest.mark.parametrize("error, message", [
    (RuntimeError("release failed"), "RuntimeError: release failed"),
    (Denied("too late"), "Denied: too late"),  # a post-op cannot deny anything
])
def test_a_post_op_that_raises_is_an_error_that_blocks_nothing(
        error: Exception, message: str) -> None:
    record = invoke(loaded(Scripted(post=error)), POST, call(failure=True))
    assert (record.verdict, record.message, record.blocking) == ("error", message, False)


def test_a_dry_run_call_is_recorded_as_one() -> None:
    record = invoke(loaded(Scripted()), PRE, call(dry=True))
    assert record.dry_run is True


# --- time limits --------------------------------------------------------------------------


def test_a_pre_op_past_its_timeout_is_abandoned_and_fails(release: threading.Event) -> None:
    started = time.monotonic()
    record = invoke(loaded(Hanging(release), timeout=0.2), PRE, call())
    elapsed = time.monotonic() - started
    assert (record.verdict, record.message, record.blocking) == (
        "timeout", "no answer within 0.2 s", True)
    assert 0.2 <= elapsed < 5  # did not wait for the plugin
    assert record.duration_ms >= 200


def test_with_on_timeout_warn_a_timeout_does_not_block(release: threading.Event) -> None:
    record = invoke(loaded(Hanging(release), timeout=0.1, on_timeout="warn"), PRE, call())
    assert (record.verdict, record.blocking) == ("timeout", False)


def test_a_post_op_timeout_never_blocks(release: threading.Event) -> None:
    record = invoke(loaded(Hanging(release), timeout=0.1), POST, call())
    assert (record.verdict, record.blocking, record.is_stack_failure) == (
        "timeout", False, False)


def test_each_call_is_counted_by_plugin_phase_and_verdict_and_timed(
        release: threading.Event) -> None:
    moved = Moved()

    invoke(loaded(Hanging(release), name="slow-gate", timeout=0.05), PRE, call())
    invoke(loaded(Scripted(), name="slow-gate"), POST, call())

    assert moved("kiln_lifecycle_plugin_calls_total", plugin="slow-gate", phase="pre",
                 verdict="timeout") == 1
    assert moved("kiln_lifecycle_plugin_calls_total", plugin="slow-gate", phase="post",
                 verdict="done") == 1
    assert moved("kiln_lifecycle_plugin_call_duration_seconds_sum", plugin="slow-gate",
                 phase="pre") >= 0.05


def test_the_heartbeat_is_called_while_a_plugin_takes_its_time(
        release: threading.Event) -> None:
    beats: list[float] = []

    def heartbeat() -> None:
        beats.append(time.monotonic())
        if len(beats) == 3:
            release.set()  # the plugin answers after three heartbeats

    record = invoke(loaded(Hanging(release), timeout=30), PRE, call(), heartbeat,
                    heartbeat_seconds=0.02)
    assert record.verdict == "allow"
    assert len(beats) >= 3


def test_a_quick_call_needs_no_heartbeat() -> None:
    beats: list[int] = []
    invoke(loaded(Scripted()), PRE, call(), lambda: beats.append(1), heartbeat_seconds=5)
    assert beats == []


def test_a_heartbeat_that_raises_stops_the_wait(release: threading.Event) -> None:
    class LeaseGone(Exception):
        pass

    def heartbeat() -> None:
        raise LeaseGone

    # The worker's heartbeat raises when another worker took the operation over.
    with pytest.raises(LeaseGone):
        invoke(loaded(Hanging(release), timeout=30), PRE, call(), heartbeat,
               heartbeat_seconds=0.02)


# --- messages -----------------------------------------------------------------------------


def test_a_plugins_lines_carry_its_callers_log_context() -> None:
    seen: list[dict[str, str]] = []

    class Logging(Scripted):
        def do_pre_op(self, cnxt: RequestContext, stack: StackView,
                      current_stack: StackView | None = None,
                      action: str | None = None) -> Warn | None:
            seen.append(dict(logs.current()))  # what its log lines would carry
            return None

    with logs.bound(request_id="req-1", stack_name="teststack"):
        invoke(loaded(Logging()), PRE, call())

    assert seen == [{"request_id": "req-1", "stack_name": "teststack"}]


def test_messages_have_their_whitespace_collapsed() -> None:
    record = invoke(loaded(Scripted(pre=Warn("  server:\n\tflavor   m1.huge  "))), PRE, call())
    assert record.message == "server: flavor m1.huge"


def test_long_messages_are_clipped() -> None:
    record = invoke(loaded(Scripted(pre=Denied("x" * 5000))), PRE, call())
    assert len(record.message) == MAX_MESSAGE
    assert record.message == "x" * (MAX_MESSAGE - 1) + "…"
    short = invoke(loaded(Scripted(pre=Denied("y" * MAX_MESSAGE))), PRE, call())
    assert short.message == "y" * MAX_MESSAGE


def test_summary_reads_as_one_line() -> None:
    denied = CallRecord(plugin="quota", phase=PRE, action="CREATE", verdict="deny",
                        message="over quota", duration_ms=3, blocking=True)
    assert denied.summary() == "Lifecycle plugin quota pre-op CREATE: deny: over quota"
    done = CallRecord(plugin="quota", phase=POST, action="DELETE", verdict="done",
                      message="", duration_ms=3, is_stack_failure=False)
    assert done.summary() == "Lifecycle plugin quota post-op DELETE: done"


# --- dry runs -----------------------------------------------------------------------------


class DryRunning(Scripted):
    supports_dry_run = True


def test_dry_run_calls_only_plugins_that_support_it_with_the_same_view() -> None:
    first, second = DryRunning(pre=Warn("would use 3 of 4 servers")), Scripted()
    third = DryRunning(pre=Denied("would exceed the quota"))
    the_call = call(dry=True)
    records = dry_run((loaded(first, "first"), loaded(second, "second"),
                       loaded(third, "third")), the_call)
    assert [(r.plugin, r.verdict, r.message, r.dry_run) for r in records] == [
        ("first", "warn", "would use 3 of 4 servers", True),
        ("second", "skipped", "this plugin does not support dry runs", True),
        ("third", "deny", "would exceed the quota", True),
    ]
    assert second.calls == []
    assert first.calls[0][2] is the_call.stack and third.calls[0][2] is the_call.stack
    assert first.calls[0][2].dry_run is True
    assert records[1].as_dict()["phase"] == PRE


def test_a_dry_run_of_a_nested_stack_skips_the_plugins_that_want_the_root_only() -> None:
    every, root = DryRunning(), DryRunning()
    nested = dataclasses.replace(call(dry=True), stack=dataclasses.replace(
        stack(dry=True), nested_depth=1))
    records = dry_run((loaded(every, "every"), dataclasses.replace(
        loaded(root, "root"), tree_scope="root")), nested)
    assert [(r.plugin, r.verdict, r.message, r.dry_run) for r in records] == [
        ("every", "allow", "", True),
        ("root", "skipped", "this plugin is called for the root stack only", True),
    ]
    assert root.calls == [] and len(every.calls) == 1
    # At the root it is called like any other.
    [record] = dry_run((dataclasses.replace(loaded(root, "root"), tree_scope="root"),),
                       call(dry=True))
    assert (record.verdict, len(root.calls)) == ("allow", 1)


def test_dry_run_without_plugins_reports_nothing() -> None:
    assert dry_run((), call(dry=True)) == []
