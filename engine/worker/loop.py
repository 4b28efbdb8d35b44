"""The worker loop: claim operations and steps, poll, stop gracefully; and the heartbeat
that keeps its claims its own.

One thread drives many steps. A waiting step is an entry in ``self._held`` with the time of
its next poll, not a thread, so ``max_parallel_steps`` bounds memory and backend load,
and ``type_concurrency`` the load on a backend that rate-limits. An operation or step
that keeps failing on a bug is ended by the poison rule (``poison``), not by the loop.

The heartbeat renews the worker's liveness from a thread of its own
(``engine/worker/liveness.py``). A worker that may not act (its liveness not renewed in
time) pauses; one that finds it was fenced drops all it held and rejoins under a new id,
with components of its own, so nothing still running under the old id (an operation's
thread) writes as the new one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import logging
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from engine import config, metrics
from engine.clock import Clock, utcnow
from engine.db import leases
from engine.db.session import Database
from engine.db.wakeup import WorkListener
from engine.errors import DatabaseUnavailable
from engine.ir.stored import StoredIrs
from engine.lifecycle.registry import LifecycleRegistry
from engine.resources.registry import ResourceTypeRegistry
from engine.worker.deliveries import Deliverer, DeliverySettings
from engine.worker.held_step import HeldStep
from engine.worker.lifecycle_calls import LifecycleCalls
from engine.worker.liveness import Heartbeat, Liveness, Monotonic, NotLive
from engine.worker.operation import OperationDriver
from engine.worker.poison import PoisonRule
from engine.worker.step import Follow, StepRunner

LOG = logging.getLogger(__name__)
T = TypeVar("T")
# How long one tick goes on starting the steps its own closes made ready (a chain's next
# links) before it looks at new operations and at the steps other workers' closes made
# ready: about a hundred links of a chain of quick resources.
FOLLOW_SECONDS = 0.25


@dataclasses.dataclass(frozen=True)
class WorkerSettings:
    max_parallel_steps: int = 1024
    # Most steps of each named resource type held at once ([engine] type_concurrency).
    type_concurrency: Mapping[str, int] = dataclasses.field(default_factory=dict)
    # How long a worker's liveness lasts after a renewal, and how often it is renewed
    # ([engine] lease_seconds, heartbeat_interval_seconds); a loop stuck this long stops
    # renewing it ([engine] stall_seconds, 0: never).
    lease_seconds: float = config.declared_default("engine", "lease_seconds")
    heartbeat_interval_seconds: float = config.declared_default(
        "engine", "heartbeat_interval_seconds")
    stall_seconds: float = config.declared_default("engine", "stall_seconds")
    idle_poll_seconds: float = 1.0
    max_step_poll_seconds: float = 1.0
    operations_per_tick: int = 4
    # Threads that advance operations (lifecycle plugin calls can take seconds); 0 runs
    # them in the loop's own thread, which tests use for determinism.
    operation_threads: int = 0
    # The API's base URL as signallers reach it (``[api] public_url``): resources put it
    # in the signal URLs they hand out.
    api_url: str = "http://127.0.0.1:8004"
    # Tries of an operation phase or a step that fails on an unexpected error, and the
    # wait before the second ([engine] internal_error_attempts, _backoff_seconds).
    poison: PoisonRule = PoisonRule()
    # How the loop's process sends event sink deliveries ([event_sinks]); None: it sends
    # none (tests that drive the loop alone).
    deliveries: DeliverySettings | None = None


@dataclasses.dataclass(frozen=True)
class _Identity:
    """The worker under one id: its liveness, and the components that write as it."""

    id: str
    liveness: Liveness
    operations: OperationDriver
    steps: StepRunner


class WorkerLoop:
    def __init__(self, db: Database, registry: ResourceTypeRegistry, settings: WorkerSettings,
                 *, host: str, lifecycle: LifecycleRegistry | None = None,
                 clock: Clock = utcnow, sleep: Callable[[float], object] = time.sleep,
                 irs: StoredIrs, monotonic: Monotonic = time.monotonic) -> None:
        self._db = db
        self._registry = registry
        self._lifecycle = lifecycle
        self._settings = settings
        self._host = host
        self._clock = clock
        self._sleep = sleep
        # Self-fencing reads it (tests hand one that follows their clock).
        self._monotonic = monotonic
        # ``irs``: one IR per stored definition for the pre-ops' views, the plan, the steps
        # and the outputs (and, in kiln-all, the API's reads: bootstrap hands the same one).
        self._irs = irs
        self._rule = settings.poison
        self._held: dict[int, HeldStep] = {}
        # Claimed, counted, and cut short by a database outage (or a pause): given back
        # uncounted at the next tick the worker may act (``_give_back_unfinished``).
        self._unfinished_operations: set[str] = set()
        self._unfinished_steps: set[int] = set()
        self._last_heartbeat = float("-inf")
        self._last_held_check = monotonic()
        self._heartbeat: Heartbeat | None = None
        self._stall_logged = False
        self._paused_since: float | None = None
        # Dropped on a bug (``_guarded``, and the step runner's own): given back for a
        # lease at the next tick. Operations' threads add to them too.
        self._lock = threading.Lock()
        self._abandoned_operations: set[str] = set()
        self._abandoned_steps: set[int] = set()
        self._pool = (ThreadPoolExecutor(settings.operation_threads, "kiln-operation")
                      if settings.operation_threads else None)
        self._in_flight: dict[str, Future[Any]] = {}
        self._identity = self._bind(str(uuid.uuid4()))

    def _bind(self, worker_id: str) -> _Identity:
        settings = self._settings
        liveness = Liveness(settings.lease_seconds, settings.heartbeat_interval_seconds,
                            self._monotonic)
        lifecycle_calls = LifecycleCalls(
            self._db, self._registry, self._lifecycle or LifecycleRegistry(()), worker_id,
            self._clock, irs=self._irs, live=liveness.check,
            not_fenced=liveness.check_not_fenced,
            heartbeat_seconds=settings.heartbeat_interval_seconds)
        operations = OperationDriver(self._db, self._registry, worker_id, self._clock,
                                     lifecycle_calls, irs=self._irs, rule=self._rule)
        steps = StepRunner(self._db, self._registry, worker_id, self._clock,
                           settings.max_step_poll_seconds, api_url=settings.api_url,
                           irs=self._irs,
                           placements=self._lifecycle.placement_of if self._lifecycle else None,
                           rule=self._rule, live=liveness.next_action)
        return _Identity(worker_id, liveness, operations, steps)

    @property
    def id(self) -> str:
        return self._identity.id

    # --- lifecycle --------------------------------------------------------------------------

    def register(self) -> None:
        self._register(self._identity)

    def run(self, stop: threading.Event) -> None:
        """Work until ``stop`` is set, then hand back what is held and return."""
        self.register()
        LOG.info("worker %s started on %s", self.id, self._host)
        if self._db.engine.dialect.name == "postgresql":
            WorkListener(self._db.url, self._db.work, stop).start()
        # Beats on until the work is handed back, so the hand-back is done while live.
        beating = threading.Event()
        self._heartbeat = Heartbeat(self._beat, self._settings.heartbeat_interval_seconds,
                                    beating)
        self._heartbeat.start()
        # Its own thread: a slow receiver never holds up a tick.
        deliveries = self._settings.deliveries
        sending = (Deliverer(self._db, deliveries, clock=self._clock).start(stop)
                   if deliveries else None)
        try:
            while not stop.is_set():
                try:
                    busy = self.run_once()
                except DatabaseUnavailable as exc:
                    LOG.warning("database unavailable, retrying: %s", exc.message)
                    busy = False
                except Exception:  # noqa: BLE001 -- the loop outlives every bug it meets
                    LOG.exception("worker %s: tick failed; continuing", self.id)
                    busy = False
                if not busy and not stop.is_set():
                    self._db.work.wait(self._idle_wait())
            self.hand_back()
            if sending is not None and deliveries is not None:
                sending.join(deliveries.lease_seconds)  # what it still holds is due again
        finally:
            beating.set()
        LOG.info("worker %s stopped", self.id)

    def run_once(self) -> bool:
        """One tick: operations, new steps, due polls. True if it did work. Nothing while
        the worker may not act on its claims; a fenced worker rejoins first."""
        identity = self._identity
        identity.liveness.moved()
        if self._heartbeat is None:
            # No heartbeat thread (tests drive the loop tick by tick): the tick beats.
            self._heartbeat_if_due()
        if identity.liveness.fenced:
            self._rejoin(identity)
        if not self._identity.liveness.may_act():
            if self._paused_since is None:
                self._paused_since = self._monotonic()
                LOG.warning("worker %s pauses: its liveness was not renewed in time, so it "
                            "acts on nothing it holds until it is", self.id)
            return False
        if self._paused_since is not None:
            LOG.info("worker %s goes on after a pause of %.1f s", self.id,
                     self._monotonic() - self._paused_since)
            self._paused_since = None
        now = self._clock()
        self._check_held_if_due()
        self._give_back_unfinished(now)
        busy = self._advance_operations(now)
        busy |= self._claim_steps(now)
        busy |= self._poll_due()
        return busy

    def wake(self) -> None:
        """End an idle wait now (new work, or a stop to notice)."""
        self._db.work.set()

    def hand_back(self) -> None:
        """Graceful stop: give back what we hold so another worker resumes the work at
        once, the tries cut short not counted, and record the stop.

        Operations in flight get up to a heartbeat interval to finish their current
        call; one still waiting on a plugin is handed over (its later writes fail the
        claim check, and it starts no further call)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            deadline = time.monotonic() + self._settings.heartbeat_interval_seconds
            for future in list(self._in_flight.values()):
                with contextlib.suppress(Exception):  # _guarded logged it; only waiting
                    future.result(timeout=max(0.0, deadline - time.monotonic()))
        # A phase cut short by the stop or by an outage, and a held step's claim, are
        # not the item's fault: their tries do not count.
        now = self._clock()
        operations = {operation_id for operation_id, future in self._in_flight.items()
                      if not future.done() or _outage(future)} | self._unfinished_operations
        expired = now - datetime.timedelta(seconds=1)
        with self._db.transaction() as session:
            leases.give_back_operations(session, self.id, operations, expired)
            leases.give_back_steps(session, self.id,
                                   set(self._held) | self._unfinished_steps, expired)
            leases.stop_worker(session, self.id, now)
        # What still runs under this id starts nothing more.
        self._identity.liveness.fence()
        self._held.clear()
        self._unfinished_operations.clear()
        self._unfinished_steps.clear()

    @property
    def held_count(self) -> int:
        return len(self._held)

    # --- liveness ----------------------------------------------------------------------------

    def _register(self, identity: _Identity) -> None:
        started = self._monotonic()
        with self._db.transaction() as session:
            renewal = leases.register_worker(session, identity.id, self._host, os.getpid(),
                                             self._clock(), self._settings.lease_seconds)
        self._renewed(identity, renewal, started)

    def _beat(self) -> None:
        """Renew our liveness (and fence the workers whose liveness lapsed), unless the
        loop is stuck: then the others take our work over, and we find ourselves fenced
        once the loop moves again."""
        identity = self._identity
        if identity.liveness.stalled(self._settings.stall_seconds):
            if not self._stall_logged:
                LOG.error("worker %s: its loop has not moved on for over %s s; it stops "
                          "renewing its liveness, so other workers take its work over",
                          identity.id, self._settings.stall_seconds)
                self._stall_logged = True
            return
        self._stall_logged = False
        liveness = identity.liveness
        paused = not liveness.may_act()
        if paused:
            liveness.troubled()
        started = self._monotonic()
        try:
            with self._db.transaction() as session:
                renewal = leases.renew_liveness(session, identity.id, self._clock(),
                                                self._settings.lease_seconds,
                                                fence=liveness.may_fence())
        except Exception:
            liveness.troubled()
            raise
        self._renewed(identity, renewal, started)
        if paused or not renewal.alive:
            self.wake()  # the loop waits for this answer

    def _renewed(self, identity: _Identity, renewal: leases.Renewal, started: float) -> None:
        self._last_heartbeat = started
        if renewal.alive:
            identity.liveness.renewed(started)
        else:
            identity.liveness.fence()
        for worker in renewal.fenced:
            LOG.warning("worker %s fenced worker %s (%s, pid %s; last heartbeat %s): its "
                        "liveness lapsed, and what it held is free for any worker",
                        identity.id, worker.id, worker.host, worker.pid,
                        worker.heartbeat_at.isoformat(timespec="milliseconds"))

    def _heartbeat_if_due(self) -> None:
        due = (self._monotonic() - self._last_heartbeat
               >= self._settings.heartbeat_interval_seconds)
        if due or not self._identity.liveness.may_act():
            self._beat()

    def _rejoin(self, fenced: _Identity) -> None:
        """We were fenced: what we held may be another worker's already. Drop it all and
        go on as a new worker (the rows we held are claimed like any dead worker's)."""
        identity = self._bind(str(uuid.uuid4()))
        self._register(identity)  # raises while the database is away: tried next tick
        LOG.warning("worker %s was fenced (its liveness lapsed: cut off from the database, "
                    "paused or stuck for over %s s): it drops the %d steps it held and "
                    "goes on as worker %s", fenced.id, self._settings.lease_seconds,
                    len(self._held), identity.id)
        self._held.clear()
        self._unfinished_operations.clear()
        self._unfinished_steps.clear()
        self._identity = identity

    def _check_held_if_due(self) -> None:
        """Drop the held steps that are not ours any more: closed by their operation's
        end (a time-out, a cancel), or, should anything else have moved them, lost. A
        read by primary key, once a heartbeat interval, only while holding steps: a live
        worker's claims are not taken from it, so this stops looks at steps whose
        operation ended (a look that finds a step still waiting writes nothing, so
        nothing else would tell)."""
        if not self._held or (self._monotonic() - self._last_held_check
                              < self._settings.heartbeat_interval_seconds):
            return
        with self._db.read() as session:
            held = leases.still_held(session, self.id, list(self._held))
        for step_id in set(self._held) - held.kept:
            with self._held[step_id].bound_logs():
                if step_id in held.ended:  # a timeout or a cancel: nothing went wrong here
                    LOG.info("worker %s stops step %s: its operation ended", self.id,
                             step_id)
                else:
                    LOG.warning("worker %s lost the lease of step %s", self.id, step_id)
            del self._held[step_id]
        self._last_held_check = self._monotonic()

    # --- pieces ------------------------------------------------------------------------------

    def _give_back_unfinished(self, now: datetime.datetime) -> None:
        """Give back, uncounted, what an outage (or a pause) cut short: a claim the
        database could not finish is not a failed try (three outages would otherwise fail
        it). And give back, counted, what a bug made us drop: nobody claims it for a
        lease, as when it was left for its lease to lapse."""
        with self._lock:
            abandoned_operations, self._abandoned_operations = self._abandoned_operations, set()
            abandoned_steps, self._abandoned_steps = self._abandoned_steps, set()
        if not (self._unfinished_operations or self._unfinished_steps
                or abandoned_operations or abandoned_steps):
            return
        later = now + datetime.timedelta(seconds=self._settings.lease_seconds)
        try:
            with self._db.transaction() as session:
                leases.give_back_operations(session, self.id, self._unfinished_operations,
                                            now)
                leases.give_back_steps(session, self.id, self._unfinished_steps, now)
                leases.abandon_operations(session, self.id, abandoned_operations, later)
                leases.abandon_steps(session, self.id, abandoned_steps, later)
        except BaseException:
            with self._lock:
                self._abandoned_operations |= abandoned_operations
                self._abandoned_steps |= abandoned_steps
            raise
        self._unfinished_operations.clear()
        self._unfinished_steps.clear()

    def _advance_operations(self, now: datetime.datetime) -> bool:
        for operation_id, future in self._in_flight.items():
            if future.done() and _outage(future):
                self._unfinished_operations.add(operation_id)
        self._in_flight = {op_id: future for op_id, future in self._in_flight.items()
                           if not future.done()}
        limit = self._settings.operations_per_tick
        if self._pool is not None:
            limit = min(limit, self._settings.operation_threads - len(self._in_flight))
        if limit <= 0:
            return False
        identity = self._identity
        with self._db.transaction() as session:
            operations = leases.claim_operations(session, identity.id, now, limit)
            claimed = [op.id for op in operations]
            # Its first claim: no worker had it before (a takeover's is a later one).
            started = [op.action for op in operations if op.attempt == 1]
        for action in started:
            metrics.operation_started(action)
        for index, operation_id in enumerate(claimed):
            if self._pool is None:
                try:
                    self._guarded(identity.operations.advance, operation_id)
                except NotLive:
                    self._unfinished_operations.update(claimed[index:])
                    break
                except DatabaseUnavailable:
                    self._unfinished_operations.update(claimed[index:])
                    raise
            else:
                self._in_flight[operation_id] = self._pool.submit(
                    self._guarded, identity.operations.advance, operation_id)
        return bool(claimed)

    def _claim_steps(self, now: datetime.datetime) -> bool:
        free = self._settings.max_parallel_steps - len(self._held)
        if free <= 0:
            return False
        identity = self._identity
        with self._db.transaction() as session:
            claimed = [(step.id, suspect) for step, suspect in leases.claim_steps(
                session, identity.id, now, free, self._room(), self._rule.alone_from)]
        # Suspects (their last try failed or died) go last, in a round of their own:
        # should they kill this worker too, the others' progress is saved and only they
        # count.
        fresh = [step_id for step_id, suspect in claimed if not suspect]
        suspects = [step_id for step_id, suspect in claimed if suspect]
        for index, batch in enumerate((fresh, suspects)):
            if not batch:
                continue
            try:
                started = self._guarded(functools.partial(identity.steps.start_many,
                                                          follow=self._follow(0)), batch)
            except (DatabaseUnavailable, NotLive):
                self._unfinished_steps.update(batch if index else fresh + suspects)
                raise
            finally:
                self._abandon_steps(identity.steps.take_abandoned())
            for held in started or ():
                self._held[held.step_id] = held
        return bool(claimed)

    def _room(self) -> dict[str, int]:
        """How many more steps of each limited type this worker may take."""
        limits = self._settings.type_concurrency
        if not limits:
            return {}
        held = Counter(held.resource_type for held in self._held.values())
        return {kind: limit - held[kind] for kind, limit in limits.items()}

    def _follow(self, in_round: int) -> Follow:
        """What a round of ``in_round`` held steps may claim of the steps its closes
        make ready: the slots free were the round's steps to leave (the runner counts
        those that stay), the room per limited type as the steps held now leave it."""
        return Follow(self._settings.max_parallel_steps - len(self._held) + in_round,
                      self._room())

    def _poll_due(self) -> bool:
        """Look once at each held step that is due, then start the steps the closes made
        ready and claimed (``Follow``), round after round while there are any, for up to
        ``FOLLOW_SECONDS``; those left are due at the next tick."""
        now = self._clock().timestamp()
        due = [held for held in self._held.values() if held.next_poll_at <= now]
        if not due:
            return False
        steps = self._identity.steps
        begun = self._monotonic()
        while due:
            try:
                # None: a bug, logged; the steps are dropped and given back for a lease.
                waiting = self._guarded(functools.partial(
                    steps.poll_many, follow=self._follow(len(due))), due) or []
            finally:
                self._abandon_steps(steps.take_abandoned())
            for held in due:
                self._held.pop(held.step_id, None)
            looked = {held.step_id for held in due}
            for held in waiting:
                self._held[held.step_id] = held
            if (self._monotonic() - begun >= FOLLOW_SECONDS
                    or not self._identity.liveness.may_act()):
                break
            due = [held for held in waiting if held.step_id not in looked]
        return True

    def _guarded(self, call: Callable[[Any], T], item: Any) -> T | None:
        """Run one item's work; a bug there is logged and the item given back for a
        lease (``_give_back_unfinished``).

        Plugin failures are already state, and a Kiln bug in an operation's phase or a
        step is counted against it where it happens (``poison``); what reaches here is
        a bug in that counting, and one bad item must not stop the worker for every other.
        ``item``: an operation's id, or a batch of step ids.
        """
        try:
            return call(item)
        except (DatabaseUnavailable, NotLive):
            raise
        except Exception:  # noqa: BLE001
            LOG.exception("worker %s: %s failed for %s; given back for a lease",
                          self.id, getattr(call, "__name__", call), item)
            if isinstance(item, str):
                with self._lock:
                    self._abandoned_operations.add(item)
            else:
                self._abandon_steps(held.step_id if isinstance(held, HeldStep) else held
                                    for held in item)
            return None

    def _abandon_steps(self, step_ids: Iterable[int]) -> None:
        with self._lock:
            self._abandoned_steps.update(step_ids)

    def _idle_wait(self) -> float:
        wait = self._settings.idle_poll_seconds
        if not self._identity.liveness.may_act():
            # Paused: the heartbeat's answer wakes the loop; this bounds the wait.
            return min(wait, self._settings.heartbeat_interval_seconds)
        if self._held:
            soonest = min(held.next_poll_at for held in self._held.values())
            wait = min(wait, max(0.0, soonest - self._clock().timestamp()))
        return wait


def _outage(future: Future[Any]) -> bool:
    """Whether the finished ``future`` was cut short by the database going away, or by
    the worker's pause: either way not the operation's fault."""
    return not future.cancelled() and isinstance(future.exception(),
                                                 (DatabaseUnavailable, NotLive))
