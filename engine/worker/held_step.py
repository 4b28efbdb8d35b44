"""A step a worker holds between its handler's calls: what it acts on and where it
stands (``StepPhase``). Made when the step is prepared (``engine.worker.step``), kept by
the loop until the step is closed, failed or lost."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import enum
from collections.abc import Mapping
from typing import Any

from engine import logs
from engine.db.stack_rows import OperationLabel
from engine.resources.base import Resource
from engine.resources.drift import Drift

FIRST_POLL_SECONDS = 0.05


class StepPhase(enum.Enum):
    """Where a held step stands between its handler's calls."""

    PREPARED = "prepared"  # its action not started yet: observed, then started, next
    NOTHING_TO_DO = "nothing to do"  # a converging update without drift: no handler
    STARTED = "started"  # started here; its token (and ``started``) not yet saved
    WAITING = "waiting"  # started and saved: polled until its action finishes
    FINISHED = "finished"  # its action finished: the step is to be closed


@dataclasses.dataclass
class HeldStep:
    step_id: int
    operation_id: str
    stack_id: str
    resource_name: str
    resource_type: str
    action: str
    instance: Resource
    secrets: tuple[str, ...]
    token: Any = None
    phase: StepPhase = StepPhase.PREPARED
    next_poll_at: float = 0.0
    interval: float = FIRST_POLL_SECONDS
    saved_data: dict[str, Any] = dataclasses.field(default_factory=dict)
    adopt: Mapping[str, Any] | None = None  # this resource's abandon data, for ADOPT
    prop_diff: Mapping[str, Any] | None = None  # the changed properties, for UPDATE
    # CLEANUP / RESTORE: the step deletes a physical resource a replacement left (see
    # StepDecider._replaced); "" for a step on the resource itself.
    kind: str = ""
    # Why the step fails before it starts (found while preparing it).
    failure: Exception | None = None
    # An update with ``converge``: observe the backend first and put drift back.
    converge: bool = False
    # What observing the backend found (a check, a converging update); None: not looked.
    drift: Drift | None = None
    # Its first claim (the step row's ``started_at``): where its duration starts.
    started_at: datetime.datetime | None = None
    # What its log lines name: its operation, the request that started it, its stack.
    label: OperationLabel | None = None
    # The breakpoint it pauses at once its action is done (``engine.worker.breakpoints``).
    post_hook: str | None = None

    def bound_logs(self) -> contextlib.AbstractContextManager[None]:
        """A block whose log lines are about this step's operation and stack, with its
        stack's hidden values masked (``engine.logs``)."""
        fields = self.label._asdict() if self.label else {
            "operation_id": self.operation_id, "stack_id": self.stack_id}
        return logs.bound(secrets=self.secrets, **fields)
