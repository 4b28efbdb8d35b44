"""Operation rows: the one place an operation's fields are filled in, and the writes that
start one on a stack (shared by tenant requests and by parents of nested stacks)."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select

from engine.db import queries
from engine.db.models import Operation, Stack
from engine.db.states import OP_PENDING, STACK_ACTION


def new_operation(context: Mapping[str, Any], stack_id: str, action: str,
                  now: datetime.datetime, timeout_seconds: int,
                  payload: Any = None) -> Operation:
    """A PENDING operation. ``context`` is the requester's (tenant, role, request id):
    lifecycle plugins are called with it, as Heat calls them with the request's."""
    return Operation(id=str(uuid.uuid4()), stack_id=stack_id, action=action, state=OP_PENDING,
                     attempt=0, created_at=now, context=dict(context), lifecycle={},
                     payload=payload,
                     deadline_at=now + datetime.timedelta(seconds=timeout_seconds))


def begin(session: Any, stack: Stack, operation: Operation, now: datetime.datetime) -> None:
    """Store ``operation`` on ``stack`` (ActionInProgress if one is unfinished) and show
    the stack ``<ACTION>_IN_PROGRESS`` with its "started" event, in the caller's
    transaction."""
    queries.add_operation(session, stack, operation)
    action = operation.action
    stack.action, stack.status = STACK_ACTION.get(action, action), "IN_PROGRESS"
    stack.status_reason = f"Stack {action} started"
    if action not in ("DELETE", "ABANDON"):
        stack.updated_at = now
    queries.add_stack_event(session, stack, now)


def cancel_then_delete(session: Any, stack: Stack, running: Operation,
                       context: Mapping[str, Any], timeout_seconds: int,
                       now: datetime.datetime) -> None:
    """Have ``running`` ended now (without rollback) and a DELETE follow it, as Heat's
    delete of a busy stack does: a worker claims an operation past its deadline, and the
    payload says why and what comes next (see OperationDriver._time_out)."""
    running.payload = {**(running.payload or {}), "cancelled": "delete", "then": {
        "action": "DELETE", "context": dict(context), "timeout_seconds": timeout_seconds}}
    running.deadline_at = now
    stack.action, stack.status = "DELETE", "IN_PROGRESS"
    stack.status_reason = "Stack DELETE started"
    queries.add_stack_event(session, stack, now)


def request_id_of(session: Any, operation_id: str) -> str:
    """The id of the request that started the operation ("" if not recorded): its log
    lines and an internal-error reason carry it, so an operator can follow one request
    from the API's log to the engine's."""
    context = session.scalar(select(Operation.context).where(Operation.id == operation_id))
    return str((context or {}).get("request_id", ""))
