"""Stack rows and their operations: the lookups by tenant, name and id, the locks a write
request takes, and the inserts of a new stack or operation, the database's refusals
(``IntegrityError``) turned into ``StackExists`` and ``ActionInProgress``."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any, NamedTuple

from sqlalchemy import (
    Text,
    bindparam,
    cast,
    func,
    select,
)
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, defer
from sqlalchemy.orm.util import identity_key

from engine.db.event_rows import add_stack_event
from engine.db.models import Operation, OperationContext, Stack
from engine.db.stack_list import LISTED_COLUMNS, ListedStack
from engine.db.wakeup import work_written
from engine.errors import ActionInProgress, EntityNotFound, StackExists
from engine.ir.stored import StoredText

Now = datetime.datetime


class ShownStack(NamedTuple):
    """One stack as its show reads it: the columns a list shows too, and its definition
    as the database holds it, from which ``StoredIrs.if_valid_stored`` finds the stack's
    IR (its parameters, the outputs to resolve) without decoding the template."""

    stack: ListedStack
    definition: StoredText


# As text: CAST, not type_coerce, since psycopg itself decodes a jsonb value.
_DEFINITION = tuple(cast(column, Text) for column in (
    Stack.template, Stack.parameters, Stack.environment, Stack.files, Stack.facade))
# Built once: building a statement of twenty columns cost more than running it.
_SHOWN = select(*LISTED_COLUMNS, *_DEFINITION).where(Stack.id == bindparam("stack_id"),
                                                     Stack.tenant_id == bindparam("tenant_id"))
_SHOW = _SHOWN.where(Stack.name == bindparam("name"))
_LISTED = len(LISTED_COLUMNS)  # where the definition starts in a row of _SHOW
_STORED_OUTPUTS = select(Stack.outputs).where(Stack.id == bindparam("stack_id"))


def is_busy(session: Session, stack_id: str) -> bool:
    """Whether the stack has an unfinished operation (a read: nothing is locked)."""
    return session.scalar(select(func.count()).select_from(Operation).where(
        Operation.stack_id == stack_id, Operation.finished_at.is_(None))) != 0


def count_live_stacks(session: Session, tenant_id: str) -> int:
    """The tenant's top-level stacks that are not deleted (``max_stacks_per_tenant``;
    nested stacks come with their parent and are not counted, as in Heat)."""
    query = select(func.count()).select_from(Stack).where(
        Stack.tenant_id == tenant_id, Stack.deleted_at.is_(None), Stack.owner_id.is_(None))
    return session.scalar(query) or 0


def add_stack_with_operation(session: Session, stack: Stack, operation: Operation,
                             now: Now) -> None:
    """Insert a new stack, its first operation and its first event, or raise StackExists."""
    session.add(stack)
    try:
        session.flush()
    except IntegrityError as exc:
        raise StackExists(stack_name=stack.name) from exc
    session.add(operation)
    add_stack_event(session, stack, now)
    session.flush()
    work_written(session)


def lock_stack(session: Session, tenant_id: str, name: str,
               stack_id: str) -> tuple[Stack, Operation | None]:
    """The tenant's stack and its unfinished operation, both locked for a write request.

    Workers lock an operation row before its stack's row; a request locks them in the
    same order (the operation found by the URL's stack id first), so the two never wait
    on each other in a cycle (PostgreSQL would abort one as a deadlock)."""
    operation = unfinished_operation(session, stack_id)
    stack = get_stack(session, tenant_id, name, stack_id, for_update=True)
    return stack, operation


def unfinished_operation(session: Session, stack_id: str, *,
                         lock: bool = True) -> Operation | None:
    query = select(Operation).where(Operation.stack_id == stack_id,
                                    Operation.finished_at.is_(None))
    return session.scalars(query.with_for_update() if lock else query).first()


def last_finished_operation(session: Session, stack_id: str,
                            action: str | None = None) -> Operation | None:
    """The stack's operation (of ``action``, or of any) that finished last (``None`` if
    none did); its payload is read only if used (an update's holds two templates)."""
    query = select(Operation).options(defer(Operation.payload)).where(
        Operation.stack_id == stack_id, Operation.finished_at.is_not(None))
    if action is not None:
        query = query.where(Operation.action == action)
    return session.scalars(query.order_by(Operation.finished_at.desc()).limit(1)).first()


def request_id_of(session: Session, operation_id: str) -> str:
    """The id of the request that started the operation ("" if not recorded): its log
    lines and an internal-error reason carry it, so an operator can follow one request
    from the API's log to the engine's."""
    context = session.scalar(select(Operation.context).where(Operation.id == operation_id))
    return _request_id(context)


def running_request_id(session: Session, stack_id: str) -> str:
    """The request id of the stack's unfinished operation ("" if none, or not recorded),
    read without a lock: a nested stack's operations carry their parent's, so that one
    request is followed into its whole tree."""
    context = session.scalar(select(Operation.context).where(
        Operation.stack_id == stack_id, Operation.finished_at.is_(None)))
    return _request_id(context)


class OperationLabel(NamedTuple):
    """What log lines about an operation name (``engine.logs`` binds them): the request
    that started it, its tenant, and its stack by name and id."""

    operation_id: str
    request_id: str
    tenant_id: str
    stack_name: str
    stack_id: str


def operation_labels(session: Session, operation_ids: Iterable[str]
                     ) -> dict[str, OperationLabel]:
    """The labels of the operations that exist among ``operation_ids``, in one query."""
    ids = set(operation_ids)
    if not ids:
        return {}
    rows = session.execute(
        select(Operation.id, Operation.context, Stack.tenant_id, Stack.name, Stack.id)
        .join(Stack, Stack.id == Operation.stack_id).where(Operation.id.in_(ids)))
    return {operation_id: OperationLabel(operation_id, _request_id(context), tenant_id, name,
                                         stack_id)
            for operation_id, context, tenant_id, name, stack_id in rows}


def _request_id(context: OperationContext | None) -> str:
    """The request id an operation's stored context holds ("" before they were kept)."""
    return str(context.get("request_id", "") if context else "")


def add_operation(session: Session, stack: Stack, operation: Operation) -> None:
    """Insert an operation, or raise ActionInProgress if the stack already has one."""
    try:
        with session.begin_nested():
            session.add(operation)
            session.flush()
    except IntegrityError as exc:
        raise ActionInProgress(stack_name=stack.name, action=stack.action) from exc
    work_written(session)


class StackName(NamedTuple):
    """What a lookup finds of a stack: all that the redirect to its own URL needs."""

    name: str
    id: str


_BY_ID = select(Stack.name, Stack.id).where(Stack.id == bindparam("stack_id"),
                                            Stack.tenant_id == bindparam("tenant_id"))
_LIVE_BY_NAME = (select(Stack.name, Stack.id)
                 .where(Stack.tenant_id == bindparam("tenant_id"),
                        Stack.name == bindparam("name"), Stack.deleted_at.is_(None))
                 .order_by(Stack.created_at).limit(1))


def find_stack_by_id(reads: Connection | Session, tenant_id: str, stack_id: str
                     ) -> StackName | None:
    """By id, soft-deleted stacks included (as Heat's UUID lookups do)."""
    row = reads.execute(_BY_ID, {"stack_id": stack_id, "tenant_id": tenant_id}).first()
    return None if row is None else StackName(*row)


def find_live_stack_by_name(reads: Connection | Session, tenant_id: str, name: str
                            ) -> StackName | None:
    row = reads.execute(_LIVE_BY_NAME, {"tenant_id": tenant_id, "name": name}).first()
    return None if row is None else StackName(*row)


def get_stack(session: Session, tenant_id: str, name: str, stack_id: str,
              *, for_update: bool = False) -> Stack:
    query = select(Stack).where(Stack.id == stack_id, Stack.tenant_id == tenant_id,
                                Stack.name == name)
    if for_update:
        query = query.with_for_update()
    stack = session.scalars(query).first()
    if stack is None:
        raise EntityNotFound(entity="Stack", name=name)
    return stack


def shown_stack(reads: Connection | Session, tenant_id: str, name: str, stack_id: str
                ) -> ShownStack:
    """The tenant's stack ``name``/``stack_id`` (soft-deleted ones too) as a show reads it,
    in one statement and no ORM object (``Database.lookups`` serves it); EntityNotFound
    otherwise."""
    row = reads.execute(_SHOW, {"stack_id": stack_id, "tenant_id": tenant_id,
                                "name": name}).first()
    if row is None:
        raise EntityNotFound(entity="Stack", name=name)
    return _shown(row)


def shown_stack_by_id(reads: Connection | Session, tenant_id: str, stack_id: str
                      ) -> ShownStack | None:
    """:func:`shown_stack` by id alone (a nested stack, found from its parent's resource);
    None when the tenant has no such stack."""
    row = reads.execute(_SHOWN, {"stack_id": stack_id, "tenant_id": tenant_id}).first()
    return None if row is None else _shown(row)


def _shown(row: Any) -> ShownStack:
    listed = ListedStack._make(row[:_LISTED])
    return ShownStack(listed, StoredText(listed.id, listed.name, listed.tenant_id,
                                         *row[_LISTED:]))


def stored_outputs(reads: Connection | Session, stack_id: str) -> list[dict[str, Any]]:
    """The outputs the stack's last operation stored when it ended ([] when none did)."""
    return list(reads.execute(_STORED_OUTPUTS, {"stack_id": stack_id}).scalar() or [])


# The large JSON columns; a worker step needs none of them, and parsing a big template
# on every step made each step cost O(size of the stack).
_HEAVY = (Stack.template, Stack.parameters, Stack.environment,
          Stack.files, Stack.outputs)
# Built once: a worker loads a stack a step, and building the query cost more than the
# load.
_LOAD_LIGHT = (select(Stack).where(Stack.id == bindparam("id"))
               .options(*(defer(column) for column in _HEAVY)))


def load_stack(session: Session, stack_id: str) -> Stack:
    """By id alone, for workers (which act for whichever tenant owns the stack).

    The large JSON columns load only when first read, inside the session."""
    # The session's object if it has one (as ``Session.get`` would return it), else one
    # statement built once: ``Session.get`` builds its query anew at every call.
    stack = session.identity_map.get(identity_key(Stack, stack_id))
    if stack is None:
        stack = session.scalars(_LOAD_LIGHT, {"id": stack_id}).first()
    if stack is None:
        raise EntityNotFound(entity="Stack", name=stack_id)
    return stack
