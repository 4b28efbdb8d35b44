"""``OS::Heat::Delay``: a pause at a chosen point of a stack's create, delete, suspend or
resume, measured on the runtime clock without holding a thread."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, ClassVar

from engine.resources.base import Resource, Token, bounded_wait
from engine.schema import LIST, NUMBER, AllowedValues, Property, Range
from engine.vocabulary import Action

ACTIONS = (Action.CREATE, Action.DELETE, Action.SUSPEND, Action.RESUME)


class Delay(Resource):
    """A resource that pauses for a configurable delay.

    Placed in the dependency graph, it delays what depends on it during CREATE and
    SUSPEND, and what it depends on during DELETE and RESUME. The wait is ``min_wait``
    plus a jitter drawn uniformly between 0 and ``max_jitter * jitter_multiplier``
    seconds, and happens only during the ``actions`` listed. It has no physical id and no
    attributes; ``get_resource`` gives its name, as in Heat.
    """

    support_version: ClassVar[str] = "11.0.0"

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "min_wait": Property(
            NUMBER, "Minimum time in seconds to wait during the specified actions.",
            default=0, update_allowed=True, constraints=(Range(min=0),),
        ),
        "max_jitter": Property(
            NUMBER, "Maximum jitter to add to the minimum wait time.",
            default=0, update_allowed=True, constraints=(Range(min=0),),
        ),
        "jitter_multiplier": Property(
            NUMBER, "Number of seconds to multiply the maximum jitter value by.",
            default=1.0, update_allowed=True, constraints=(Range(min=0),),
        ),
        "actions": Property(
            LIST, "Actions during which the delay will occur.",
            default=[Action.CREATE], update_allowed=True,
            constraints=(AllowedValues(ACTIONS),),
        ),
    }

    def handle_create(self) -> Token:
        return self._start(Action.CREATE)

    def check_create_complete(self, token: Token) -> bool:
        return self._waited(token)

    def handle_delete(self) -> Token:
        return self._start(Action.DELETE)

    def check_delete_complete(self, token: Token) -> bool:
        return self._waited(token)

    def handle_suspend(self) -> Token:
        return self._start(Action.SUSPEND)

    def check_suspend_complete(self, token: Token) -> bool:
        return self._waited(token)

    def handle_resume(self) -> Token:
        return self._start(Action.RESUME)

    def check_resume_complete(self, token: Token) -> bool:
        return self._waited(token)

    def _start(self, action: str) -> dict[str, Any]:
        """Draw this action's wait and record its deadline in ``data`` and the token."""
        wait = 0.0
        if action in (self.properties["actions"] or []):
            # Each number bounded before any arithmetic: 1e300 * 1e300 is infinite and a
            # huge int times a float overflows.
            jitter = (bounded_wait(self.properties["max_jitter"])
                      * bounded_wait(self.properties["jitter_multiplier"]))
            # NOTE: not a secret, only a spread of start times: the plain PRNG suffices.
            wait = bounded_wait(bounded_wait(self.properties["min_wait"])
                                + jitter * random.random())
        pending = {"action": action, "deadline": self.runtime.now() + wait}
        # Saved with the token when the start returns: a worker that picks the wait up
        # after this one died continues to the same deadline.
        self.data["delay"] = pending
        return dict(pending)

    def next_check_in(self, token: Token) -> float | None:
        return float(token["deadline"]) - self.runtime.now() if token else None

    def _waited(self, token: Token) -> bool:
        pending = self.data.get("delay")
        if not isinstance(pending, Mapping) or pending.get("action") != token["action"]:
            pending = token
        if self.runtime.now() < pending["deadline"]:
            return False
        self.data.pop("delay", None)
        return True
