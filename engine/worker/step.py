"""Runs claimed steps in batches: prepares them (what each does is decided by
``step_decision``), calls their handlers, polls them, and writes their progress, close or
failure (``step_writes``) for many steps at a time.

Handlers run outside any transaction (a slow backend call must not hold SQLite's single
write lock), and every write after them is guarded by the step's claim: a worker whose
step was taken discards its result instead of overwriting another worker's. No handler
is started or looked at once the worker may not act on its claims (``live``,
``engine/worker/liveness.py``): the steps left wait, as they are, for the next look. A
step that fails on an unexpected error (a Kiln bug, not the plugin's failure) is given
back to be tried again a moment later, alone, and after a few tries it fails
(``poison``).
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import cachetools

from engine import budget, logs, reasons
from engine.clock import Clock
from engine.db import leases, resource_rows, stack_rows, steps
from engine.db.leases import LeaseLost
from engine.db.models import Resource as ResourceRow
from engine.db.models import Stack, Step
from engine.db.session import Database, DbSession
from engine.db.stack_rows import OperationLabel, request_id_of
from engine.db.transitions import fail_step, set_resource_state
from engine.db.wakeup import work_written
from engine.errors import DatabaseUnavailable, InternalError
from engine.ir.stored import StoredIrs
from engine.resources.base import action_methods
from engine.resources.registry import ResourceTypeRegistry
from engine.vocabulary import Action, Status, StepState
from engine.worker.breakpoints import Breakpoints, Wait
from engine.worker.held_step import FIRST_POLL_SECONDS, HeldStep, StepPhase
from engine.worker.poison import PoisonRule
from engine.worker.step_decision import (
    Outcome,
    StepDecider,
    converging_diff,
    observed_drift,
    per_operation,
)
from engine.worker.step_runtime import Placements
from engine.worker.step_writes import APPLYING_PROPERTIES, StepWrites, failure_reason

LOG = logging.getLogger(__name__)
# The furthest ahead a type's ``next_check_in`` may put its next look. A tenant's number
# (a Delay's min_wait of 10**12, an infinite wait) must not become a time no datetime or
# float holds, and nothing is lost by looking earlier: the operation's deadline ends the
# step (its lease is then lost and the worker drops it), and a longer wait costs only a
# look an hour.
MAX_HINTED_POLL_SECONDS = 3600.0
# A held step's kind: "" on the resource itself, or a physical resource a replacement
# left (the row keeps the other one).
KIND = {Outcome.ACT: "", Outcome.CLEAN_UP: Action.CLEANUP, Outcome.RESTORE: Action.RESTORE}


@dataclasses.dataclass(frozen=True)
class Follow:
    """What a round may take on of the steps its closes make ready, which it claims and
    prepares in the transaction that made them ready (so a chain costs a transaction a
    link, not a claim, a prepare and a close): ``slots``, the steps the worker could
    hold were every step of the round to leave it; ``room``, as ``leases.claim_steps``."""

    slots: int
    room: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def less(self, held: int) -> Follow:
        return dataclasses.replace(self, slots=self.slots - held)


class Round(NamedTuple):
    """A round's writes: the ids left out (lease lost, or a bug), and the steps it
    claimed and prepared as its closes made them ready."""

    lost: set[int]
    followers: list[HeldStep]


class StepRunner:
    def __init__(self, db: Database, registry: ResourceTypeRegistry, owner: str,
                 clock: Clock, max_poll_seconds: float, *, api_url: str,
                 irs: StoredIrs,
                 placements: Placements | None = None,
                 rule: PoisonRule | None = None,
                 live: Callable[[], bool] | None = None) -> None:
        self._db = db
        # Whether the worker may act on its claims now (by default it always may).
        self._live = live or _always
        self._rule = rule or PoisonRule()
        self._owner = owner
        self._writes = StepWrites(owner, registry)
        self._clock = clock
        self._max_poll = max_poll_seconds
        self._decider = StepDecider(db, registry, clock, api_url=api_url,
                                    irs=irs,
                                    placements=placements)
        self._breakpoints = Breakpoints(owner, self._decider.operation_action)
        # Steps whose failure could not even be counted: the loop gives them back.
        self._abandoned: set[int] = set()
        self._label_cache: cachetools.LRUCache[str, OperationLabel] = per_operation()

    # --- entry points used by the loop ---------------------------------------------------
    #
    # Steps go through in batches: one transaction prepares every claimed step, the
    # handlers run outside any transaction, and one transaction closes every step that
    # finished and saves the progress of the others. A step whose lease was lost is left
    # out without undoing the rest of the batch; a batch that meets a bug is done again
    # step by step, so the bug counts against the step it is in only (``_unexpected``).

    def start_many(self, step_ids: Sequence[int], follow: Follow | None = None
                   ) -> list[HeldStep]:
        """Prepare claimed steps, then start their actions and look once at each
        (``poll_many``); the steps still waiting (the others are closed, failed or lost),
        those not started yet among them if the worker stopped acting meanwhile, and
        the steps ``follow`` let the round claim as they became ready."""
        return self.poll_many(self._prepare_many(step_ids, follow), follow)

    def _start(self, held: HeldStep) -> bool:
        """Observe and start one prepared step; False if it failed (recorded)."""
        if held.phase == StepPhase.PREPARED:
            try:
                self._observe(held)
            except Exception as exc:  # noqa: BLE001 -- plugin code: any failure is state
                self._fail_quietly(held, exc)
                return False
        if held.phase == StepPhase.PREPARED:
            start, _ = action_methods(held.instance, held.action, held.adopt,
                                      held.prop_diff)
            try:
                held.token = start()
            except Exception as exc:  # noqa: BLE001 -- plugin code: any failure is state
                self._fail_quietly(held, exc)
                return False
            held.phase = StepPhase.STARTED
            LOG.debug("resource %s: %s started", held.resource_name, held.kind or held.action)
        return True

    def poll_many(self, helds: Sequence[HeldStep], follow: Follow | None = None
                  ) -> list[HeldStep]:
        """Start each prepared step, and ask each whether its action finished; close
        those that did and save the progress of the others. The steps still waiting,
        and those the closes made ready that ``follow`` let the round claim and prepare
        (due now: the loop starts them in the same tick).

        Should the worker stop being allowed to act midway (its liveness not renewed in
        time), the steps not reached yet are neither started nor looked at: they are
        returned as they are, and what was done to the others is written as usual."""
        done: list[HeldStep] = []
        waiting: list[HeldStep] = []
        failed: list[tuple[HeldStep, Exception]] = []
        bugs: list[tuple[HeldStep, Exception]] = []
        deferred: list[HeldStep] = []
        for index, held in enumerate(helds):
            if not self._live():
                deferred = list(helds[index:])
                LOG.info("%d steps wait: this worker may not act on its claims until its "
                         "liveness is renewed", len(deferred))
                break
            with held.bound_logs():
                if held.phase == StepPhase.PREPARED:
                    try:
                        if not self._start(held):
                            continue  # failed, and recorded so
                    except DatabaseUnavailable:
                        raise
                    except Exception as exc:  # noqa: BLE001 -- a bug in this step's start
                        bugs.append((held, exc))
                        continue
                try:
                    _, check = action_methods(held.instance, held.action, held.adopt)
                except Exception as exc:  # noqa: BLE001 -- a bug in this step only
                    bugs.append((held, exc))
                    continue
                try:
                    finished = held.phase == StepPhase.NOTHING_TO_DO or check(held.token)
                except Exception as exc:  # noqa: BLE001 -- plugin code: any failure is state
                    failed.append((held, exc))
                    continue
                if finished:
                    held.phase = StepPhase.FINISHED
                    LOG.debug("resource %s: %s finished", held.resource_name,
                              held.kind or held.action)
                    done.append(held)
                    continue
                now = self._clock().timestamp()
                held.interval = FIRST_POLL_SECONDS if held.phase == StepPhase.STARTED \
                    else min(held.interval * 2, self._max_poll)
                hint = _next_check_in(held)
                held.next_poll_at = now + (held.interval if hint is None else hint)
                waiting.append(held)
        to_save = [h for h in waiting if h.phase == StepPhase.STARTED
                   or dict(h.instance.data) != h.saved_data]
        written = Round(set(), [])
        if done or to_save:
            written = self._in_one_or_each(
                done + to_save, None if follow is None
                else follow.less(len(waiting) + len(deferred)))
        for held, error in failed:
            with held.bound_logs():
                self._fail_quietly(held, error)
        for held, error in bugs:
            self._unexpected(held.step_id, error, held)
        return ([h for h in waiting if h.step_id not in written.lost] + deferred
                + self._without_failed(written.followers))

    def take_abandoned(self) -> set[int]:
        """The steps dropped since the last call because counting their failure failed:
        still claimed by this worker, held by nobody, for the loop to give back."""
        abandoned, self._abandoned = self._abandoned, set()
        return abandoned

    def _observe(self, held: HeldStep) -> None:
        """Read the backend before a check or a converging update (outside any
        transaction): a check records the drift; a converging update adds the drifted
        properties to what it changes, or has nothing to do."""
        checking = held.action == Action.CHECK and held.instance.observes()
        if not (checking or held.converge):
            return
        held.drift = observed_drift(held.instance)
        if checking:
            return
        held.prop_diff = converging_diff(held.instance, held.drift, held.prop_diff)
        held.drift = {}  # the update puts it back
        if not held.prop_diff:
            held.phase = StepPhase.NOTHING_TO_DO

    def _close_round(self, session: DbSession, helds: Sequence[HeldStep],
                     now: datetime.datetime, follow: Follow | None) -> Round:
        """Close the finished steps among ``helds`` and save the others' progress, then
        claim and prepare what the closes made ready, as far as ``follow`` lets. The ids
        whose lease was lost (nothing was written for them), and those followers."""
        finished = [h for h in helds if h.phase == StepPhase.FINISHED]
        at_hook = [h for h in finished if h.post_hook is not None]
        finished = [h for h in finished if h.post_hook is None]
        # Read first and kept for the round (the session holds its objects weakly): the
        # closes and the followers' preparing then find them without a query each.
        stacks = {stack_id: stack_rows.load_stack(session, stack_id)
                  for stack_id in {h.stack_id for h in helds}}
        closed = self._writes.complete_plain(session, [h for h in finished if not h.kind],
                                             now, wake=follow is None)
        lost = set(closed.lost)
        lost |= self._writes.save(session, [h for h in helds if h.phase != StepPhase.FINISHED])
        for held in (h for h in finished if h.kind):
            try:
                self._writes.complete_in(session, held, now)
            except LeaseLost:  # raised before anything of this step was written
                lost.add(held.step_id)
        for held in at_hook:
            try:
                self._pause_after(session, held, now)
            except LeaseLost:  # raised before anything of this step was written
                lost.add(held.step_id)
        followers = []
        if follow is not None and closed.ready:
            followers = self._follow(session, closed.ready, now, follow, self._clock(),
                                     stacks)
        return Round(lost, followers)

    def _pause_after(self, session: DbSession, held: HeldStep, now: datetime.datetime
                     ) -> None:
        """A step whose action is done on a resource with a post hook: the resource's
        COMPLETE state is written now, and the step parked at the hook instead of
        closed (its dependents wait for the hook to be cleared, as in Heat)."""
        assert held.post_hook is not None
        stack = stack_rows.load_stack(session, held.stack_id)
        row = self._writes.row(session, held)
        self._breakpoints.pause_done(
            session, held.operation_id, held.step_id, stack, row, held.post_hook, now,
            lambda: self._writes.finish_resource(session, stack, row, held, now))

    def _in_one_or_each(self, helds: Sequence[HeldStep], follow: Follow | None) -> Round:
        """Write the round in one transaction; if that fails on a bug, write each step
        in a transaction of its own (following nothing), so one bad step is the only
        one given back."""
        now = self._clock()
        try:
            with self._db.transaction() as session:
                return self._close_round(session, helds, now, follow)
        except DatabaseUnavailable:
            raise  # the steps wait for their leases
        except Exception as exc:  # noqa: BLE001 -- a bug: find the step it is in
            if len(helds) == 1:
                self._unexpected(helds[0].step_id, exc, helds[0])
                return Round({helds[0].step_id}, [])
            LOG.exception("a round of %d steps failed to be written; one by one", len(helds))
        lost: set[int] = set()
        for held in helds:
            try:
                with self._db.transaction() as session:
                    lost |= self._close_round(session, [held], now, None).lost
            except DatabaseUnavailable:
                raise
            except Exception as exc:  # noqa: BLE001 -- a bug in this step only
                self._unexpected(held.step_id, exc, held)
                lost.add(held.step_id)
        return Round(lost, [])

    def _follow(self, session: DbSession, ready: set[int], now: datetime.datetime,
                follow: Follow, begun: datetime.datetime,
                stacks: Mapping[str, Stack] | None = None) -> list[HeldStep]:
        """Claim and prepare the steps ``ready`` (made ready in this transaction), and
        those their quiet closes make ready in turn, as far as ``follow`` lets: the
        prepared ones, to start once this commits. In a savepoint: a bug in preparing
        one of them undoes only this, and leaves them READY for the next claim, whose
        preparing counts it against the step it is in. The workers are woken for the
        steps left READY."""
        prepared: list[HeldStep] = []
        first, left = set(ready), set()
        room = dict(follow.room)
        # What the round wrote so far is flushed before the savepoint: a write of it
        # that fails is the round's bug, for the caller to find, not this one's.
        session.flush()
        try:
            with session.begin_nested():
                while ready and not self._round_too_long(begun):
                    claimed = leases.claim_ready(session, self._owner, now, ready,
                                                 follow.slots - len(prepared), room)
                    left |= ready - {step.id for step in claimed}
                    made, ready = self._prepare_batch(session, claimed, now, begun,
                                                      wake=False, stacks=stacks)
                    prepared += made
                left |= ready
        except DatabaseUnavailable:
            raise
        except Exception:  # noqa: BLE001 -- a bug: counted where the next claim meets it
            LOG.exception("preparing the %d steps a round made ready failed; they wait "
                          "for the next claim", len(first))
            prepared, left = [], first
        if left:
            work_written(session)
        return prepared

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
        if held is not None:
            with held.bound_logs():
                self._record_unexpected(step_id, exc, held)
        else:
            self._record_unexpected(step_id, exc, None)

    def _record_unexpected(self, step_id: int, exc: Exception, held: HeldStep | None
                          ) -> None:
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
                    action = Action.DELETE if step.action == Action.CLEANUP else step.action
                    reason = failure_reason(self._internal_error(step, request_id),
                                            step.resource_name, ())
                    stack = stack_rows.load_stack(session, step.stack_id)
                    if fail_step(session, stack, step, self._owner,
                                 reasons.resource_failed(action, reason), now,
                                 waiting_reason=reasons.HOOK_WAIT_FAILED):
                        self._writes.count_finished(session, step.resource_type,
                                                    Status.FAILED, step.started_at, now)
                else:
                    leases.back_off_step(session, step, self._owner,
                                         now + self._rule.backoff(step.failures))
        except DatabaseUnavailable:
            raise
        except Exception:  # noqa: BLE001 -- the loop must go on
            LOG.exception("step %s: counting its failure failed too; given back for a "
                          "lease", step_id)
            self._abandoned.add(step_id)

    def _keep_physical_id(self, session: DbSession, held: HeldStep) -> None:
        """Store the physical id the handler recorded, whose write (with the step's token
        or close) is what failed: the next try then goes on with the thing its handler
        made instead of making another. Only that scalar, in a savepoint, so a value
        that cannot be stored does not fail the counting too."""
        physical_id = held.instance.physical_id
        if held.kind == Action.CLEANUP or physical_id is None:
            return  # a cleanup's physical id is the replaced one's, stored already
        try:
            with session.begin_nested():
                self._writes.row(session, held).physical_id = physical_id
        except Exception:  # noqa: BLE001 -- a bad id: the try is counted all the same
            LOG.exception("step %s: its physical id could not be stored", held.step_id)

    def _give_up(self, session: DbSession, step: Step, stack: Stack, row: ResourceRow,
                 now: datetime.datetime) -> None:
        """Fail a step whose tries kept failing on a bug (or killing their workers),
        without preparing or running it again: its resource ``<ACTION>_FAILED``, its
        waiting siblings cancelled, as for any failed step."""
        request_id = request_id_of(session, step.operation_id)
        LOG.error("step %s of operation %s (request %s): given up after %d tries", step.id,
                  step.operation_id, request_id, self._rule.attempts)
        self._writes.record_failure(session, step, stack, row,
                             self._internal_error(step, request_id), (), now)

    def _internal_error(self, step: Step, request_id: str) -> InternalError:
        return self._rule.internal_error(
            f"step {step.id} of operation {step.operation_id}", request_id)

    def _prepare_many(self, step_ids: Sequence[int], follow: Follow | None = None
                      ) -> list[HeldStep]:
        """Prepare claimed steps in one transaction (and, as ``follow`` lets, the steps
        their quiet closes make ready); one by one should that meet a bug."""
        now = self._clock()
        try:
            with self._db.transaction() as session:
                prepared = self._prepare_round(session, step_ids, now, follow)
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
                        prepared += self._prepare_round(session, [step_id], now, None)
                except DatabaseUnavailable:
                    raise
                except Exception as one:  # noqa: BLE001 -- a bug in this step only
                    self._unexpected(step_id, one)
        return self._without_failed(prepared)

    def _without_failed(self, prepared: Sequence[HeldStep]) -> list[HeldStep]:
        """Record the failures found while preparing (each in a transaction of its own,
        once the preparing one has committed); the steps to start."""
        for held in prepared:
            if held.failure is not None:
                with held.bound_logs():
                    self._fail_quietly(held, held.failure)
        return [held for held in prepared if held.failure is None]

    def _prepare_round(self, session: DbSession, step_ids: Sequence[int],
                       now: datetime.datetime, follow: Follow | None) -> list[HeldStep]:
        """Prepare claimed steps in one transaction, their rows read together, then
        (``follow``) the steps their quiet closes made ready."""
        begun = self._clock()
        prepared, ready = self._prepare_batch(session, steps.load_steps(session, step_ids),
                                              now, begun, wake=follow is None)
        if follow is not None and ready:
            prepared += self._follow(session, ready, now, follow.less(len(prepared)), begun)
        return prepared

    def _prepare_batch(self, session: DbSession, claimed: Sequence[Step],
                       now: datetime.datetime, begun: datetime.datetime, *, wake: bool,
                       stacks: Mapping[str, Stack] | None = None
                       ) -> tuple[list[HeldStep], set[int]]:
        """Prepare claimed steps, their rows read together, and close together those
        with nothing to do: the steps to start, and those the closes made ready
        (``wake``: as ``steps.complete_steps``). ``stacks``: those this transaction
        read already.

        Preparing evaluates properties, which may take up to the evaluation budget per
        resource, and the transaction holds SQLite's only write lock (and on PostgreSQL
        no heartbeat runs meanwhile): once the round (``begun``) has taken longer than
        one evaluation may, the steps not yet prepared are handed back uncounted, for
        the next round (this worker's or another's)."""
        if not claimed:
            return [], set()
        names: dict[str, list[str]] = {}
        for step in claimed:
            names.setdefault(step.stack_id, []).append(step.resource_name)
        known = stacks or {}
        stacks = {stack_id: known.get(stack_id) or stack_rows.load_stack(session, stack_id)
                  for stack_id in names}
        rows = {(row.stack_id, row.name): row for stack_id, wanted in names.items()
                for row in resource_rows.list_resources_named(session, stack_id, wanted)}
        # The steps of one round may belong to many operations, of many stacks.
        labels = self._labels(session, {step.operation_id for step in claimed})
        prepared: list[HeldStep] = []
        quiet: list[Step] = []
        ordered = sorted(claimed, key=lambda s: s.id)
        for index, step in enumerate(ordered):
            if index and self._round_too_long(begun):
                self._give_back_rest(session, ordered[index:], len(ordered))
                break
            label = labels.get(step.operation_id)
            # Evaluating properties may log (a bug's traceback) what a hidden value became.
            secrets = self._decider.secrets(step.operation_id, stacks[step.stack_id])
            try:
                with logs.bound(secrets=secrets, **(label._asdict() if label else {})):
                    held = self._prepare_in(session, step, now, stacks[step.stack_id],
                                            rows[(step.stack_id, step.resource_name)], quiet)
            except LeaseLost:  # raised before anything of this step was written
                continue
            if held is not None:
                held.label = label
                prepared.append(held)
        by_operation: dict[str, list[Step]] = {}
        for step in quiet:
            by_operation.setdefault(step.operation_id, []).append(step)
        ready: set[int] = set()
        for operation_id, group in by_operation.items():
            # A step whose lease was lost meanwhile stays open for its new holder.
            closed, made_ready = steps.complete_steps(
                session, operation_id, [step.id for step in group], self._owner, now,
                wake=wake)
            ready |= made_ready
            for step in group:
                if step.id in closed:
                    self._writes.count_finished(session, step.resource_type,
                                                Status.COMPLETE, step.started_at, now)
        return prepared, ready

    def _labels(self, session: DbSession, operation_ids: set[str]
                ) -> dict[str, OperationLabel]:
        """What the log lines of each operation's steps name, read once an operation."""
        unread = {op for op in operation_ids if op not in self._label_cache}
        if unread:
            self._label_cache.update(stack_rows.operation_labels(session, unread))
        return {op: self._label_cache[op] for op in operation_ids if op in self._label_cache}

    def _round_too_long(self, begun: datetime.datetime) -> bool:
        # NOTE: a stopgap that bounds the write transaction to about two evaluations;
        # evaluating outside it (read, evaluate, a short lease-guarded write) is the
        # fix, left for the worker's restructuring (specs/scale-out.rst).
        spent = (self._clock() - begun).total_seconds()
        return spent > budget.limits().evaluation_timeout_seconds

    def _give_back_rest(self, session: DbSession, rest: Sequence[Step], claimed: int) -> None:
        given = leases.give_back_steps(session, self._owner, [step.id for step in rest],
                                       self._clock())
        LOG.info("a round of %d steps took longer than an evaluation may: %d handed back "
                 "for the next round", claimed, len(given))

    # --- one step prepared: its decision carried out -------------------------------------

    def _prepare_in(self, session: DbSession, step: Step, now: datetime.datetime, stack: Stack,
                    row: ResourceRow, quiet: list[Step]) -> HeldStep | None:
        """Decide what a claimed step will do and carry out what is written before its
        handler runs; the step to start or go on with, if any. A step with nothing to
        do joins ``quiet``: closed with no event, its resource untouched, together with
        the others at the batch's end."""
        if step.lease_owner != self._owner or step.state != StepState.RUNNING:
            return None
        if self._rule.spent(step.failures):
            self._give_up(session, step, stack, row, now)
            return None
        wait = self._breakpoints.before(session, step, stack, row, now)
        if wait != Wait.GO:
            if wait == Wait.PASSED:  # its resource's state was written when it paused
                quiet.append(step)
            return None
        decision = self._decider.decide(session, step, stack, row)
        post_hook = (self._breakpoints.after(session, step, stack, row, decision.action)
                     if decision.outcome in (Outcome.ACT, Outcome.END) else None)
        if decision.outcome == Outcome.END and post_hook is not None:
            # Nothing to delete (or kept), yet the delete is done: Heat breaks after it.
            self._breakpoints.pause_done(
                session, step.operation_id, step.id, stack, row, post_hook, now,
                lambda: set_resource_state(session, stack, row, Action.DELETE,
                                           Status.COMPLETE, decision.reason, now))
            return None
        if decision.outcome in (Outcome.CLOSE, Outcome.END):
            quiet.append(step)
            if decision.outcome == Outcome.END:
                set_resource_state(session, stack, row, Action.DELETE, Status.COMPLETE,
                                   decision.reason, now)
            return None
        if decision.outcome == Outcome.FAIL:
            assert decision.failure is not None
            if decision.mark_in_progress:
                set_resource_state(session, stack, row, step.action, Status.IN_PROGRESS,
                                   reasons.STATE_CHANGED, now)
            self._writes.record_failure(session, step, stack, row, decision.failure, (), now,
                                        keep_state=decision.keep_state)
            return None
        assert decision.instance is not None
        if decision.definition is not None:
            row.type, row.properties = decision.definition.type, decision.definition.properties
            row.deletion_policy = decision.definition.deletion_policy
        if not step.started and decision.outcome == Outcome.ACT:
            set_resource_state(session, stack, row, decision.action, Status.IN_PROGRESS,
                               reasons.STATE_CHANGED, now)
        elif not step.started and decision.outcome == Outcome.RESTORE:
            set_resource_state(session, stack, row, Action.DELETE, Status.IN_PROGRESS,
                               reasons.ROLLING_BACK, now)
        held = HeldStep(step.id, step.operation_id, stack.id, row.name,
                        decision.resource_type, decision.action, decision.instance,
                        decision.secrets, token=step.token,
                        phase=StepPhase.WAITING if step.started else StepPhase.PREPARED,
                        saved_data=dict(decision.instance.data), adopt=decision.adopt,
                        prop_diff=decision.prop_diff, kind=KIND[decision.outcome],
                        converge=decision.converge, failure=decision.failure,
                        started_at=step.started_at,
                        post_hook=post_hook if decision.outcome == Outcome.ACT else None)
        if (held.failure is None and held.action in APPLYING_PROPERTIES
                and held.phase == StepPhase.PREPARED):
            try:
                held.instance.validate()
            except Exception as exc:  # noqa: BLE001 -- plugin code: any failure is state
                held.failure = exc
        # A failure is recorded by the caller once this transaction has ended (_fail
        # writes its own).
        return held

    def _fail(self, held: HeldStep, exc: Exception) -> None:
        now = self._clock()
        with self._db.transaction() as session:
            self._writes.fail(session, held, exc, now)


def _always() -> bool:
    """A runner with no liveness to check (tests that drive it directly)."""
    return True


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
