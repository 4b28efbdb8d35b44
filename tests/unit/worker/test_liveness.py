"""engine.worker.liveness: when a worker may act on its claims, by its own monotonic clock
(a lease less a heartbeat after the start of its last successful renewal), its fence for
good, the loop's stall, and the heartbeat thread that outlives its failures."""

from __future__ import annotations

import threading

import pytest

from engine.errors import DatabaseUnavailable
from engine.worker.liveness import Heartbeat, Liveness, NotLive, margin


class Monotonic:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_worker_acts_until_a_lease_less_a_heartbeat_after_its_renewal_began() -> None:
    clock = Monotonic()
    liveness = Liveness(2.0, 0.5, clock)
    assert not liveness.may_act(), "not before its first renewal"

    liveness.renewed(100.0)
    clock.now = 101.499
    assert liveness.may_act()
    clock.now = 101.5
    assert not liveness.may_act()
    with pytest.raises(NotLive):
        liveness.check()

    liveness.renewed(101.4)  # a late renewal: it began before the stop, so it counts
    assert liveness.may_act()
    liveness.renewed(100.0)  # an older one, answered later, changes nothing
    clock.now = 102.899
    assert liveness.may_act()


def test_the_margin_is_a_heartbeat_but_at_most_half_the_lease() -> None:
    assert margin(2.0, 0.5) == 0.5
    assert margin(1.0, 0.8) == 0.5


def test_a_fenced_worker_never_acts_again() -> None:
    clock = Monotonic()
    liveness = Liveness(2.0, 0.5, clock)
    liveness.renewed(100.0)
    liveness.fence()
    liveness.renewed(100.0)
    assert liveness.fenced and not liveness.may_act()


def test_a_loop_that_does_not_move_on_is_stalled() -> None:
    clock = Monotonic()
    liveness = Liveness(2.0, 0.5, clock)
    liveness.renewed(100.0)
    clock.now = 160.5
    assert liveness.stalled(60.0)
    assert not liveness.stalled(0.0), "0: never"
    assert not liveness.next_action(), "past its lease too"
    assert not liveness.stalled(60.0), "asking to act is moving on"


def test_the_heartbeat_beats_every_interval_and_outlives_its_failures() -> None:
    stop, beats = threading.Event(), []

    def beat() -> None:
        beats.append(1)
        if len(beats) == 1:
            raise DatabaseUnavailable(reason="down")
        if len(beats) == 2:
            raise TypeError("a bug")
        if len(beats) == 4:
            stop.set()

    heartbeat = Heartbeat(beat, 0.01, stop)
    heartbeat.start()
    heartbeat.join(5)
    assert not heartbeat.is_alive() and len(beats) == 4


def test_after_its_own_trouble_a_worker_fences_nobody_for_a_lease() -> None:
    clock = Monotonic()
    liveness = Liveness(2.0, 0.5, clock)
    assert liveness.may_fence(), "a new worker may"
    liveness.troubled()
    clock.now = 101.999
    assert not liveness.may_fence()
    clock.now = 102.0
    assert liveness.may_fence()
