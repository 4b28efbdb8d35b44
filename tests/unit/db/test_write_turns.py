"""engine/db/write_turns.py: one writer at a time, in the order they came, reentrant per
thread, and a bounded wait."""

from __future__ import annotations

import threading
import time

from engine.db.write_turns import WriteTurns


def test_writers_get_their_turns_in_the_order_they_came() -> None:
    turns = WriteTurns()
    assert turns.take(1)
    order: list[int] = []
    waiting = []
    for n in range(5):
        def writer(n: int = n) -> None:
            assert turns.take(5)
            order.append(n)
            turns.give_back()
        thread = threading.Thread(target=writer)
        thread.start()
        waiting.append(thread)
        time.sleep(0.02)  # each is queued before the next comes
    assert order == []  # none writes while the turn is held
    turns.give_back()
    for thread in waiting:
        thread.join(5)
    assert order == [0, 1, 2, 3, 4]


def test_a_thread_holding_its_turn_takes_it_again() -> None:
    turns = WriteTurns()
    assert turns.take(1)
    assert turns.take(1)  # a transaction inside another one's thread
    turns.give_back()
    other: list[bool] = []
    thread = threading.Thread(target=lambda: other.append(turns.take(0.05)))
    thread.start()
    thread.join(5)
    assert other == [False]  # still held by the outer one
    turns.give_back()
    assert turns.take(0.05)  # free again: taken at once


def test_a_wait_past_its_timeout_gives_up_and_leaves_the_queue() -> None:
    turns = WriteTurns()
    assert turns.take(1)
    late: list[bool] = []
    thread = threading.Thread(target=lambda: late.append(turns.take(0.05)))
    thread.start()
    thread.join(5)
    assert late == [False]
    turns.give_back()
    # The one that gave up is not handed the turn: the next writer gets it at once.
    taken: list[bool] = []
    thread = threading.Thread(target=lambda: taken.append(turns.take(0.05)))
    thread.start()
    thread.join(5)
    assert taken == [True]
