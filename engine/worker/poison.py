"""The poison rule: an operation phase or a step that keeps failing on an unexpected error
(a Kiln bug, not a plugin's failure, which is state already) ends after a few tries a
short wait apart, instead of being retried every lease for ever.

Tries are counted in the database (``operations.failures``, ``steps.failures``): each
claim adds one before anything runs, and progress sets the count back to 0 (for an
operation a completed phase; for a step its action started, with a new token, or its
close; a look that finds it still waiting is not progress). So a try that raised and a
try whose worker died during it (SIGKILL, ``os._exit``, the out-of-memory killer) count
alike, in whichever worker comes next. A claim given back unfinished through no fault of
its own (a graceful stop, a database outage, a round cut short) takes its try back
(``leases.give_back_steps``, ``give_back_operations``). A claim that finds more than
``attempts`` tries counted gives up: the step or operation is failed with
:meth:`PoisonRule.internal_error` as its reason, without running what kept failing.
"""

from __future__ import annotations

import dataclasses
import datetime

from engine import config
from engine.errors import InternalError

# However many attempts are configured, a retry waits no longer than this.
MAX_BACKOFF_SECONDS = 60.0


@dataclasses.dataclass(frozen=True)
class PoisonRule:
    # Tries of one phase or step ([engine] internal_error_attempts).
    attempts: int = config.declared_default("engine", "internal_error_attempts")
    # Wait before the second try, doubled before each further one
    # ([engine] internal_error_backoff_seconds).
    backoff_seconds: float = config.declared_default("engine",
                                                     "internal_error_backoff_seconds")

    def spent(self, failures: int) -> bool:
        """Whether a claim that counts ``failures`` (its own included) must give up."""
        return failures > self.attempts

    @property
    def alone_from(self) -> int:
        """The count (before a claim) from which a suspect step runs alone: suspects
        with fewer run together, in a round of their own, only while one more death
        there would still leave each a try alone (so a step that kills its workers
        after a crash spends its own tries, not those of the round it was in)."""
        return max(1, self.attempts - 1)

    def backoff(self, failures: int) -> datetime.timedelta:
        """How long to wait after the ``failures``-th try failed."""
        doublings = min(max(failures, 1) - 1, 16)
        return datetime.timedelta(
            seconds=min(self.backoff_seconds * 2 ** doublings, MAX_BACKOFF_SECONDS))

    def internal_error(self, subject: str, request_id: str) -> InternalError:
        """The reason tenants read: that Kiln failed (not their template), and what an
        operator greps the engine log for."""
        request = f" (request {request_id})" if request_id else ""
        return InternalError(
            tries=f"{self.attempts} {'try' if self.attempts == 1 else 'tries'}",
            subject=f"{subject}{request}")
