"""Runs one step: prepare the resource, call its handler, poll, record state and events.

Handlers run outside any transaction (a slow backend call must not hold SQLite's single
write lock), and every write after them is guarded by the step lease: a worker that lost
its lease discards its result instead of overwriting another worker's. A step that fails
on an unexpected error (a Kiln bug, not the plugin's failure) is given back to be tried
again a moment later, alone, and after a few tries it fails (``poison``).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from engine import budget
from engine.db import leases, queries, steps
from engine.db.leases import LeaseLost
from engine.db.models import Operation, Stack, Step
from engine.db.models import Resource as ResourceRow
from engine.db.queries import request_id_of
from engine.db.session import Database
from engine.errors import DatabaseUnavailable, InternalError, KilnError
from engine.ir.build import properties_for_runtime
from engine.ir.model import ResolvedStack
from engine.ir.update_decision import NONE, REPLACE, RESTORE, Stored, decide
from engine.ir.update_decision import prop_diff as diff_of
from engine.resources.base import (
    ADOPT,
    CHECK,
    CREATE,
    DELETE,
    RESUME,
    SUSPEND,
    UPDATE,
    Resource,
    action_methods,
)
from engine.resources.drift import Drift, drift_of, drift_reason
from engine.resources.registry import ResourceTypeRegistry
from engine.template.parameters import redact
from engine.vocabulary import StepState
from engine.worker.poison import PoisonRule
from engine.worker.state import OperationIrs, StoredResource, StoredScope, stack_secrets
from engine.worker.step_runtime import Clock, Placements, StepRuntime

LOG = logging.getLogger(__name__)
FIRST_POLL_SECONDS = 0.05
# The furthest ahead a type's ``next_check_in`` may put its next look. A tenant's number
# (a Delay's min_wait of 10**12, an infinite wait) must not become a time no datetime or
# float holds, and nothing is lost by looking earlier: the operation's deadline ends the
# step (its lease is then lost and the worker drops it), and a longer wait costs only a
# look an hour.
MAX_HINTED_POLL_SECONDS = 3600.0
PER_OPERATION_CACHE_SIZE = 128
T = TypeVar("T")
IN_PROGRESS, COMPLETE, FAILED = "IN_PROGRESS", "COMPLETE", "FAILED"
# Actions whose resource instances are built from the IR (properties evaluated now);
# the others act on what is stored, so they work when a type has been uninstalled.
NEEDS_PROPERTIES = (CREATE, ADOPT, UPDATE)
CLEANUP, ROLLBACK = "CLEANUP", "ROLLBACK"  # a step kind; an operation action


class ResourceMissing(Exception):  # noqa: N818 -- the reason tenants read
    """The resource to act on does not exist (never created, or absent from adopt data)."""


class NotSupported(Exception):  # noqa: N818 -- the reason tenants read
    """An update tried to point a resource at another external thing."""


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
    needs_start: bool = True
    next_poll_at: float = 0.0
    interval: float = FIRST_POLL_SECONDS
    saved_data: dict[str, Any] = dataclasses.field(default_factory=dict)
    adopt: Mapping[str, Any] | None = None  # this resource's abandon data, for ADOPT
    prop_diff: Mapping[str, Any] | None = None  # the changed properties, for UPDATE
    # CLEANUP / RESTORE: the step deletes a physical resource a replacement left (see
    # StepRunner._prepare_replaced); "" for a step on the resource itself.
    kind: str = ""
    # Started, and the token (with ``started``) not yet saved.
    unsaved: bool = False
    # Its action finished: the step is to be closed.
    finished: bool = False
    # Why the step fails before it starts (found while preparing it).
    failure: Exception | None = None
    # An update with ``converge``: observe the backend first and put drift back.
    converge: bool = False
    # What observing the backend found (a check, a converging update); None: not looked.
    drift: Drift | None = None
    # A converging update that found nothing to change: finished without its handler.
    nothing_to_do: bool = False


class StepRunner:
    def __init__(self, db: Database, registry: ResourceTypeRegistry, owner: str,
                 clock: Clock, max_poll_seconds: float, *, api_url: str,
                 irs: OperationIrs | None = None,
                 placements: Placements | None = None,
                 rule: PoisonRule | None = None) -> None:
        self._db = db
        self._rule = rule or PoisonRule()
        self._placements = placements
        self._registry = registry
        self._api_url = api_url
        self._owner = owner
        self._clock = clock
        self._max_poll = max_poll_seconds
        self._irs = irs or OperationIrs(registry)
        # The steps of the round being prepared that had nothing to do.
        self._quiet: list[Step] = []
        self._secrets: dict[str, tuple[str, ...]] = {}
        self._adopt: dict[str, Mapping[str, Any]] = {}
        self._actions: dict[str, str] = {}
        self._converging: dict[str, bool] = {}

    # --- entry points used by the loop ---------------------------------------------------
    #
    # Steps go through in batches: one transaction prepares every claimed step, the
    # handlers run outside any transaction, and one transaction closes every step that
    # finished and saves the progress of the others. A step whose lease was lost is left
    # out without undoing the rest of the batch; a batch that meets a bug is done again
    # step by step, so the bug counts against the step it is in only (``_unexpected``).

    def start_many(self, step_ids: Sequence[int]) -> list[HeldStep]:
        """Prepare claimed steps, start their actions and look once at each; the steps
        still waiting (the others are closed, failed or lost)."""
        started: list[HeldStep] = []
        for held in self._prepare_many(step_ids):
            try:
                if self._start(held):
                    started.append(held)
            except DatabaseUnavailable:
                raise
            except Exception as exc:  # noqa: BLE001 -- a bug in this step's start
                self._unexpected(held.step_id, exc, held)
        return self.poll_many(started)

    def _start(self, held: HeldStep) -> bool:
        """Observe and start one prepared step; False if it failed (recorded)."""
        if held.needs_start:
            try:
                self._observe(held)
            except Exception as exc:  # noqa: BLE001 -- plugin code: any failure is state
                self._fail_quietly(held, exc)
                return False
        if held.needs_start and not held.nothing_to_do:
            start, _ = action_methods(held.instance, held.action, held.adopt,
                                      held.prop_diff)
            try:
                held.token = start()
            except Exception as exc:  # noqa: BLE001 -- plugin code: any failure is state
                self._fail_quietly(held, exc)
                return False
            held.needs_start, held.unsaved = False, True
        return True

    def poll_many(self, helds: Sequence[HeldStep]) -> list[HeldStep]:
        """Ask each step whether its action finished; close those that did and save the
        progress of the others. The steps still waiting."""
        done: list[HeldStep] = []
        waiting: list[HeldStep] = []
        failed: list[tuple[HeldStep, Exception]] = []
        bugs: list[tuple[HeldStep, Exception]] = []
        for held in helds:
            try:
                _, check = action_methods(held.instance, held.action, held.adopt)
            except Exception as exc:  # noqa: BLE001 -- a bug in this step only
                bugs.append((held, exc))
                continue
            try:
                finished = held.nothing_to_do or check(held.token)
            except Exception as exc:  # noqa: BLE001 -- plugin code: any failure is state
                failed.append((held, exc))
                continue
            if finished:
                held.finished = True
                done.append(held)
                continue
            now = self._clock().timestamp()
            held.interval = FIRST_POLL_SECONDS if held.unsaved else min(
                held.interval * 2, self._max_poll)
            hint = _next_check_in(held)
            held.next_poll_at = now + (held.interval if hint is None else hint)
            waiting.append(held)
        to_save = [h for h in waiting if h.unsaved or dict(h.instance.data) != h.saved_data]
        lost: set[int] = set()
        if done or to_save:
            lost = self._in_one_or_each(done + to_save, functools.partial(
                self._close_round, now=self._clock()))
        for held, error in failed:
            self._fail_quietly(held, error)
        for held, error in bugs:
            self._unexpected(held.step_id, error, held)
        return [h for h in waiting if h.step_id not in lost]

    def _observe(self, held: HeldStep) -> None:
        """Read the backend before a check or a converging update (outside any
        transaction): a check records the drift; a converging update adds the drifted
        properties to what it changes, or has nothing to do."""
        instance = held.instance
        checking = held.action == CHECK and instance.observes()
        if not (checking or held.converge):
            return
        observed = instance.observe()
        if observed is None:
            raise ResourceMissing(f"The physical resource {instance.physical_id} no longer "
                                  "exists")
        drift = drift_of(instance.properties, observed)
        held.drift = drift
        if checking:
            return
        if drift and instance.needs_replacement(drift):
            raise NotSupported(f"Drift in {', '.join(sorted(drift))} cannot be put back in "
                               "place; change the template to replace the resource")
        held.prop_diff = {**{name: instance.properties[name] for name in drift},
                          **(held.prop_diff or {})}
        held.drift = {}  # the update puts it back
        held.nothing_to_do = not held.prop_diff

    def _close_round(self, session: Any, helds: Sequence[HeldStep], *,
                     now: datetime.datetime) -> set[int]:
        """Close the finished steps among ``helds`` and save the others' progress; the
        ids whose lease was lost (nothing was written for them)."""
        finished = [h for h in helds if h.finished]
        lost = self._complete_plain(session, [h for h in finished if not h.kind], now)
        for held in helds:
            try:
                if not held.finished:
                    self._save(session, held)
                elif held.kind:
                    self._complete_in(session, held, now)
            except LeaseLost:  # raised before anything of this step was written
                lost.add(held.step_id)
        return lost

    def _in_one_or_each(self, helds: Sequence[HeldStep],
                        write: Callable[[Any, Sequence[HeldStep]], set[int]]) -> set[int]:
        """``write`` the steps in one transaction; if that fails on a bug, write each in
        a transaction of its own, so one bad step is the only one given back. The ids
        left out (lease lost, or the bug)."""
        try:
            with self._db.transaction() as session:
                return write(session, helds)
        except DatabaseUnavailable:
            raise  # the steps wait for their leases
        except Exception as exc:  # noqa: BLE001 -- a bug: find the step it is in
            if len(helds) == 1:
                self._unexpected(helds[0].step_id, exc, helds[0])
                return {helds[0].step_id}
            LOG.exception("a round of %d steps failed to be written; one by one", len(helds))
        lost: set[int] = set()
        for held in helds:
            try:
                with self._db.transaction() as session:
                    lost |= write(session, [held])
            except DatabaseUnavailable:
                raise
            except Exception as exc:  # noqa: BLE001 -- a bug in this step only
                self._unexpected(held.step_id, exc, held)
                lost.add(held.step_id)
        return lost

    def _fail_quietly(self, held: HeldStep, exc: Exception) -> None:
        """Record a plugin's failure; writing it may meet a bug of its own (data the
        plugin left that cannot be stored), which counts as one."""
        try:
            self._fail(held, exc)
        except LeaseLost:
            pass
        except DatabaseUnavailable:
            raise
        except Exception as bug:  # noqa: BLE001 -- a bug in this step only
            self._unexpected(held.step_id, bug, held)

    def _unexpected(self, step_id: int, exc: Exception, held: HeldStep | None = None
                    ) -> None:
        """Count a try of a step that failed on an unexpected error: give the step back
        to be tried again after a wait (the claim after the last try fails it, in
        ``_prepare_in``). Should failing it be what raised, close the step alone with
        the fewest writes, its resource row left as it was but for the physical id
        ``held`` recorded (``_keep_physical_id``)."""
        now = self._clock()
        try:
            with self._db.transaction() as session:
                # Locked: a worker that claimed it meanwhile (our lease lapsed) keeps it.
                step = session.get(Step, step_id, with_for_update=True)
                if step is None or step.lease_owner != self._owner:
                    LOG.error("step %s failed unexpectedly, and is no longer ours", step_id,
                              exc_info=exc)
                    return
                # Its progress was saved under this claim: this try counts all the same.
                step.failures = max(step.failures, 1)
                request_id = request_id_of(session, step.operation_id)
                # The reason names "step N of operation X": the log says it so too.
                LOG.error("step %s of operation %s (%s %s of stack %s, request %s) failed "
                          "unexpectedly, try %d of %d", step.id, step.operation_id,
                          step.action, step.resource_name, step.stack_id, request_id,
                          step.failures, self._rule.attempts, exc_info=exc)
                if held is not None:
                    self._keep_physical_id(session, held)
                if self._rule.spent(step.failures):
                    action = DELETE if step.action == CLEANUP else step.action
                    reason = failure_reason(self._internal_error(step, request_id),
                                            step.resource_name, ())
                    steps.fail_step(session, step, self._owner, now,
                                    f"Resource {action} failed: {reason}")
                else:
                    leases.back_off_step(session, step, self._owner,
                                         now + self._rule.backoff(step.failures))
        except DatabaseUnavailable:
            raise
        except Exception:  # noqa: BLE001 -- the loop must go on; the lease decides
            LOG.exception("step %s: counting its failure failed too; left to its lease",
                          step_id)

    def _keep_physical_id(self, session: Any, held: HeldStep) -> None:
        """Store the physical id the handler recorded, whose write (with the step's token
        or close) is what failed: the next try then goes on with the thing its handler
        made instead of making another. Only that scalar, in a savepoint, so a value
        that cannot be stored does not fail the counting too."""
        physical_id = held.instance.physical_id
        if held.kind == CLEANUP or physical_id is None:
            return  # a cleanup's physical id is the replaced one's, stored already
        try:
            with session.begin_nested():
                self._row(session, held).physical_id = physical_id
        except Exception:  # noqa: BLE001 -- a bad id: the try is counted all the same
            LOG.exception("step %s: its physical id could not be stored", held.step_id)

    def _give_up(self, session: Any, step: Step, stack: Stack, row: ResourceRow,
                 now: datetime.datetime) -> None:
        """Fail a step whose tries kept failing on a bug (or killing their workers),
        without preparing or running it again: its resource ``<ACTION>_FAILED``, its
        waiting siblings cancelled, as for any failed step."""
        request_id = request_id_of(session, step.operation_id)
        LOG.error("step %s of operation %s (request %s): given up after %d tries", step.id,
                  step.operation_id, request_id, self._rule.attempts)
        self._record_failure(session, step, stack, row,
                             self._internal_error(step, request_id), (), now,
                             set_state=step.action != CLEANUP)

    def _internal_error(self, step: Step, request_id: str) -> InternalError:
        return self._rule.internal_error(
            f"step {step.id} of operation {step.operation_id}", request_id)

    def _prepare_many(self, step_ids: Sequence[int]) -> list[HeldStep]:
        now = self._clock()
        try:
            with self._db.transaction() as session:
                prepared = self._prepare_round(session, step_ids, now)
        except DatabaseUnavailable:
            raise  # the steps wait for their leases
        except Exception as exc:  # noqa: BLE001 -- a bug: find the step it is in
            prepared = []
            if len(step_ids) == 1:
                self._unexpected(step_ids[0], exc)
                step_ids = []
            else:
                LOG.exception("preparing %d steps failed; one by one", len(step_ids))
            for step_id in step_ids:
                try:
                    with self._db.transaction() as session:
                        prepared += self._prepare_round(session, [step_id], now)
                except DatabaseUnavailable:
                    raise
                except Exception as one:  # noqa: BLE001 -- a bug in this step only
                    self._unexpected(step_id, one)
        for held in prepared:
            if held.failure is not None:
                self._fail_quietly(held, held.failure)
        return [held for held in prepared if held.failure is None]

    def _prepare_round(self, session: Any, step_ids: Sequence[int], now: datetime.datetime
                       ) -> list[HeldStep]:
        """Prepare steps in one transaction, their rows read together.

        Preparing evaluates properties, which may take up to the evaluation budget per
        resource, and the transaction holds SQLite's only write lock (and on PostgreSQL
        no heartbeat runs meanwhile): once the round has taken longer than one
        evaluation may, the steps not yet prepared are handed back uncounted, for the
        next round (this worker's or another's)."""
        begun = self._clock()
        claimed = steps.load_steps(session, step_ids)
        names: dict[str, list[str]] = {}
        for step in claimed:
            names.setdefault(step.stack_id, []).append(step.resource_name)
        stacks = {stack_id: queries.load_stack(session, stack_id) for stack_id in names}
        rows = {(row.stack_id, row.name): row for stack_id, wanted in names.items()
                for row in queries.list_resources_named(session, stack_id, wanted)}
        prepared: list[HeldStep] = []
        self._quiet = []
        try:
            ordered = sorted(claimed, key=lambda s: s.id)
            for index, step in enumerate(ordered):
                if index and self._round_too_long(begun):
                    self._give_back_rest(session, ordered[index:], len(ordered))
                    break
                try:
                    held = self._prepare_in(session, step, now, stacks[step.stack_id],
                                            rows[(step.stack_id, step.resource_name)])
                except LeaseLost:  # raised before anything of this step was written
                    continue
                if held is not None:
                    prepared.append(held)
            by_operation: dict[str, list[int]] = {}
            for step in self._quiet:
                by_operation.setdefault(step.operation_id, []).append(step.id)
            for operation_id, ids in by_operation.items():
                # A step whose lease was lost meanwhile stays open for its new holder.
                steps.complete_steps(session, operation_id, ids, self._owner, now)
        finally:
            self._quiet = []
        return prepared

    def _round_too_long(self, begun: datetime.datetime) -> bool:
        # NOTE: a stopgap that bounds the write transaction to about two evaluations;
        # evaluating outside it (read, evaluate, a short lease-guarded write) is the
        # fix, left for the worker's restructuring (specs/scale-out.rst).
        spent = (self._clock() - begun).total_seconds()
        return spent > budget.limits().evaluation_timeout_seconds

    def _give_back_rest(self, session: Any, rest: Sequence[Step], claimed: int) -> None:
        given = leases.give_back_steps(session, self._owner, [step.id for step in rest],
                                       self._clock())
        LOG.info("a round of %d steps took longer than an evaluation may: %d handed back "
                 "for the next round", claimed, len(given))

    # --- the three writes -----------------------------------------------------------------

    def _prepare_in(self, session: Any, step: Step, now: datetime.datetime, stack: Stack,
                    row: ResourceRow) -> HeldStep | None:
        if step.lease_owner != self._owner or step.state != StepState.RUNNING:
            return None
        if self._rule.spent(step.failures):
            self._give_up(session, step, stack, row, now)
            return None
        if step.action == CLEANUP:
            return self._prepare_replaced(session, step, stack, row, now)
        never_created = row.properties is None and row.physical_id is None
        retained = step.action == DELETE and row.deletion_policy == "Retain"
        if (step.action in (DELETE, SUSPEND, RESUME) and never_created) or retained:
            # Nothing in the backend to act on, or the template says to leave it
            # there (deletion_policy: Retain). A delete still ends the resource.
            self._close_quietly(step)
            if step.action == DELETE:
                self._set_state(session, stack, row, DELETE, COMPLETE,
                                "Retained" if retained else "state changed", now)
            return None
        if step.action == CHECK and never_created:
            self._set_state(session, stack, row, CHECK, IN_PROGRESS, "state changed", now)
            self._record_failure(session, step, stack, row, ResourceMissing(
                "the resource was never created"), (), now)
            return None
        try:
            # A delete needs no IR: one uninstalled type must not fail every other
            # resource's delete along with its own.
            ir = (self._ir(stack, step.operation_id) if step.action in NEEDS_PROPERTIES
                  else None)
            node = ir.resources[row.name] if ir is not None else None
            cls = self._registry.get(node.type_name if node is not None else row.type)
        except KilnError as exc:
            # A type uninstalled since the stack was made: fail this step, keep working.
            if not step.started:
                self._set_state(session, stack, row, step.action, IN_PROGRESS,
                                "state changed", now)
            self._record_failure(session, step, stack, row, exc, (), now)
            return None
        secrets = self._per_operation(self._secrets, step.operation_id,
                                      lambda: stack_secrets(stack))
        rows = {row.name: row}
        properties: Mapping[str, Any] = row.properties or {}
        failure: Exception | None = None
        if ir is not None and node is not None:
            # Only what this resource references, so a step costs O(its references),
            # not O(size of the stack).
            for other in queries.list_resources_named(session, stack.id,
                                                      sorted(node.requires)):
                rows[other.name] = other
            scope = StoredScope(ir, {n: StoredResource.of(r) for n, r in rows.items()},
                                self._registry, self._runtime_factory(stack, rows))
            try:
                properties = properties_for_runtime(node, cls, scope)
            except Exception as exc:  # noqa: BLE001 -- evaluation errors are state
                failure = exc
        action, prop_diff, converge = step.action, None, False
        external = node.external_id if node is not None else None
        if external is not None and step.action in (CREATE, UPDATE) and failure is None:
            if step.action == UPDATE and row.physical_id not in (None, external):
                failure = NotSupported(
                    f"Update to property external_id of {row.name} ({row.type}) is "
                    "not supported.")
            elif step.action == UPDATE and row.physical_id == external:
                # An external resource is Heat's to look at, never to change.
                self._close_quietly(step)
                return None
        if step.action == UPDATE and failure is None and external is None:
            runtime = self._runtime_factory(stack, rows)(row.name)
            decided = self._decide(session, step, row, cls(row.name, properties, runtime),
                                   node.type_name if node is not None else row.type)
            converge = cls.observes() and self._converge(session, step.operation_id)
            if decided == NONE and not converge:
                self._close_quietly(step)
                return None
            if decided == RESTORE:
                return self._prepare_replaced(session, step, stack, row, now)
            action = CREATE if decided in (CREATE, REPLACE) else UPDATE
            prop_diff = diff_of(row.properties or {}, properties)
            converge = converge and action == UPDATE
        if external is not None and action in (CREATE, UPDATE) and failure is None:
            action = ADOPT  # take over the named thing instead of creating one
        if node is not None and failure is None:
            row.type, row.properties = node.type_name, properties
            # An external resource stays when the stack goes (Heat's rule).
            row.deletion_policy = "Retain" if external else node.deletion_policy
        if not step.started:
            self._set_state(session, stack, row, action, IN_PROGRESS,
                            "state changed", now)
        instance = cls(row.name, properties, self._runtime_factory(stack, rows)(row.name),
                       physical_id=row.physical_id, data=dict(row.data or {}),
                       update_policy=node.update_policy if node is not None else None)
        adopt = (self._adopt_data(session, step.operation_id).get(row.name)
                 if step.action == ADOPT else None)
        if action == ADOPT and external is not None:
            adopt = {"resource_id": external, "resource_data": {}}
        if step.action == ADOPT and adopt is None and failure is None:
            failure = ResourceMissing("the adopt data has no entry for this resource")
        held = HeldStep(step.id, step.operation_id, stack.id, row.name, row.type,
                        action, instance, secrets, token=step.token,
                        needs_start=not step.started, saved_data=dict(row.data or {}),
                        adopt=adopt, prop_diff=prop_diff,
                        converge=converge)
        if failure is None and action in (CREATE, ADOPT, UPDATE) and held.needs_start:
            try:
                instance.validate()
            except Exception as exc:  # noqa: BLE001 -- plugin code: any failure is state
                failure = exc
        # Recorded by the caller once this transaction has ended (_fail writes its own).
        held.failure = failure
        return held

    def _decide(self, session: Any, step: Step, row: ResourceRow, probe: Resource,
                new_type: str) -> str:
        """An update step's decision, made once and stored with the step. A replacement
        moves the current physical resource aside (``row.replaced``) in the same
        transaction, so the new one is created into a clean row."""
        if step.resource_action is not None:
            return step.resource_action
        rolling_back = self._operation_action(session, step.operation_id) == ROLLBACK
        decided = decide(
            Stored(row.type, row.properties, row.physical_id, row.action, row.status,
                   row.replaced),
            new_type, probe.properties, probe.needs_replacement, rolling_back)
        if decided == REPLACE:
            if row.replaced is not None:
                # An earlier replacement never cleaned up: that one goes first, with
                # this step's cleanup, and the current one is kept as the replaced.
                LOG.info("resource %s replaced again before its cleanup", row.name)
            row.replaced = {"type": row.type, "physical_id": row.physical_id,
                            "properties": row.properties, "data": dict(row.data or {}),
                            "generation": row.generation}
            row.generation += 1
            row.physical_id, row.data = None, {}
        step.resource_action = decided
        return decided

    def _prepare_replaced(self, session: Any, step: Step, stack: Stack, row: ResourceRow,
                          now: datetime.datetime) -> HeldStep | None:
        """Delete one of the two physical resources a replacement left: the replaced one
        (CLEANUP, after its users moved on) or the replacement (a rollback's RESTORE,
        which then takes the replaced one back)."""
        restoring = step.action == UPDATE
        replaced = row.replaced
        if replaced is None:
            self._close_quietly(step)
            return None
        secrets = self._per_operation(self._secrets, step.operation_id,
                                      lambda: stack_secrets(stack))
        try:
            if restoring:
                cls = self._registry.get(row.type)
                instance = cls(row.name, row.properties or {},
                               self._runtime_factory(stack, {row.name: row})(row.name),
                               physical_id=row.physical_id, data=dict(row.data or {}))
            else:
                cls = self._registry.get(replaced["type"])
                runtime = StepRuntime(self._db, self._clock, stack, row.id, row.name,
                                      replaced.get("generation", 0), replaced=True,
                                      registry=self._registry, api_url=self._api_url)
                instance = cls(row.name, replaced.get("properties") or {}, runtime,
                               physical_id=replaced.get("physical_id"),
                               data=dict(replaced.get("data") or {}))
        except KilnError as exc:
            self._record_failure(session, step, stack, row, exc, (), now,
                                 set_state=restoring)
            return None
        if restoring and not step.started:
            self._set_state(session, stack, row, DELETE, IN_PROGRESS, "rolling back", now)
        return HeldStep(step.id, step.operation_id, stack.id, row.name,
                        row.type if restoring else replaced["type"],
                        DELETE, instance, secrets, token=step.token,
                        needs_start=not step.started, saved_data=dict(instance.data),
                        kind=RESTORE if restoring else CLEANUP)

    def _converge(self, session: Any, operation_id: str) -> bool:
        """Whether the update asked to observe reality first (Heat's ``converge``)."""
        def read() -> bool:
            operation = session.get(Operation, operation_id)
            payload = operation.payload if operation is not None else None
            return bool((payload or {}).get("converge"))

        return self._per_operation(self._converging, operation_id, read)

    def _operation_action(self, session: Any, operation_id: str) -> str:
        def read() -> str:
            operation = session.get(Operation, operation_id)
            return operation.action if operation is not None else ""

        return self._per_operation(self._actions, operation_id, read)

    def _close_quietly(self, step: Step) -> None:
        """Close a step that had nothing to do: no event, the resource untouched. The
        round closes all of them together at its end (``_prepare_round``)."""
        self._quiet.append(step)

    def _adopt_data(self, session: Any, operation_id: str) -> Mapping[str, Any]:
        """The abandon data's resources, read once per operation."""
        def read() -> Mapping[str, Any]:
            operation = session.get(Operation, operation_id)
            payload = operation.payload if operation is not None else None
            resources = (payload or {}).get("resources")
            return resources if isinstance(resources, Mapping) else {}

        return self._per_operation(self._adopt, operation_id, read)

    def _ir(self, stack: Stack, operation_id: str) -> ResolvedStack:
        return self._irs.of(operation_id, stack)

    @staticmethod
    def _per_operation(cache: dict[str, T], operation_id: str, make: Callable[[], T]) -> T:
        if operation_id not in cache:
            if len(cache) >= PER_OPERATION_CACHE_SIZE:
                cache.clear()
            cache[operation_id] = make()
        return cache[operation_id]

    def _save(self, session: Any, held: HeldStep) -> None:
        next_poll = datetime.datetime.fromtimestamp(held.next_poll_at, datetime.UTC)
        if not steps.save_progress(session, held.step_id, self._owner, held.token, next_poll,
                                   started=held.unsaved):
            raise LeaseLost()
        row = self._row(session, held)
        if held.kind == CLEANUP:
            row.replaced = {**(row.replaced or {}), "data": dict(held.instance.data)}
        else:
            row.data = dict(held.instance.data)
            row.physical_id = held.instance.physical_id
            if held.drift is not None:
                row.drift = self._masked(held)
        held.saved_data = dict(held.instance.data)
        held.unsaved = False

    def _complete_plain(self, session: Any, done: Sequence[HeldStep],
                        now: datetime.datetime) -> set[int]:
        """Close finished steps on resources themselves (no replacement to clean up) a
        few statements per operation, whatever their number; the ids whose lease was
        lost."""
        lost: set[int] = set()
        by_operation: dict[str, list[HeldStep]] = {}
        for held in done:
            by_operation.setdefault(held.operation_id, []).append(held)
        for operation_id, group in by_operation.items():
            closed = steps.complete_steps(session, operation_id,
                                          [h.step_id for h in group], self._owner, now)
            lost |= {h.step_id for h in group} - closed
            stack = queries.load_stack(session, group[0].stack_id)
            rows = {row.name: row for row in queries.list_resources_named(
                session, stack.id, [h.resource_name for h in group if h.step_id in closed])}
            for held in group:
                if held.step_id in closed:
                    row = rows[held.resource_name]
                    row.data = dict(held.instance.data)
                    row.physical_id = held.instance.physical_id
                    self._set_state(session, stack, row, held.action, COMPLETE,
                                    self._record_drift(row, held), now)
        return lost

    def _complete_in(self, session: Any, held: HeldStep, now: datetime.datetime) -> None:
        step = session.get(Step, held.step_id)
        if step is None or not steps.complete_step(session, step, self._owner, now):
            raise LeaseLost()
        row = self._row(session, held)
        stack = queries.load_stack(session, held.stack_id)
        if held.kind == CLEANUP:
            # The replaced resource is gone; the row is the replacement's, untouched.
            queries.add_event(session, stack_id=stack.id, resource_name=row.name,
                              physical_resource_id=held.instance.physical_id or "",
                              resource_type=held.resource_type, action=DELETE,
                              status=COMPLETE, reason="replaced resource deleted", now=now)
            row.replaced = None
            return
        if held.kind == RESTORE:
            self._set_state(session, stack, row, DELETE, COMPLETE, "state changed", now)
            replaced = row.replaced or {}
            row.type, row.physical_id = replaced["type"], replaced.get("physical_id")
            row.properties, row.data = replaced.get("properties"), replaced.get("data", {})
            row.generation, row.replaced = replaced.get("generation", 0), None
            self._set_state(session, stack, row, UPDATE, COMPLETE,
                            "restored the resource the update replaced", now)
            return
        row.data = dict(held.instance.data)
        row.physical_id = held.instance.physical_id
        self._set_state(session, stack, row, held.action, COMPLETE,
                        self._record_drift(row, held), now)

    def _fail(self, held: HeldStep, exc: Exception) -> None:
        now = self._clock()
        with self._db.transaction() as session:
            step = session.get(Step, held.step_id)
            if step is None:
                raise LeaseLost()
            stack = queries.load_stack(session, held.stack_id)
            row = self._row(session, held)
            if held.kind == CLEANUP:
                # The replaced resource's own state lives in row.replaced, not the row.
                row.replaced = {**(row.replaced or {}), "data": dict(held.instance.data)}
            else:
                # What the handler made before it failed is kept, so a delete finds it.
                row.data = dict(held.instance.data)
                row.physical_id = held.instance.physical_id
            self._record_failure(session, step, stack, row, exc, held.secrets, now,
                                 action=held.action, set_state=held.kind != CLEANUP)

    def _record_failure(self, session: Any, step: Step, stack: Stack, row: ResourceRow,
                        exc: Exception, secrets: tuple[str, ...],
                        now: datetime.datetime, *, action: str | None = None,
                        set_state: bool = True) -> None:
        action = action or (DELETE if step.action == CLEANUP else step.action)
        reason = failure_reason(exc, row.name, secrets)
        if not isinstance(exc, KilnError):
            LOG.info("resource %s of stack %s failed %s: %s", row.name, stack.id, action,
                     type(exc).__name__)
        if not steps.fail_step(session, step, self._owner, now,
                               f"Resource {action} failed: {reason}"):
            raise LeaseLost()
        if set_state:
            self._set_state(session, stack, row, action, FAILED, reason, now)
        else:
            queries.add_event(session, stack_id=stack.id, resource_name=row.name,
                              physical_resource_id=(row.replaced or {}).get("physical_id")
                              or "", resource_type=row.type, action=action, status=FAILED,
                              reason=reason, now=now)

    # --- small pieces ---------------------------------------------------------------------

    def _record_drift(self, row: ResourceRow, held: HeldStep) -> str:
        """Store what a completed action learnt of the resource's drift; the reason of
        its COMPLETE event. A create or an update without observing leaves the resource
        as its template says, so any drift seen before is gone."""
        if held.drift is not None:
            row.drift = self._masked(held)
        elif held.action in (CREATE, UPDATE, ADOPT):
            row.drift = None
        return drift_reason(held.drift) if held.drift else "state changed"

    @staticmethod
    def _masked(held: HeldStep) -> Drift:
        masked: Drift = redact(held.drift or {}, held.secrets)
        return masked

    def _row(self, session: Any, held: HeldStep) -> ResourceRow:
        return queries.get_stack_resource(session, held.stack_id, held.resource_name)

    def _runtime_factory(self, stack: Stack, rows: Mapping[str, ResourceRow]
                         ) -> Callable[[str], StepRuntime]:
        def runtime(name: str) -> StepRuntime:
            return StepRuntime(self._db, self._clock, stack, rows[name].id, name,
                               rows[name].generation, registry=self._registry,
                               api_url=self._api_url, placements=self._placements)

        return runtime

    @staticmethod
    def _set_state(session: Any, stack: Stack, row: ResourceRow, action: str, status: str,
                   reason: str, now: datetime.datetime) -> None:
        row.action, row.status, row.status_reason, row.updated_at = action, status, reason, now
        queries.add_event(session, stack_id=stack.id, resource_name=row.name,
                          physical_resource_id=row.physical_id or "", resource_type=row.type,
                          action=action, status=status, reason=reason, now=now)


def failure_reason(exc: Exception, name: str, secrets: tuple[str, ...]) -> str:
    """A failed resource's status reason, as Heat writes it."""
    message = exc.message if isinstance(exc, KilnError) else str(exc)
    return str(redact(f"{type(exc).__name__}: resources.{name}: {message}", secrets))


def _next_check_in(held: HeldStep) -> float | None:
    """The type's own word on when to look again, if it has a sensible one."""
    try:
        hint = held.instance.next_check_in(held.token)
    except Exception:  # noqa: BLE001 -- plugin code: a broken hint only loses the hint
        return None
    if isinstance(hint, bool) or not isinstance(hint, (int, float)) or hint != hint:
        return None
    # Compared before any conversion: an int past float's range is far, not an error.
    return 0.0 if hint <= 0 else float(min(hint, MAX_HINTED_POLL_SECONDS))
