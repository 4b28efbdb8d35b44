"""``stack events --follow``: stream a stack's new events until its operation ends,
with the operation's progress (steps done out of all): a bar redrawn in place on a
terminal, a plain line whenever it changes when piped, JSON lines with ``-f json``."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from engine.services.events import EventQuery, StackEvents
from engine.services.operator import OperationRecord, OperatorService, StackRef

BAR_WIDTH = 30
CLEAR_LINE = "\r\x1b[K"


def progress_bar(done: int, total: int, width: int = BAR_WIDTH) -> str:
    """``[#########.....................]  9/30``; an empty plan shows an empty bar."""
    filled = width * done // total if total else 0
    return f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total}"


def progress_text(operation: OperationRecord) -> str:
    steps = operation.steps
    return (f"{operation.action} {operation.state}: {steps.done}/{steps.total} steps done, "
            f"{steps.running} running, {steps.failed} failed")


class Follower:
    """One follow of one stack. ``render`` turns an event record into the line (or JSON
    object) printed for it."""

    def __init__(self, operator: OperatorService, events: StackEvents, ref: StackRef,
                 out: TextIO, *, as_json: bool, is_tty: bool, interval: float,
                 render: Callable[[Any], dict[str, Any]],
                 line: Callable[[dict[str, Any]], str],
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._operator = operator
        self._events = events
        self._ref = ref
        self._out = out
        self._as_json = as_json
        self._bar = is_tty and not as_json
        self._interval = interval
        self._render = render
        self._line = line
        self._sleep = sleep
        self._last_event: str | None = None
        self._last_progress = ""

    def run(self, backlog: int, nested_depth: int) -> str:
        """Print the last ``backlog`` events, then new ones until the operation running
        now ends (at once when none is). Returns the stack's final status."""
        ctx = self._ref.context()
        earlier = self._events.list_events(ctx, self._ref.name, self._ref.id,
                                           EventQuery(limit=backlog), nested_depth=nested_depth)
        self._emit(list(reversed(earlier)))
        operation = self._operator.current_operation(self._ref)
        while operation is not None:
            self._progress(operation)
            self._sleep(self._interval)
            self._emit(self._newer(ctx, nested_depth))
            operation = self._operator.operation(operation.id)
            if operation.finished:
                # Its last events (the post-ops') are written before it is marked
                # finished: print them, then the final progress as the last line.
                self._emit(self._newer(ctx, nested_depth))
                self._progress(operation)
                if self._bar:
                    self._out.write("\n")
                operation = None
        return self._operator.stack(self._ref).status

    def _newer(self, ctx: Any, nested_depth: int) -> Sequence[Any]:
        """The events after the last one printed, oldest first."""
        return self._events.list_events(
            ctx, self._ref.name, self._ref.id,
            EventQuery(marker=self._last_event, ascending=True), nested_depth=nested_depth)

    def _emit(self, events: Sequence[Any]) -> None:
        if not events:
            return
        if self._bar and self._last_progress:
            self._out.write(CLEAR_LINE)
        for event in events:
            fields = self._render(event)
            self._out.write((json.dumps(fields) if self._as_json else self._line(fields))
                            + "\n")
            self._last_event = event.id
        if self._bar and self._last_progress:
            self._out.write(self._last_progress)
        self._out.flush()

    def _progress(self, operation: OperationRecord) -> None:
        steps = operation.steps
        if self._bar:
            text = f"{progress_bar(steps.done, steps.total)}  {progress_text(operation)}"
            self._out.write(CLEAR_LINE + text)
        else:
            text = progress_text(operation)
            if text == self._last_progress:
                return
            self._out.write((json.dumps({"progress": {
                "operation_id": operation.id, "action": operation.action,
                "state": operation.state, "steps_done": steps.done,
                "steps_total": steps.total, "steps_running": steps.running,
                "steps_failed": steps.failed}}) if self._as_json else f"progress: {text}")
                + "\n")
        self._last_progress = text
        self._out.flush()
