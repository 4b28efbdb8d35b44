"""SQLite's one write lock, handed to this process's writers in turn.

SQLite lets one transaction write at a time. A writer that finds the lock taken waits in
SQLite's busy handler, which sleeps for up to 100 ms at a time, and any writer arriving
while it sleeps takes the lock first. Under a stream of API writes in ``kiln-all`` a
worker's transactions waited a mean 56 ms for the lock and up to 4 s, most of the time
asleep while the lock was free. Queued here instead, first come first served, each writer
is handed the lock by the one before (``engine.db.session`` takes a turn just before
``BEGIN IMMEDIATE`` and gives it back when the connection returns to the pool, so the
turn covers exactly the time SQLite's lock is held). Writers of other processes (a
``kiln-manage`` command) still meet SQLite's busy handler.
"""

from __future__ import annotations

import collections
import threading


class WriteTurns:
    """A first-come first-served lock, reentrant per thread (a transaction opened inside
    another one's thread is the same writer, as it was before: SQLite would make it wait
    for itself)."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._owner: int | None = None
        self._depth = 0
        self._waiting: collections.deque[tuple[int, threading.Lock]] = collections.deque()

    def take(self, timeout: float) -> bool:
        """Wait for this thread's turn; False after ``timeout`` seconds without it (the
        caller then meets SQLite's own wait and its "database is locked", as before: a
        writer that waits on another thread of its own while holding its turn must not
        hang for ever)."""
        me = threading.get_ident()
        with self._mutex:
            if self._owner is None or self._owner == me:
                self._owner = me
                self._depth += 1
                return True
            handed = threading.Lock()
            handed.acquire()
            entry = (me, handed)
            self._waiting.append(entry)
        # Released by the writer before, once it made this one the owner.
        if handed.acquire(timeout=timeout):
            return True
        with self._mutex:
            if entry in self._waiting:
                self._waiting.remove(entry)
                return False
        return True  # handed over just as the wait ended

    def give_back(self) -> None:
        with self._mutex:
            self._depth -= 1
            if self._depth:
                return
            if self._waiting:
                self._owner, handed = self._waiting.popleft()
                self._depth = 1
                handed.release()
            else:
                self._owner = None
