"""The poison rule: an operation phase or a step that keeps failing on an unexpected error
(a Kiln bug, not a plugin's failure, which is state already) ends after a few tries a
short wait apart, instead of being retried every lease for ever.

Tries are counted in the database (``operations.failures``, ``steps.failures``): each
claim adds one before anything runs, and progress (a completed phase, a saved step) sets
the count back to 0. So a try that raised and a try whose worker died during it (SIGKILL,
``os._exit``, the out-of-memory killer) count alike, in whichever worker comes next.
A claim that finds more than ``attempts`` tries counted gives up: the step or operation
is failed with :func:`internal_error` as its reason, without running what kept failing.
"""

from __future__ import annotations

import dataclasses
import datetime

# However many attempts are configured, a retry waits no longer than this.
MAX_BACKOFF_SECONDS = 60.0


@dataclasses.dataclass(frozen=True)
class PoisonRule:
    # Tries of one phase or step ([engine] internal_error_attempts).
    attempts: int = 3
    # Wait before the second try, doubled before each further one
    # ([engine] internal_error_backoff_seconds).
    backoff_seconds: float = 0.5

    def spent(self, failures: int) -> bool:
        """Whether a claim that counts ``failures`` (its own included) must give up."""
        return failures > self.attempts

    def backoff(self, failures: int) -> datetime.timedelta:
        """How long to wait after the ``failures``-th try failed."""
        doublings = min(max(failures, 1) - 1, 16)
        return datetime.timedelta(
            seconds=min(self.backoff_seconds * 2 ** doublings, MAX_BACKOFF_SECONDS))

    def internal_error(self, subject: str, request_id: str) -> str:
        """The reason tenants read: that Kiln failed (not their template), and what an
        operator greps the engine log for."""
        request = f" (request {request_id})" if request_id else ""
        return (f"Kiln failed unexpectedly (an internal error, {self.attempts} "
                f"{'try' if self.attempts == 1 else 'tries'}); the operator can find "
                f"{subject}{request} in the engine log")
