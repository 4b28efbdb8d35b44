"""Breakpoints in the worker (``specs/breakpoints.rst``): the hook a step reaches before
its action and the one after it, placed as Heat's ``Resource._break_if_required`` places
them, and the step's pause there.

A step at a hook is parked (``leases.park_step``): no worker holds it, nothing polls it,
until the signal that clears the hook wakes it (``resource_requests.unset_hook``) or its
operation ends (a time-out or a cancel closes it, ``transitions.abort_open_steps``). The
step's worker writes the pause's event (Heat's ``CREATE paused until Hook pre-create is
cleared``), with the resource's state as it stands: a pre hook is reached before the
resource is touched (``INIT_COMPLETE`` for a create), a post hook once its action
completed.

Where Heat puts them: ``pre-create``/``post-create`` on the creates of a stack create
(not on an update's new resources, nor on a replacement); ``pre-update`` on every update
step of an existing resource, whether it then changes, is replaced or stays (Heat's
``Resource.update`` breaks before it decides), ``post-update`` after an update in place;
``pre-delete``/``post-delete`` on the deletes of a stack delete of resources that were
created. A rollback is an update, as in Heat.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from collections.abc import Mapping
from typing import Any

import cachetools

from engine import reasons
from engine.db import event_rows, hooks
from engine.db.leases import LeaseLost, park_step
from engine.db.models import Operation, Stack, Step
from engine.db.models import Resource as ResourceRow
from engine.db.session import DbSession
from engine.template.environment import HOOKS, resource_hooks
from engine.vocabulary import Action, Hook, Status
from engine.worker.step_decision import per_operation

# How long past its operation's deadline a parked step stays unclaimed when nothing
# wakes it: the operation's time-out closes it first; should that be late, a worker then
# finds the hook still set and parks the step again.
PARK_MARGIN = datetime.timedelta(seconds=60)

# The operation and step actions each pair of hooks belongs to.
_POINTS: dict[tuple[str, str], tuple[Hook, Hook]] = {
    (Action.CREATE, Action.CREATE): (Hook.PRE_CREATE, Hook.POST_CREATE),
    (Action.UPDATE, Action.UPDATE): (Hook.PRE_UPDATE, Hook.POST_UPDATE),
    (Action.ROLLBACK, Action.UPDATE): (Hook.PRE_UPDATE, Hook.POST_UPDATE),
    # A snapshot's restore is an update to the snapshot's definition, as in Heat.
    (Action.RESTORE, Action.UPDATE): (Hook.PRE_UPDATE, Hook.POST_UPDATE),
    (Action.DELETE, Action.DELETE): (Hook.PRE_DELETE, Hook.POST_DELETE),
}


class Wait(enum.Enum):
    GO = "go"  # no hook in the way: prepare the step
    PAUSED = "paused"  # it waits at a hook, parked: leave it
    PASSED = "passed"  # its action done and its post hook cleared: close it quietly


@dataclasses.dataclass(frozen=True)
class _Operation:
    """What the breakpoints need of one operation, read once per operation: its stack's
    ``resources`` entries when some set hooks (else none, and nothing more is read)."""

    resources: Mapping[str, Any] | None
    action: str = ""
    deadline: datetime.datetime | None = None


class Breakpoints:
    """The breakpoints of the steps ``owner`` holds."""

    def __init__(self, owner: str) -> None:
        self._owner = owner
        self._operations: cachetools.LRUCache[str, _Operation] = per_operation()

    def before(self, session: DbSession, step: Step, stack: Stack, row: ResourceRow,
               now: datetime.datetime) -> Wait:
        """Where a claimed step stands against its hooks before it is prepared: paused
        at its pre hook now (the first time, with the event) or still, past its post
        hook, or free to go on."""
        operation, set_here = self._hooks_on(session, step, stack, row)
        points = _POINTS.get((operation.action, step.action))
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
        operation, set_here = self._hooks_on(session, step, stack, row)
        points = _POINTS.get((operation.action, step.action))
        if points is None or points[1] not in set_here or action != step.action:
            return None
        return points[1] if _acts_on(step.action, row) else None

    def pause(self, session: DbSession, operation_id: str, step_id: int, stack: Stack,
              row: ResourceRow, hook: str, now: datetime.datetime) -> None:
        """Park the step at ``hook`` and record it (:meth:`park`, :meth:`record`)."""
        self.park(session, operation_id, step_id, now)
        self.record(session, step_id, stack, row, hook, now)

    def park(self, session: DbSession, operation_id: str, step_id: int,
             now: datetime.datetime) -> None:
        """Park the step (LeaseLost, and nothing written, if it is not ours): the first
        write of a pause, so a lost lease writes nothing of it. Unless a clear wakes it,
        it waits past its operation's deadline, whose time-out closes it."""
        operation = self._operations.get(operation_id)
        deadline = operation.deadline if operation is not None else None
        until = max(deadline or now, now) + PARK_MARGIN
        if not park_step(session, self._owner, step_id, until):
            raise LeaseLost()

    @staticmethod
    def record(session: DbSession, step_id: int, stack: Stack, row: ResourceRow, hook: str,
               now: datetime.datetime) -> None:
        """The hook reached, and Heat's event on the resource as it stands."""
        hooks.reach(session, step_id, row.id, hook, now)
        event_rows.add_event(session, stack_id=stack.id, resource_name=row.name,
                             physical_resource_id=row.physical_id or "",
                             resource_type=row.type, action=row.action, status=row.status,
                             reason=reasons.hook_reached(_action_of(hook), hook), now=now)

    def _hooks_on(self, session: DbSession, step: Step, stack: Stack, row: ResourceRow
                  ) -> tuple[_Operation, frozenset[str]]:
        """The step's operation, and the hooks its environment sets on the resource."""
        operation = self._operations.get(step.operation_id)
        if operation is None:
            operation = self._operations[step.operation_id] = _read(session, step, stack)
        if operation.resources is None:
            return operation, frozenset()
        return operation, resource_hooks({"resources": operation.resources}, row.name)


def _read(session: DbSession, step: Step, stack: Stack) -> _Operation:
    """The stack's ``resources`` entries as the operation defines it (an update's target
    is the stack's definition from its plan on), and, when some set a hook anywhere, the
    operation's action and deadline."""
    registry = (stack.environment or {}).get("resource_registry") or {}
    resources = registry.get("resources") or {}
    if not any(isinstance(entry, Mapping) and HOOKS in entry for entry in resources.values()):
        return _Operation(None)
    operation = session.get(Operation, step.operation_id)
    assert operation is not None, f"operation {step.operation_id} vanished under its steps"
    return _Operation(resources, operation.action, operation.deadline_at)


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
