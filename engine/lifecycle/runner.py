"""One lifecycle-plugin call: bounded by its timeout, turned into a recorded verdict.

A call runs on a thread of its own so that the caller can stop waiting: Python cannot
kill a thread, so a call past its timeout is abandoned (it runs on, harmlessly, as a
daemon thread) and the operation moves on. While it waits the caller's ``heartbeat`` is
called every ``heartbeat_seconds``, so the worker keeps its lease on the operation
however long a plugin is allowed to take.
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from engine import metrics
from engine.context import RequestContext
from engine.lifecycle.base import Denied, Pending, Warn
from engine.lifecycle.registry import LoadedPlugin
from engine.lifecycle.view import StackView
from engine.vocabulary import Verdict

LOG = logging.getLogger(__name__)

PRE, POST = "pre", "post"
# The verdicts, by their short names (engine.vocabulary.Verdict says when each is given).
ALLOW, WARN, DENY, ERROR, TIMEOUT, SKIPPED, DONE, NOT_CALLED = (
    Verdict.ALLOW, Verdict.WARN, Verdict.DENY, Verdict.ERROR, Verdict.TIMEOUT,
    Verdict.SKIPPED, Verdict.DONE, Verdict.NOT_CALLED)
PENDING, APPROVED, REJECTED, EXPIRED = (
    Verdict.PENDING, Verdict.APPROVED, Verdict.REJECTED, Verdict.EXPIRED)
MAX_MESSAGE = 1000


@dataclasses.dataclass(frozen=True)
class CallRecord:
    plugin: str
    phase: str  # PRE | POST
    action: str
    verdict: str
    message: str
    duration_ms: int
    blocking: bool = False  # a pre-op verdict that fails the operation
    is_stack_failure: bool | None = None  # post-ops only
    dry_run: bool = False
    # The plugin's cache key (update pre-ops that allowed, warned or were skipped).
    cache_key: str | None = None
    # A pending pre-op's approval window (None: the configured default), and whether
    # approving it overrides a soft-mandatory refusal (``Pending``).
    window_seconds: float | None = None
    override: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        return {key: value for key, value in dataclasses.asdict(self).items()
                if value is not None}

    def summary(self) -> str:
        """One line for an event reason and the stack status reason."""
        call = "pre-op" if self.phase == PRE else "post-op"
        text = f"Lifecycle plugin {self.plugin} {call} {self.action}: {self.verdict}"
        if self.message:
            text += f": {self.message}"
        return text


@dataclasses.dataclass(frozen=True)
class Call:
    """What a plugin is told: the same for every plugin of one operation."""

    context: RequestContext
    stack: StackView
    action: str
    current_stack: StackView | None = None
    is_stack_failure: bool = False
    # On UPDATE only: each plugin's cache key at its last successful update, and so the
    # sign to ask for its key (``LifecyclePlugin.cache_key``); None on other actions.
    cached_keys: Mapping[str, str] | None = None
    # A nested stack's operation started by its parent's, as part of one operation on
    # the tree; False for a request made on a nested stack itself, which a root-only
    # plugin is asked about as about a root's.
    by_parent: bool = True


def invoke(loaded: LoadedPlugin, phase: str, call: Call,
           heartbeat: Callable[[], object] | None = None,
           heartbeat_seconds: float = 5.0) -> CallRecord:
    """Call one plugin's pre-op or post-op and say how it went. Never raises."""
    plugin = loaded.plugin
    outcome: dict[str, Any] = {}
    if phase == PRE:
        def target() -> Any:
            if call.cached_keys is not None and not call.stack.dry_run:
                # On the call's thread, so the key too is bounded by the timeout.
                outcome["key"] = _cache_key(loaded, call)
                if (outcome["key"] is not None
                        and outcome["key"] == call.cached_keys.get(loaded.name)):
                    outcome["skipped"] = True
                    return None
            return plugin.do_pre_op(call.context, call.stack, current_stack=call.current_stack,
                                    action=call.action)
    else:
        def target() -> Any:
            return plugin.do_post_op(call.context, call.stack, current_stack=call.current_stack,
                                     action=call.action, is_stack_failure=call.is_stack_failure)

    def run() -> None:
        try:
            outcome["value"] = target()
        except BaseException as exc:  # noqa: BLE001 -- reported as the plugin's verdict
            outcome["error"] = exc

    started = time.monotonic()
    # In a copy of the caller's context: the plugin's own log lines name the operation,
    # its stack and its request as the caller's do (engine.logs).
    thread = threading.Thread(target=contextvars.copy_context().run, args=(run,),
                              name=f"lifecycle-{loaded.name}", daemon=True)
    thread.start()
    deadline = started + loaded.timeout_seconds
    while thread.is_alive():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        thread.join(min(remaining, heartbeat_seconds))
        if heartbeat is not None and thread.is_alive():
            heartbeat()
    seconds = time.monotonic() - started
    record = _verdict(loaded, phase, call, outcome, timed_out=thread.is_alive())
    record = dataclasses.replace(record, duration_ms=int(seconds * 1000))
    metrics.lifecycle_plugin_call(loaded.name, phase, record.verdict, seconds)
    if record.verdict in (ERROR, TIMEOUT):
        LOG.warning("stack %s/%s: %s", call.stack.name, call.stack.id, record.summary(),
                    exc_info=outcome.get("error"))
    return record


def _cache_key(loaded: LoadedPlugin, call: Call) -> str | None:
    """The plugin's cache key for ``call``, or None (never skip). A key that cannot be
    had only costs the skip: the pre-op is called, as without a key."""
    # A plugin that does not subclass LifecyclePlugin (duck-typed, as Heat allows) may
    # have no such method: it is called every time.
    method = getattr(loaded.plugin, "cache_key", None)
    if method is None:
        return None
    try:
        key = method(call.context, call.stack, current_stack=call.current_stack,
                     action=call.action)
    except Exception:  # noqa: BLE001 -- a broken key must not deny the update
        LOG.warning("lifecycle plugin %s: its cache key failed; its pre-op is called",
                    loaded.name, exc_info=True)
        return None
    return key if isinstance(key, str) else None


def not_called(plugin: str, action: str, is_stack_failure: bool, why: str) -> CallRecord:
    """The record of a post-op owed to ``plugin`` that will never be called, and why:
    an operation must not end with a plugin's post-op silently skipped."""
    return CallRecord(plugin=plugin, phase=POST, action=action, verdict=NOT_CALLED,
                      message=_clip(why), duration_ms=0, is_stack_failure=is_stack_failure)


def _verdict(loaded: LoadedPlugin, phase: str, call: Call, outcome: dict[str, Any],
             timed_out: bool) -> CallRecord:
    def record(verdict: str, message: str = "", blocking: bool = False) -> CallRecord:
        return CallRecord(plugin=loaded.name, phase=phase, action=call.action,
                          verdict=verdict, message=_clip(message), duration_ms=0,
                          blocking=blocking,
                          is_stack_failure=call.is_stack_failure if phase == POST else None,
                          dry_run=call.stack.dry_run)

    if timed_out:
        message = f"no answer within {loaded.timeout_seconds:g} s"
        return record(TIMEOUT, message, blocking=phase == PRE and loaded.on_timeout == "fail")
    error = outcome.get("error")
    if isinstance(error, Denied) and phase == PRE:
        return record(DENY, str(error) or "denied", blocking=True)
    if error is not None:
        return record(ERROR, f"{type(error).__name__}: {error}", blocking=phase == PRE)
    value = outcome.get("value")
    if phase == POST:
        return record(DONE)
    key = outcome.get("key")
    if outcome.get("skipped"):
        verdict = record(SKIPPED, "cache key unchanged since its last successful update")
    elif isinstance(value, Warn):
        verdict = record(WARN, value.message)
    elif isinstance(value, Pending):
        verdict = dataclasses.replace(record(PENDING, value.message),
                                      window_seconds=value.window_seconds,
                                      override=value.override or None)
    else:
        verdict = record(ALLOW)
    return dataclasses.replace(verdict, cache_key=key)


def _clip(message: str) -> str:
    message = " ".join(message.split())
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE - 1] + "…"


def out_of_scope(loaded: LoadedPlugin, call: Call) -> CallRecord | None:
    """The ``skipped`` record of a pre-op not to be called because the plugin wants
    the root stack only and ``call`` is a nested stack's, made by its parent's operation
    (the plugin was asked about the root's), or None: call it."""
    if not call.by_parent or loaded.wants(call.stack.nested_depth):
        return None
    return CallRecord(plugin=loaded.name, phase=PRE, action=call.action, verdict=SKIPPED,
                      message="this plugin is called for the root stack only",
                      duration_ms=0, dry_run=call.stack.dry_run)


def dry_run(plugins: tuple[LoadedPlugin, ...], call: Call) -> list[CallRecord]:
    """Every enabled plugin's verdict on ``call`` without reserving anything: those that
    do not declare ``supports_dry_run``, or want the root only and ``call`` is a nested
    stack's, are reported as skipped, not called."""
    records = []
    for loaded in plugins:
        skipped = out_of_scope(loaded, call)
        if skipped is not None:
            records.append(skipped)
        elif type(loaded.plugin).supports_dry_run:
            records.append(invoke(loaded, PRE, call))
        else:
            records.append(CallRecord(
                plugin=loaded.name, phase=PRE, action=call.action, verdict=SKIPPED,
                message="this plugin does not support dry runs", duration_ms=0,
                dry_run=True))
    return records
