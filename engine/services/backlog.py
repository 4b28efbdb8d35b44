"""Back-pressure: a write that would queue an operation is refused while too many wait for
a worker (``[api] max_pending_operations``), instead of being accepted to wait there.

Every write that queues one asks first, before any other work: a stack create or adopt,
an update, a delete, the actions that run (suspend, resume, check), abandon, and a
snapshot or its restore. The cancels queue nothing (they end work) and are never
refused. The bound is the whole service's, since the workers are: an operation waits
behind every tenant's.

Asked in a read of its own when the request arrives, before the request's other work (a
create's template is not even parsed), so a refusal costs the API little and the workers
nothing. Requests arriving together may each pass it: the backlog can overshoot the bound
by the API's request threads.
"""

from __future__ import annotations

import datetime
import math

from engine.clock import Clock
from engine.db import backlog
from engine.db.session import Database
from engine.errors import BacklogFull

# Retry-After, in seconds: how long the oldest waiting operation has waited, the time
# the backlog takes to be started (Little's law), within these bounds.
MIN_RETRY_AFTER = 1
MAX_RETRY_AFTER = 60


class Backlog:
    def __init__(self, db: Database, clock: Clock, bound: int) -> None:
        """``bound``: the most operations let wait for their first worker; -1: none."""
        self._db = db
        self._clock = clock
        self._bound = bound

    def check(self) -> None:
        """Raise ``BacklogFull`` (503, with ``Retry-After``) when the bound is reached."""
        if self._bound < 0:
            return
        with self._db.read() as session:
            if backlog.count_unstarted(session, self._bound) < self._bound:
                return
            oldest = backlog.oldest_unstarted(session)
        raise BacklogFull(limit=self._bound, retry_after=self._retry_after(oldest))

    def _retry_after(self, oldest: datetime.datetime | None) -> int:
        waited = 0.0 if oldest is None else (self._clock() - oldest).total_seconds()
        return min(MAX_RETRY_AFTER, max(MIN_RETRY_AFTER, math.ceil(waited)))
