"""Breakpoints in the worker (``specs/breakpoints.rst``): the hook a step reaches before
its action and the one after it, placed as Heat's ``Resource._break_if_required`` places
them, and the step's pause there.

A step at a hook is parked (``leases.park_step``): no worker holds it, nothing polls it,
until the signal that clears the hook wakes it (``resource_requests.unset_hook``), another
step of its operation fails (``transitions.fail_step`` closes it, as Heat ends a wait when
a sibling fails) or its operation ends (a time-out or a cancel closes it,
``transitions.abort_open_steps``). The step's worker writes the pause's event (Heat's
``CREATE paused until Hook pre-create is cleared``), with the resource's state as it
stands: a pre hook is reached before the resource is touched (``INIT_COMPLETE`` for a
create), a post hook once its action completed.

Where Heat puts them: ``pre-create``/``post-create`` on the creates of a stack create
(not on an update's new resources, nor on a replacement); ``pre-update`` on every update
step of an existing resource, whether it then changes, is replaced or stays (Heat's
``Resource.update`` breaks before it decides), ``post-update`` after an update in place;
``pre-delete``/``post-delete`` on the deletes of a stack delete of resources that were
created. A rollback is an update, as in Heat.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Callable, Mapping
from typing import Any

import cachetools

from engine import reasons
from engine.db import event_rows, hooks
from engine.db.leases import LeaseLost, park_step
from engine.db.models import Resource as ResourceRow
from engine.db.models import Stack, Step
from engine.db.session import DbSession
from engine.template.environment import HOOKS, resource_hooks, sets_any
from engine.vocabulary import UPDATE_LIKE, Action, Hook, Status
from engine.worker.step_decision import per_operation

# How long past its operation's deadline a parked step stays unclaimed when nothing
# wakes it: the operation's time-out closes it first; should that be late, a worker then
# finds the hook still set and parks the step again.
PARK_MARGIN = datetime.timedelta(seconds=60)

# The operation and step actions each pair of hooks belongs to: an update's hooks on
# the update steps of every update-like operation (a rollback of an update and a
# snapshot's restore are updates, as in Heat).
_POINTS: dict[tuple[str, str], tuple[Hook, Hook]] = {
    (Action.CREATE, Action.CREATE): (Hook.PRE_CREATE, Hook.POST_CREATE),
    **{(operation, Action.UPDATE): (Hook.PRE_UPDATE, Hook.POST_UPDATE)
       for operation in UPDATE_LIKE},
    (Action.DELETE, Action.DELETE): (Hook.PRE_DELETE, Hook.POST_DELETE),
}


class Wait(enum.Enum):
    GO = "go"  # no hook in the way: prepare the step
    PAUSED = "paused"  # it waits at a hook, parked: leave it
    PASSED = "passed"  # its action done and its post hook cleared: close it quietly


class Breakpoints:
    """The breakpoints of the steps ``owner`` holds. ``action_of``: an operation's
    action, as the step decider reads it (once per operation)."""

    def __init__(self, owner: str, action_of: Callable[[DbSession, str], str]) -> None:
        self._owner = owner
        self._action_of = action_of
        # The stack's ``resources`` entries as each operation defines them when some set
        # a hook, else None: stacks without hooks pay one lookup per step.
        self._resources: cachetools.LRUCache[str, Mapping[str, Any] | None] = per_operation()

    def before(self, session: DbSession, step: Step, stack: Stack, row: ResourceRow,
               now: datetime.datetime) -> Wait:
        """Where a claimed step stands against its hooks before it is prepared: paused
        at its pre hook now (the first time, with the event) or still, past its post
        hook, or free to go on."""
        points, set_here = self._hooks_on(session, step, stack, row)
        if points is None or not set_here & set(points):
            return Wait.GO
        pre, post = points
        reached = hooks.reached(session, step.id)
        if post in reached:
            if reached[post]:
                return Wait.PASSED
            self.park(session, step.operation_id, step.id, now)
            return Wait.PAUSED
        if step.started or pre not in set_here or not _acts_on(step.action, row):
            return Wait.GO
        if pre in reached:
            if reached[pre]:
                return Wait.GO
            self.park(session, step.operation_id, step.id, now)
            return Wait.PAUSED
        self.pause(session, step.operation_id, step.id, stack, row, pre, now)
        return Wait.PAUSED

    def after(self, session: DbSession, step: Step, stack: Stack, row: ResourceRow,
              action: str) -> Hook | None:
        """The hook the step pauses at once ``action`` (what it decided to do) is done:
        only after the step's own action on a resource it acts on (a replacement's
        create or an adopt has none)."""
        points, set_here = self._hooks_on(session, step, stack, row)
        if points is None or points[1] not in set_here or action != step.action:
            return None
        return points[1] if _acts_on(step.action, row) else None

    def pause(self, session: DbSession, operation_id: str, step_id: int, stack: Stack,
              row: ResourceRow, hook: str, now: datetime.datetime) -> None:
        """Park the step at ``hook`` and record it (:meth:`park`, :meth:`_record`)."""
        self.park(session, operation_id, step_id, now)
        self._record(session, step_id, stack, row, hook, now)

    def pause_done(self, session: DbSession, operation_id: str, step_id: int, stack: Stack,
                   row: ResourceRow, hook: str, now: datetime.datetime,
                   complete: Callable[[], object]) -> None:
        """Park the step at its post hook ``hook``: its action is done, and ``complete``
        writes its resource's COMPLETE state (and event) before the pause's event."""
        self.park(session, operation_id, step_id, now)
        complete()
        self._record(session, step_id, stack, row, hook, now)

    def park(self, session: DbSession, operation_id: str, step_id: int,
             now: datetime.datetime) -> None:
        """Park the step (LeaseLost, and nothing written, if it is not ours): the first
        write of a pause, so a lost lease writes nothing of it. Unless a clear wakes it,
        it waits past its operation's deadline, whose time-out closes it."""
        if not park_step(session, self._owner, step_id, operation_id, now, PARK_MARGIN):
            raise LeaseLost()

    @staticmethod
    def _record(session: DbSession, step_id: int, stack: Stack, row: ResourceRow, hook: str,
                now: datetime.datetime) -> None:
        """The hook reached, and Heat's event on the resource as it stands."""
        hooks.reach(session, step_id, row.id, hook, now)
        event_rows.add_resource_event(session, stack, row,
                                      reasons.hook_reached(_action_of(hook), hook), now)

    def _hooks_on(self, session: DbSession, step: Step, stack: Stack, row: ResourceRow
                  ) -> tuple[tuple[Hook, Hook] | None, frozenset[str]]:
        """The pair of hooks the step may break at (None if its action has none), and
        the hooks its operation's environment sets on the resource."""
        if step.operation_id not in self._resources:
            self._resources[step.operation_id] = _hook_entries(stack)
        resources = self._resources[step.operation_id]
        if resources is None:
            return None, frozenset()
        points = _POINTS.get((self._action_of(session, step.operation_id), step.action))
        return points, resource_hooks({"resources": resources}, row.name)


def _hook_entries(stack: Stack) -> Mapping[str, Any] | None:
    """The stack's ``resources`` entries as the operation defines it (an update's target
    is the stack's definition from its plan on) when some set a hook, else None."""
    registry = (stack.environment or {}).get("resource_registry") or {}
    return (registry.get("resources") or {}) if sets_any(registry, HOOKS) else None


def _acts_on(action: str, row: ResourceRow) -> bool:
    """Whether Heat's action would reach the resource's hooks: an update or a delete
    breaks only on a resource that was created (and is not deleted already)."""
    if action == Action.CREATE:
        return True
    return row.action != Action.INIT and (row.action, row.status) != (Action.DELETE,
                                                                      Status.COMPLETE)


def _action_of(hook: str) -> str:
    """The action a hook's event names: ``CREATE`` for ``pre-create``."""
    return hook.split("-", 1)[1].upper()
