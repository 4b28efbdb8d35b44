"""The worker loop: claim operations and steps, heartbeat, poll, stop gracefully.

One thread drives many steps. A waiting step is an entry in ``self._held`` with the time of
its next poll, not a thread, so ``max_parallel_steps`` bounds memory and backend load,
and ``type_concurrency`` the load on a backend that rate-limits. An operation or step
that keeps failing on a bug is ended by the poison rule (``poison``), not by the loop.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import logging
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from engine import metrics
from engine.clock import Clock, utcnow
from engine.db import leases
from engine.db.models import Worker
from engine.db.session import Database
from engine.db.wakeup import WorkListener
from engine.errors import DatabaseUnavailable
from engine.ir.stored import StoredIrs
from engine.lifecycle.registry import LifecycleRegistry
from engine.resources.registry import ResourceTypeRegistry
from engine.worker.held_step import HeldStep
from engine.worker.lifecycle_calls import LifecycleCalls
from engine.worker.operation import OperationDriver
from engine.worker.poison import PoisonRule
from engine.worker.step import StepRunner

LOG = logging.getLogger(__name__)
T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class WorkerSettings:
    max_parallel_steps: int = 1024
    # Most steps of each named resource type held at once ([engine] type_concurrency).
    type_concurrency: Mapping[str, int] = dataclasses.field(default_factory=dict)
    lease_seconds: float = 30.0
    heartbeat_interval_seconds: float = 5.0
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


class WorkerLoop:
    def __init__(self, db: Database, registry: ResourceTypeRegistry, settings: WorkerSettings,
                 *, host: str, lifecycle: LifecycleRegistry | None = None,
                 clock: Clock = utcnow, sleep: Callable[[float], object] = time.sleep,
                 irs: StoredIrs) -> None:
        self.id = str(uuid.uuid4())
        self._db = db
        self._settings = settings
        self._host = host
        self._clock = clock
        self._sleep = sleep
        self._held: dict[int, HeldStep] = {}
        # Claimed, counted, and cut short by a database outage: given back uncounted at
        # the next tick the database answers (``_give_back_unfinished``).
        self._unfinished_operations: set[str] = set()
        self._unfinished_steps: set[int] = set()
        self._last_heartbeat = 0.0
        # ``irs``: one IR per stored definition for the pre-ops' views, the plan, the steps
        # and the outputs (and, in kiln-all, the API's reads: bootstrap hands the same one).
        lifecycle_calls = LifecycleCalls(
            db, registry, lifecycle or LifecycleRegistry(()), self.id, clock,
            settings.lease_seconds, settings.heartbeat_interval_seconds, irs=irs)
        rule = self._rule = settings.poison
        self._operations = OperationDriver(db, registry, self.id, clock, lifecycle_calls,
                                           api_url=settings.api_url, irs=irs, rule=rule)
        self._pool = (ThreadPoolExecutor(settings.operation_threads, "kiln-operation")
                      if settings.operation_threads else None)
        self._in_flight: dict[str, Future[Any]] = {}
        self._steps = StepRunner(db, registry, self.id, clock, settings.max_step_poll_seconds,
                                 api_url=settings.api_url, irs=irs,
                                 placements=lifecycle.placement_of if lifecycle else None,
                                 rule=rule)

    # --- lifecycle --------------------------------------------------------------------------

    def register(self) -> None:
        now = self._clock()
        with self._db.transaction() as session:
            leases.register_worker(session, Worker(id=self.id, host=self._host, pid=os.getpid(),
                                                   started_at=now, heartbeat_at=now))
        self._last_heartbeat = now.timestamp()

    def run(self, stop: threading.Event) -> None:
        """Work until ``stop`` is set, then hand back what is held and return."""
        self.register()
        LOG.info("worker %s started on %s", self.id, self._host)
        if self._db.engine.dialect.name == "postgresql":
            WorkListener(self._db.url, self._db.work, stop).start()
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
        LOG.info("worker %s stopped", self.id)

    def run_once(self) -> bool:
        """One tick: heartbeat, operations, new steps, due polls. True if it did work."""
        now = self._clock()
        self._heartbeat_if_due(now)
        self._give_back_unfinished(now)
        busy = self._advance_operations(now)
        busy |= self._claim_steps(now)
        busy |= self._poll_due()
        return busy

    def wake(self) -> None:
        """End an idle wait now (new work, or a stop to notice)."""
        self._db.work.set()

    def hand_back(self) -> None:
        """Graceful stop: expire our leases now so another worker resumes the work,
        the tries cut short not counted.

        Operations in flight get a moment to finish their current call; one still
        waiting on a plugin is handed over (its later writes fail the lease check)."""
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
            leases.heartbeat_worker(session, self.id, now, stopped=True)
        self._held.clear()
        self._unfinished_operations.clear()
        self._unfinished_steps.clear()

    @property
    def held_count(self) -> int:
        return len(self._held)

    # --- pieces ------------------------------------------------------------------------------

    def _heartbeat_if_due(self, now: datetime.datetime) -> None:
        if now.timestamp() - self._last_heartbeat < self._settings.heartbeat_interval_seconds:
            return
        with self._db.transaction() as session:
            kept = leases.renew_steps(session, self.id, list(self._held), now,
                                      self._settings.lease_seconds)
            leases.heartbeat_worker(session, self.id, now)
            lost = set(self._held) - kept
            ended = leases.cancelled_steps(session, lost)
        for step_id in lost:
            with self._held[step_id].bound_logs():
                if step_id in ended:  # a timeout or a cancel: nothing went wrong here
                    LOG.info("worker %s stops step %s: its operation ended", self.id,
                             step_id)
                else:
                    LOG.warning("worker %s lost the lease of step %s", self.id, step_id)
            del self._held[step_id]
        self._last_heartbeat = now.timestamp()

    def _give_back_unfinished(self, now: datetime.datetime) -> None:
        """Give back, uncounted, what an outage cut short: a claim the database could
        not finish is not a failed try (three outages would otherwise fail it)."""
        if not (self._unfinished_operations or self._unfinished_steps):
            return
        with self._db.transaction() as session:
            leases.give_back_operations(session, self.id, self._unfinished_operations, now)
            leases.give_back_steps(session, self.id, self._unfinished_steps, now)
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
        with self._db.transaction() as session:
            operations = leases.claim_operations(
                session, self.id, now, self._settings.lease_seconds, limit)
            claimed = [op.id for op in operations]
            # Its first claim: no worker had it before (a takeover's is a later one).
            started = [op.action for op in operations if op.attempt == 1]
        for action in started:
            metrics.operation_started(action)
        for index, operation_id in enumerate(claimed):
            if self._pool is None:
                try:
                    self._guarded(self._operations.advance, operation_id)
                except DatabaseUnavailable:
                    self._unfinished_operations.update(claimed[index:])
                    raise
            else:
                self._in_flight[operation_id] = self._pool.submit(
                    self._guarded, self._operations.advance, operation_id)
        return bool(claimed)

    def _claim_steps(self, now: datetime.datetime) -> bool:
        free = self._settings.max_parallel_steps - len(self._held)
        if free <= 0:
            return False
        with self._db.transaction() as session:
            claimed = [(step.id, suspect) for step, suspect in leases.claim_steps(
                session, self.id, now, self._settings.lease_seconds, free, self._room(),
                self._rule.alone_from)]
        # Suspects (their last try failed or died) go last, in a round of their own:
        # should they kill this worker too, the others' progress is saved and only they
        # count.
        fresh = [step_id for step_id, suspect in claimed if not suspect]
        suspects = [step_id for step_id, suspect in claimed if suspect]
        for index, batch in enumerate((fresh, suspects)):
            if not batch:
                continue
            try:
                started = self._guarded(self._steps.start_many, batch)
            except DatabaseUnavailable:
                self._unfinished_steps.update(batch if index else fresh + suspects)
                raise
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

    def _poll_due(self) -> bool:
        now = self._clock().timestamp()
        due = [held for held in self._held.values() if held.next_poll_at <= now]
        if not due:
            return False
        # None: a bug, logged; the steps are dropped and left to their leases.
        waiting = self._guarded(self._steps.poll_many, due) or []
        still = {held.step_id for held in waiting}
        for held in due:
            if held.step_id not in still:
                self._held.pop(held.step_id, None)
        return True

    def _guarded(self, call: Callable[[Any], T], item: Any) -> T | None:
        """Run one item's work; a bug there is logged and the item left to its lease.

        Plugin failures are already state, and a Kiln bug in an operation's phase or a
        step is counted against it where it happens (``poison``); what reaches here is
        a bug in that counting, and one bad item must not stop the worker for every other.
        """
        try:
            return call(item)
        except DatabaseUnavailable:
            raise
        except Exception:  # noqa: BLE001
            LOG.exception("worker %s: %s failed for %s; left for its lease to expire",
                          self.id, getattr(call, "__name__", call), item)
            return None

    def _idle_wait(self) -> float:
        wait = self._settings.idle_poll_seconds
        if self._held:
            soonest = min(held.next_poll_at for held in self._held.values())
            wait = min(wait, max(0.0, soonest - self._clock().timestamp()))
        return wait


def _outage(future: Future[Any]) -> bool:
    """Whether the finished ``future`` was cut short by the database going away."""
    return not future.cancelled() and isinstance(future.exception(), DatabaseUnavailable)
