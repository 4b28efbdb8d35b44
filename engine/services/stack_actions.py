"""Stack actions (suspend, resume, check, cancel), abandon and export.

Each real action becomes an operation the workers run (with lifecycle pre- and post-ops),
refused first while too many wait for a worker (``engine.services.backlog``); a cancel is
a request on the running operation, which a worker ends as failed, and is never refused.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from engine.clock import Clock
from engine.context import RequestContext
from engine.db import resource_rows, stack_rows, transitions
from engine.db.session import Database, DbSession
from engine.errors import BadRequest, EntityNotFound
from engine.resources.abandon_data import layout, shown
from engine.resources.registry import ResourceTypeRegistry
from engine.services.backlog import Backlog
from engine.services.operation_start import start_operation
from engine.vocabulary import Action, CancelReason, Status

RUNS = {"suspend": Action.SUSPEND, "resume": Action.RESUME, "check": Action.CHECK}
CANCELS = (CancelReason.CANCEL_UPDATE, CancelReason.CANCEL_WITHOUT_ROLLBACK)


class StackActions:
    def __init__(self, db: Database, clock: Clock, default_timeout_seconds: int, *,
                 backlog: Backlog | None = None,
                 registry: ResourceTypeRegistry | None = None) -> None:
        """``backlog``: the bound an action that queues an operation is checked against;
        None: no bound. ``registry``: the types, whose secret data abandon and export
        mask; None: no type's (only for callers that neither abandon nor export)."""
        self._db = db
        self._registry = registry or ResourceTypeRegistry({})
        self._clock = clock
        self._default_timeout = default_timeout_seconds
        self._backlog = backlog or Backlog(db, clock, -1)

    def act(self, ctx: RequestContext, name: str, stack_id: str, body: Any) -> None:
        """``POST .../actions``: exactly one of suspend, resume, check and the cancels."""
        action = _one_action(body)
        if action not in CANCELS:
            self._backlog.check()
        now = self._clock()
        for attempt in self._db.retrying():
            with attempt as session:
                if action in CANCELS:
                    self._cancel(session, ctx, name, stack_id, action, now)
                    return
                stack = stack_rows.get_stack(session, ctx.tenant_id, name, stack_id)
                if action == "suspend" and (stack.action, stack.status) == (
                        Action.SUSPEND, Status.COMPLETE):
                    return  # Heat: suspending a suspended stack is a no-op
                start_operation(session, ctx, name, stack_id, RUNS[action], now,
                                self._default_timeout)

    def _cancel(self, session: DbSession, ctx: RequestContext, name: str, stack_id: str,
                action: str, now: datetime.datetime) -> None:
        stack, operation = stack_rows.lock_stack(session, ctx.tenant_id, name, stack_id)
        allowed = ((Action.UPDATE,) if action == CancelReason.CANCEL_UPDATE
                   else (Action.CREATE, Action.UPDATE))
        if stack.status != Status.IN_PROGRESS or stack.action not in allowed or operation is None:
            raise BadRequest(reason=f"Cancelling update when stack is "
                                    f"{stack.action}_{stack.status} is not supported.")
        transitions.request_cancel(operation, CancelReason(action), now)

    def abandon(self, ctx: RequestContext, name: str, stack_id: str) -> dict[str, Any]:
        """``DELETE .../abandon``: the data to adopt the stack elsewhere; the stack record
        goes (after the lifecycle pre-ops agree), its resources stay."""
        self._backlog.check()
        for attempt in self._db.retrying():
            with attempt as session:
                data = self._data(session, ctx, name, stack_id)
                start_operation(session, ctx, name, stack_id, Action.ABANDON, self._clock(),
                                self._default_timeout)
        return data

    def export(self, ctx: RequestContext, name: str, stack_id: str) -> dict[str, Any]:
        """``GET .../export``: the abandon data; nothing changes."""
        with self._db.read() as session:
            return self._data(session, ctx, name, stack_id)

    def _data(self, session: DbSession, ctx: RequestContext, name: str,
              stack_id: str) -> dict[str, Any]:
        stack = stack_rows.get_stack(session, ctx.tenant_id, name, stack_id)
        if stack.deleted_at is not None:
            raise EntityNotFound(entity="Stack", name=name)
        # Heat's abandon layout, masked as every view of it is (``abandon_data.shown``).
        return shown(layout(stack, resource_rows.list_resources(session, stack.id),
                            stack.status), self._registry)


def _one_action(body: Any) -> str:
    if not isinstance(body, Mapping) or not body:
        raise BadRequest(reason="No action specified")
    if len(body) > 1:
        raise BadRequest(reason="Multiple actions specified")
    action = next(iter(body))
    if action not in RUNS and action not in CANCELS:
        raise BadRequest(reason=f"Invalid action {action} specified")
    return str(action)
