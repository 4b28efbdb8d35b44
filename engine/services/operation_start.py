"""Starting an operation on an existing stack: the rules every stack request shares.

The stack row is locked, the request refused when the stack is gone (404) or busy (409,
decided by the database's one-unfinished-operation index), and otherwise the operation
is stored, the stack shown ``<ACTION>_IN_PROGRESS`` and the "started" event written, all
in the caller's transaction, so the response already shows the new state.
"""

from __future__ import annotations

import datetime

from engine import reasons
from engine.context import RequestContext
from engine.db import stack_rows, transitions
from engine.db.models import OperationContext, OperationPayload, Stack
from engine.db.session import DbSession
from engine.errors import ActionInProgress, EntityNotFound
from engine.vocabulary import Status


def request_context(ctx: RequestContext) -> OperationContext:
    """The requester, as stored with an operation for its lifecycle calls."""
    return {"tenant_id": ctx.tenant_id, "token_tenant_id": ctx.token_tenant_id,
            "role": ctx.role, "request_id": ctx.request_id, "username": ctx.username}


def start_operation(session: DbSession, ctx: RequestContext, name: str, stack_id: str,
                    action: str, now: datetime.datetime, default_timeout_seconds: int,
                    payload: OperationPayload | None = None,
                    timeout_seconds: int | None = None) -> Stack:
    """Store ``action`` on the tenant's stack; returns the stack, now IN_PROGRESS."""
    stack, _ = stack_rows.lock_stack(session, ctx.tenant_id, name, stack_id)
    if stack.deleted_at is not None:
        raise EntityNotFound(entity="Stack", name=name)
    if stack.status == Status.IN_PROGRESS:
        raise ActionInProgress(stack_name=stack.name, action=stack.action)
    timeout = timeout_seconds or (stack.timeout_mins or 0) * 60 or default_timeout_seconds
    operation = transitions.new_operation(request_context(ctx), stack.id, action, now,
                                          timeout, payload)
    transitions.begin(session, stack, operation, reasons.stack_started(action), now)
    return stack
