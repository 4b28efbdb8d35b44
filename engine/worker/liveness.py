"""What a worker knows of its own liveness, and the heartbeat that renews it.

A worker's claims are its own while its row in ``workers`` lives (``engine/db/leases.py``):
it renews the row every ``heartbeat_interval_seconds`` from a thread of its own, so a long
handler call or a long transaction in the loop does not delay it, and another worker
fences it once ``lease_seconds`` have passed since its last renewal. Before that can
happen the worker has stopped acting on its claims (self-fencing): it acts only while its
own monotonic clock is within ``lease_seconds - margin`` of the start of its last
successful renewal, the margin being a heartbeat (at most half the lease). The start is
read before the renewal's transaction begins, so the database's "now" in the renewal is
later still, and the lease others compare with ends later than the worker stops: by the
margin, whatever the hosts' clocks say (only their rates matter).

A worker that cannot renew (its database connection dropped, its process paused, its
heartbeat thread stalled) *pauses*: it starts no handler or plugin call and claims nothing
until a renewal succeeds, when it goes on with everything it holds, since nobody could
have fenced it meanwhile; or until a renewal finds it fenced, when it drops everything and
rejoins under a new id (``WorkerLoop``).

A worker that was in trouble itself (a heartbeat failed, or came too late) fences nobody
until it has renewed on time for a lease: after a database outage every worker's
liveness has lapsed, and none can tell the dead from those that, like itself, could not
reach the database; each gets a lease to come back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from engine.errors import DatabaseUnavailable

LOG = logging.getLogger(__name__)
Monotonic = Callable[[], float]


class NotLive(Exception):  # noqa: N818 -- control flow, like LeaseLost
    """This worker may not act on its claims now: its liveness was not renewed recently
    enough (or it was fenced). The operation it was advancing is given back uncounted
    once it may act again, as after a database outage."""


class Liveness:
    """One worker identity's view of its own liveness, shared by its threads."""

    def __init__(self, lease_seconds: float, heartbeat_seconds: float,
                 monotonic: Monotonic = time.monotonic) -> None:
        self._lease_seconds = lease_seconds
        self._acting_seconds = lease_seconds - margin(lease_seconds, heartbeat_seconds)
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._acting_until = float("-inf")
        self._fenced = False
        self._moved_at = monotonic()
        self._troubled_at = float("-inf")

    def renewed(self, started: float) -> None:
        """A renewal whose transaction began after ``started`` (our monotonic clock)
        committed: we may act until a lease less the margin after ``started``."""
        with self._lock:
            self._acting_until = max(self._acting_until, started + self._acting_seconds)

    def fence(self) -> None:
        """A renewal found us fenced (or stopped, or forgotten): never act again."""
        with self._lock:
            self._fenced = True

    @property
    def fenced(self) -> bool:
        return self._fenced

    def may_act(self) -> bool:
        """Whether we may start acting on a claim now (a handler, a look, a plugin call,
        a claim)."""
        return not self._fenced and self._monotonic() < self._acting_until

    def check(self) -> None:
        """Raise :class:`NotLive` unless we may act."""
        if not self.may_act():
            raise NotLive()

    def check_not_fenced(self) -> None:
        """Raise :class:`NotLive` once we know we were fenced."""
        if self._fenced:
            raise NotLive()

    def troubled(self) -> None:
        """A heartbeat failed, or came after we had stopped acting: see
        :meth:`may_fence`."""
        self._troubled_at = self._monotonic()

    def may_fence(self) -> bool:
        """Whether we may fence the workers whose liveness lapsed: not within a lease
        of our own trouble, when theirs may have the same cause (an outage)."""
        return self._monotonic() - self._troubled_at >= self._lease_seconds

    def moved(self) -> None:
        """The loop moved on (a tick began, or it goes on to its next step): see
        :meth:`stalled`."""
        self._moved_at = self._monotonic()

    def next_action(self) -> bool:
        """The loop goes on to act on its next claim: it moved on, and may it act?"""
        self.moved()
        return self.may_act()

    def stalled(self, stall_seconds: float) -> bool:
        """Whether the loop has not moved on for ``stall_seconds`` (0: never stalled)."""
        return bool(stall_seconds) and self._monotonic() - self._moved_at > stall_seconds


def margin(lease_seconds: float, heartbeat_seconds: float) -> float:
    """How long before its liveness could lapse a worker stops acting: a heartbeat, so a
    single late renewal costs nothing, but at most half the lease."""
    return min(heartbeat_seconds, lease_seconds / 2)


class Heartbeat(threading.Thread):
    """Calls ``beat`` every ``interval`` seconds until ``stop`` is set. A beat that fails
    is logged and tried again at the next interval; the loop pauses meanwhile."""

    def __init__(self, beat: Callable[[], object], interval: float,
                 stop: threading.Event) -> None:
        super().__init__(name="kiln-heartbeat", daemon=True)
        self._beat = beat
        self._interval = interval
        self._stop_event = stop

    def run(self) -> None:
        failing = False
        while not self._stop_event.wait(self._interval):
            try:
                self._beat()
            except DatabaseUnavailable as exc:
                if not failing:  # once per outage, not every half second
                    LOG.warning("heartbeat failed, retrying: %s", exc.message)
                failing = True
                continue
            except Exception:  # noqa: BLE001 -- the heartbeat outlives every bug it meets
                LOG.exception("heartbeat failed; retrying")
                failing = True
                continue
            if failing:
                LOG.info("heartbeat renewed again")
            failing = False
