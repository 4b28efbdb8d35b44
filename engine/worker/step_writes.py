"""The lease-guarded writes of a held step: its progress saved, its close and its
failure, each on the step row and on its resource row (state, event, data, drift), in
the caller's transaction. A write whose lease was lost raises ``LeaseLost``: the step
is another worker's now."""

from __future__ import annotations

import datetime
import functools
import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

from engine import metrics, reasons
from engine.db import resource_rows, stack_rows, steps
from engine.db.leases import LeaseLost
from engine.db.models import PropertyDrift, Stack, Step
from engine.db.models import Resource as ResourceRow
from engine.db.session import DbSession, after_commit
from engine.db.transitions import (
    NewState,
    add_refused_action_event,
    add_replaced_resource_event,
    fail_step,
    set_resource_state,
    set_resource_states,
)
from engine.errors import KilnError
from engine.resources.drift import drift_reason
from engine.resources.registry import ResourceTypeRegistry
from engine.template.parameters import redact
from engine.vocabulary import Action, Status
from engine.worker.held_step import HeldStep, StepPhase

LOG = logging.getLogger(__name__)
# Resource actions that make the resource what its template's properties say: the
# properties are validated before, and any drift seen before is gone after.
APPLYING_PROPERTIES = (Action.CREATE, Action.UPDATE, Action.ADOPT)


class Closed(NamedTuple):
    """A round's closes: the ids whose lease was lost (nothing written for them), and
    the ids of the steps the closes made ready."""

    lost: set[int]
    ready: set[int]


class StepWrites:
    """The writes of the steps ``owner`` holds (the lease owner every write checks)."""

    def __init__(self, owner: str, registry: ResourceTypeRegistry) -> None:
        self._owner = owner
        self._registry = registry

    def save(self, session: DbSession, waiting: Sequence[HeldStep]) -> set[int]:
        """Save waiting steps' progress: their tokens, and what their handlers recorded,
        a few statements whatever their number (a thousand steps started together save
        together); the ids whose lease was lost (nothing was written for them)."""
        saved = steps.save_progress_many(session, self._owner, [
            steps.Progress(held.step_id, held.token,
                           datetime.datetime.fromtimestamp(held.next_poll_at, datetime.UTC),
                           held.phase == StepPhase.STARTED) for held in waiting])
        by_stack: dict[str, list[HeldStep]] = {}
        for held in waiting:
            if held.step_id in saved:
                by_stack.setdefault(held.stack_id, []).append(held)
        for stack_id, group in by_stack.items():
            rows = {row.name: row for row in resource_rows.list_resources_named(
                session, stack_id, [held.resource_name for held in group])}
            for held in group:
                row = rows[held.resource_name]
                self._keep_handler_state(row, held)
                if held.kind != Action.CLEANUP and held.drift is not None:
                    row.drift = self._masked(held)
                held.saved_data = dict(held.instance.data)
                held.phase = StepPhase.WAITING
        return {held.step_id for held in waiting} - saved

    def complete_plain(self, session: DbSession, done: Sequence[HeldStep],
                        now: datetime.datetime, *, wake: bool = True) -> Closed:
        """Close finished steps on resources themselves (no replacement to clean up) a
        few statements per operation, whatever their number; the ids whose lease was
        lost, and of the steps made ready (``wake``: as ``steps.complete_steps``)."""
        lost: set[int] = set()
        ready: set[int] = set()
        by_operation: dict[str, list[HeldStep]] = {}
        for held in done:
            by_operation.setdefault(held.operation_id, []).append(held)
        for operation_id, group in by_operation.items():
            closed, made_ready = steps.complete_steps(session, operation_id,
                                                      [h.step_id for h in group],
                                                      self._owner, now, wake=wake)
            lost |= {h.step_id for h in group} - closed
            ready |= made_ready
            stack = stack_rows.load_stack(session, group[0].stack_id)
            # Outlines, not objects, written with an executemany: a round's thousand
            # resource objects cost more to load and track than the round's statements.
            rows = {row.name: row for row in resource_rows.list_outlines(
                session, stack.id, [h.resource_name for h in group if h.step_id in closed])}
            states = []
            for held in group:
                if held.step_id in closed:
                    self.count_finished(session, held.resource_type, Status.COMPLETE,
                                        held.started_at, now)
                    row = rows[held.resource_name]
                    drift, reason = self._drift(held)
                    # What the handler recorded (``_keep_handler_state``), with the state.
                    states.append(NewState(row.id, row.name, row.type,
                                           held.instance.physical_id, held.action,
                                           Status.COMPLETE, reason,
                                           {"data": dict(held.instance.data), **drift}))
            set_resource_states(session, stack, states, now)
        return Closed(lost, ready)

    def complete_in(self, session: DbSession, held: HeldStep, now: datetime.datetime) -> None:
        """Close one finished step, a cleanup's or a restore's as well."""
        step = session.get(Step, held.step_id)
        if step is None or not steps.complete_step(session, step, self._owner, now):
            raise LeaseLost()
        self.count_finished(session, held.resource_type, Status.COMPLETE, held.started_at, now)
        row = self.row(session, held)
        stack = stack_rows.load_stack(session, held.stack_id)
        if held.kind == Action.CLEANUP:
            # The replaced resource is gone; the row is the replacement's, untouched.
            add_replaced_resource_event(session, stack, row, held.instance.physical_id,
                                        held.resource_type, Action.DELETE, Status.COMPLETE,
                                        reasons.REPLACED_DELETED, now)
            row.replaced = None
            return
        if held.kind == Action.RESTORE:
            set_resource_state(session, stack, row, Action.DELETE, Status.COMPLETE,
                               reasons.STATE_CHANGED, now)
            replaced = row.replaced
            assert replaced is not None, f"resource {row.id} restored without a replaced one"
            row.type, row.physical_id = replaced["type"], replaced.get("physical_id")
            row.properties, row.data = replaced.get("properties"), replaced.get("data", {})
            row.generation, row.replaced = replaced.get("generation", 0), None
            set_resource_state(session, stack, row, Action.UPDATE, Status.COMPLETE,
                               reasons.RESTORED, now)
            return
        self.finish_resource(session, stack, row, held, now)

    def finish_resource(self, session: DbSession, stack: Stack, row: ResourceRow,
                        held: HeldStep, now: datetime.datetime) -> None:
        """The resource's part of a step's close: what its handler recorded, and its
        ``<ACTION>_COMPLETE`` (with what the action learnt of drift)."""
        self._keep_handler_state(row, held)
        set_resource_state(session, stack, row, held.action, Status.COMPLETE,
                           self._record_drift(row, held), now)

    def fail(self, session: DbSession, held: HeldStep, exc: Exception, now: datetime.datetime
             ) -> None:
        """Fail a held step on its handler's (or its preparing's) failure ``exc``."""
        step = session.get(Step, held.step_id)
        if step is None:
            raise LeaseLost()
        stack = stack_rows.load_stack(session, held.stack_id)
        row = self.row(session, held)
        # What the handler made before it failed is kept, so a delete finds it.
        self._keep_handler_state(row, held)
        self.record_failure(session, step, stack, row, exc, held.secrets, now,
                            action=held.action)

    def record_failure(self, session: DbSession, step: Step, stack: Stack, row: ResourceRow,
                        exc: Exception, secrets: tuple[str, ...],
                        now: datetime.datetime, *, action: str | None = None,
                        keep_state: bool = False) -> None:
        """Fail the step and its resource ``<ACTION>_FAILED``; a cleanup's failure is
        the replaced resource's, an event only (the row is the replacement's). With
        ``keep_state`` (an action refused before it began) the resource keeps its state
        and the event carries the bare message, as Heat's does."""
        action = action or (Action.DELETE if step.action == Action.CLEANUP else step.action)
        reason = failure_reason(exc, row.name, secrets)
        if not isinstance(exc, KilnError):
            LOG.info("resource %s of stack %s/%s failed %s: %s", row.name, stack.name,
                     stack.id, action, type(exc).__name__)
        if not fail_step(session, stack, step, self._owner,
                         reasons.resource_failed(action, reason), now,
                         waiting_reason=reasons.HOOK_WAIT_FAILED):
            raise LeaseLost()
        self.count_finished(session, step.resource_type, Status.FAILED, step.started_at, now)
        if keep_state:
            message = exc.message if isinstance(exc, KilnError) else str(exc)
            add_refused_action_event(session, stack, row, action,
                                     str(redact(message, secrets)), now)
        elif step.action != Action.CLEANUP:
            set_resource_state(session, stack, row, action, Status.FAILED, reason, now)
        else:
            replaced = row.replaced
            add_replaced_resource_event(session, stack, row,
                                        replaced["physical_id"] if replaced else None,
                                        row.type, action, Status.FAILED, reason, now)

    def count_finished(self, session: DbSession, resource_type: str | None, outcome: Status,
                       started_at: datetime.datetime | None, now: datetime.datetime) -> None:
        """Count a step this transaction closes, once it commits (a round redone step by
        step after a bug counts each once). The type is its name when a plugin registers
        it, else ``other``: a provider template's name is a tenant's text (an alias is
        resolved to the type it names before the step runs)."""
        label = metrics.OTHER_TYPE
        if resource_type is not None and self._registry.find(resource_type) is not None:
            label = resource_type
        seconds = None if started_at is None else (now - started_at).total_seconds()
        after_commit(session, functools.partial(metrics.step_finished, label, str(outcome),
                                                seconds))

    def _record_drift(self, row: ResourceRow, held: HeldStep) -> str:
        """Store what a completed action learnt of the resource's drift (``_drift``);
        the reason of its COMPLETE event."""
        drift, reason = self._drift(held)
        if "drift" in drift:
            row.drift = drift["drift"]
        return reason

    def _drift(self, held: HeldStep) -> tuple[dict[str, Any], str]:
        """What a completed action writes of the resource's drift (the ``drift`` column,
        or nothing), and the reason of its COMPLETE event. A create or an update without
        observing leaves the resource as its template says, so any drift seen before is
        gone."""
        written: dict[str, Any] = {}
        if held.drift is not None:
            written["drift"] = self._masked(held)
        elif held.action in APPLYING_PROPERTIES:
            written["drift"] = None
        return written, drift_reason(held.drift) if held.drift else reasons.STATE_CHANGED

    @staticmethod
    def _keep_handler_state(row: ResourceRow, held: HeldStep) -> None:
        """Write what the handler recorded (its data, the physical id it made) to the
        resource it acts on: a cleanup's is the replaced one, whose state lives in
        ``row.replaced`` (the row is the replacement's)."""
        if held.kind == Action.CLEANUP:
            # A cleanup's step is closed at once when there is no replaced resource.
            if row.replaced is not None:
                row.replaced = {**row.replaced, "data": dict(held.instance.data)}
        else:
            row.data = dict(held.instance.data)
            row.physical_id = held.instance.physical_id

    @staticmethod
    def _masked(held: HeldStep) -> dict[str, PropertyDrift]:
        masked: dict[str, PropertyDrift] = redact(held.drift or {}, held.secrets)
        return masked

    @staticmethod
    def row(session: DbSession, held: HeldStep) -> ResourceRow:
        return resource_rows.get_stack_resource(session, held.stack_id, held.resource_name)


def failure_reason(exc: Exception, name: str, secrets: tuple[str, ...]) -> str:
    """A failed resource's status reason, as Heat writes it."""
    message = exc.message if isinstance(exc, KilnError) else str(exc)
    kind = (exc.api_type if isinstance(exc, KilnError) else None) or type(exc).__name__
    return str(redact(reasons.resource_error(kind, name, message), secrets))
