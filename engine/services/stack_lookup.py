"""Finding the tenant's stack a request names: by name and id (the stack's own paths), or
by one of the two (the lookups that redirect to those paths)."""

from __future__ import annotations

import uuid

from engine.context import RequestContext
from engine.db import stack_rows
from engine.db.models import Stack
from engine.db.session import DbLookups, DbSession
from engine.db.stack_rows import ShownStack, StackName
from engine.errors import EntityNotFound


def named_stack(session: DbSession, ctx: RequestContext, name: str, stack_id: str) -> Stack:
    """The tenant's stack ``name``/``stack_id``, soft-deleted ones too; 404 otherwise."""
    if not is_uuid(stack_id):
        raise EntityNotFound(entity="Stack", name=name)
    return stack_rows.get_stack(session, ctx.tenant_id, name, stack_id)


def shown_stack(reads: DbLookups, ctx: RequestContext, name: str, stack_id: str
                ) -> ShownStack:
    """:func:`named_stack` as a show reads it (``stack_rows.shown_stack``)."""
    if not is_uuid(stack_id):
        raise EntityNotFound(entity="Stack", name=name)
    return stack_rows.shown_stack(reads, ctx.tenant_id, name, stack_id)


def stack_by_name_or_id(reads: DbLookups, ctx: RequestContext, name_or_id: str
                        ) -> StackName:
    """A stack named by id (deleted ones too) or by live name; 404 otherwise."""
    stack = None
    if is_uuid(name_or_id):
        stack = stack_rows.find_stack_by_id(reads, ctx.tenant_id, name_or_id)
    if stack is None:
        stack = stack_rows.find_live_stack_by_name(reads, ctx.tenant_id, name_or_id)
    if stack is None:
        raise EntityNotFound(entity="Stack", name=name_or_id)
    return stack


def is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False
