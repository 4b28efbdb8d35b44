"""Named queries per aggregate, with SQL errors translated at this boundary.

``get_*`` raises ``EntityNotFound``; ``find_*`` returns None; ``list_*`` returns a list.
Callers pass the session of their transaction (``Database.transaction``).
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    and_,
    delete,
    exists,
    func,
    literal,
    not_,
    null,
    or_,
    select,
    type_coerce,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB, array
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, defer

from engine.db.base import UTCDateTime
from engine.db.models import Event, Operation, Resource, Stack, Tenant, Token
from engine.db.wakeup import work_written
from engine.errors import ActionInProgress, Conflict, EntityNotFound, StackExists
from engine.vocabulary import Action, Status

Now = datetime.datetime

# --- tenants and tokens -------------------------------------------------------------------


def add_tenant(session: Session, name: str, now: Now) -> Tenant:
    tenant = Tenant(id=str(uuid.uuid4()), name=name, created_at=now)
    session.add(tenant)
    try:
        session.flush()
    except IntegrityError as exc:
        raise Conflict(reason=f"A tenant named {name} already exists.") from exc
    return tenant


def find_tenant(session: Session, name_or_id: str) -> Tenant | None:
    return session.scalars(
        select(Tenant).where((Tenant.id == name_or_id) | (Tenant.name == name_or_id))
    ).first()


def get_tenant(session: Session, name_or_id: str) -> Tenant:
    tenant = find_tenant(session, name_or_id)
    if tenant is None:
        raise EntityNotFound(entity="Tenant", name=name_or_id)
    return tenant


def list_tenants(session: Session) -> list[Tenant]:
    return list(session.scalars(select(Tenant).order_by(Tenant.name)))


def add_token(session: Session, tenant_id: str, role: str, token_hash: str, now: Now) -> Token:
    token = Token(id=str(uuid.uuid4()), tenant_id=tenant_id, role=role,
                  token_hash=token_hash, created_at=now)
    session.add(token)
    session.flush()
    return token


def find_live_token(session: Session, token_hash: str) -> Token | None:
    return session.scalars(
        select(Token).where(Token.token_hash == token_hash, Token.revoked_at.is_(None))
    ).first()


def touch_token(session: Session, token_id: str, now: Now) -> None:
    session.execute(update(Token).where(Token.id == token_id).values(last_used_at=now))


def list_tokens(session: Session, tenant_id: str) -> list[Token]:
    return list(session.scalars(
        select(Token).where(Token.tenant_id == tenant_id).order_by(Token.created_at)))


# --- stacks ---------------------------------------------------------------------------------


def live_child_stack(session: Session, owner_id: str, resource_name: str) -> Stack | None:
    """The live child stack that resource ``resource_name`` of stack ``owner_id`` made."""
    return session.scalars(select(Stack).where(
        Stack.owner_id == owner_id, Stack.parent_resource == resource_name,
        Stack.deleted_at.is_(None))).first()


def live_children(session: Session, owner_id: str) -> dict[str, tuple[str, str]]:
    """(name, id) of every live child stack of ``owner_id``, by the resource that made
    it (names only: a listing must not load the children's templates)."""
    rows = session.execute(select(Stack.parent_resource, Stack.name, Stack.id).where(
        Stack.owner_id == owner_id, Stack.deleted_at.is_(None)))
    return {resource: (name, stack_id) for resource, name, stack_id in rows
            if resource is not None}


def descendants(session: Session, root_id: str, depth: int) -> dict[str, str]:
    """id -> name of the stacks nested in ``root_id`` down to ``depth`` levels, deleted
    ones included (their events are the root's history too); one query per level."""
    found: dict[str, str] = {}
    level = [root_id]
    for _ in range(depth):
        if not level:
            break
        rows = session.execute(select(Stack.id, Stack.name).where(Stack.owner_id.in_(level)))
        level = []
        for stack_id, name in rows:
            found[stack_id] = name
            level.append(stack_id)
    return found


@dataclasses.dataclass(frozen=True)
class TreeResources:
    """The resources of a tree of stacks, as far as the database holds them."""

    rows: int  # of every live stack of the tree
    # A stack's resources become rows when its operation plans. For each stack of the
    # tree whose create or update has not planned yet: the template that operation will
    # plan, and the rows the stack has now.
    unplanned: list[tuple[Any, int]]


def tree_resources(session: Session, stack_id: str, *, lock: bool = False) -> TreeResources:
    """The resources of the whole tree of live stacks that ``stack_id`` belongs to: its
    root's and those of every stack nested in the root, at any depth (Heat's
    ``stack.total_resources(root_stack_id)``, which ``max_resources_per_stack`` bounds).

    With ``lock`` the root's row is locked first, so that two children of one tree
    starting at once are counted one after the other, not both against the same total
    (PostgreSQL; SQLite's writers go one at a time anyway)."""
    root, seen = stack_id, {stack_id}
    while (owner := session.scalar(select(Stack.owner_id).where(Stack.id == root))) \
            and owner not in seen:
        root = owner
        seen.add(owner)
    if lock:
        session.execute(select(Stack.id).where(Stack.id == root).with_for_update())
    tree = select(Stack.id).where(Stack.id == root).cte("tree", recursive=True)
    tree = tree.union_all(select(Stack.id).where(Stack.owner_id == tree.c.id,
                                                 Stack.deleted_at.is_(None)))
    members = select(tree.c.id)
    rows: dict[str, int] = {key: count for key, count in session.execute(
        select(Resource.stack_id, func.count()).where(Resource.stack_id.in_(members))
        .group_by(Resource.stack_id))}
    unplanned: list[tuple[Any, int]] = []
    for operation in session.scalars(select(Operation).where(
            Operation.stack_id.in_(members), Operation.finished_at.is_(None),
            Operation.action.in_((Action.CREATE, Action.UPDATE)))):
        payload = operation.payload or {}
        if payload.get("planned"):
            continue
        target = payload.get("target")
        template = (target.get("template") if target else None) \
            if operation.action == Action.UPDATE else session.scalar(
                select(Stack.template).where(Stack.id == operation.stack_id))
        unplanned.append((template, rows.get(operation.stack_id, 0)))
    return TreeResources(rows=sum(rows.values()), unplanned=unplanned)


def count_resources(session: Session, stack_id: str) -> int:
    """How many resources the stack itself holds (its nested stacks' not counted)."""
    return session.scalar(select(func.count()).select_from(Resource).where(
        Resource.stack_id == stack_id)) or 0


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


def unfinished_operation(session: Session, stack_id: str) -> Operation | None:
    query = (select(Operation).where(Operation.stack_id == stack_id,
                                     Operation.finished_at.is_(None))
             .with_for_update())
    return session.scalars(query).first()


def request_id_of(session: Session, operation_id: str) -> str:
    """The id of the request that started the operation ("" if not recorded): its log
    lines and an internal-error reason carry it, so an operator can follow one request
    from the API's log to the engine's."""
    context = session.scalar(select(Operation.context).where(Operation.id == operation_id))
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


def find_stack_by_id(session: Session, tenant_id: str, stack_id: str) -> Stack | None:
    """By id, soft-deleted stacks included (as Heat's UUID lookups do)."""
    return session.scalars(
        select(Stack).where(Stack.id == stack_id, Stack.tenant_id == tenant_id)).first()


def find_live_stack_by_name(session: Session, tenant_id: str, name: str) -> Stack | None:
    return session.scalars(
        select(Stack)
        .where(Stack.tenant_id == tenant_id, Stack.name == name, Stack.deleted_at.is_(None))
        .order_by(Stack.created_at)
    ).first()


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


# The large JSON columns; a worker step needs none of them, and parsing a big template
# on every step made each step cost O(size of the stack).
_HEAVY = (Stack.template, Stack.parameters, Stack.environment,
          Stack.files, Stack.outputs)


def load_stack(session: Session, stack_id: str) -> Stack:
    """By id alone, for workers (which act for whichever tenant owns the stack).

    The large JSON columns load only when first read, inside the session."""
    stack = session.get(Stack, stack_id, options=[defer(c) for c in _HEAVY])
    if stack is None:
        raise EntityNotFound(entity="Stack", name=stack_id)
    return stack


SORT_KEYS = {"stack_name": Stack.name, "stack_status": Stack.status,
             "creation_time": Stack.created_at, "updated_time": Stack.updated_at}
# Stack list filters (the service has turned Heat's names and aliases into these).
# "parent" is the parent stack of a nested stack: Kiln has none, so it matches nothing.
STACK_FILTER_COLUMNS = {"id": Stack.id, "name": Stack.name, "action": Stack.action,
                        "status": Stack.status, "tenant": Stack.tenant_id,
                        "stack_user_project_id": Stack.tenant_id, "owner": Stack.owner,
                        "status_reason": Stack.status_reason,
                        "disable_rollback": Stack.disable_rollback,
                        "timeout_mins": Stack.timeout_mins}
# NOTE: a never-updated stack has no updated_at, and NULLs sort first on one backend and
# last on the other; sorting and paging on a stand-in keeps both in step (and a marker
# on such a stack usable), and puts them first when ascending, as Heat on MySQL does.
_NEVER = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@dataclasses.dataclass(frozen=True)
class TagFilter:
    """Heat's four tag filters; each is a list of tags, empty when not asked for."""

    all: Sequence[str] = ()  # has every one (``tags``)
    any: Sequence[str] = ()  # has at least one (``tags_any``)
    not_all: Sequence[str] = ()  # lacks at least one (``not_tags``)
    not_any: Sequence[str] = ()  # has none (``not_tags_any``)


def list_stacks(session: Session, tenant_id: str | None, *, filters: dict[str, list[Any]],
                show_deleted: bool, limit: int | None, marker: str | None,
                sort_keys: Sequence[str], sort_dir: str | None,
                tags: TagFilter = TagFilter(), show_nested: bool = False
                ) -> tuple[list[Stack], int]:
    """One page of stacks and the count of all that match the filters.

    Without a known sort key the order is newest first; with one, ascending unless
    ``sort_dir`` says otherwise. Every order ends with the id, so pages never overlap;
    a marker that names no stack is ignored."""
    query = select(Stack)
    if tenant_id is not None:
        query = query.where(Stack.tenant_id == tenant_id)
    if not show_deleted:
        query = query.where(Stack.deleted_at.is_(None))
    if not show_nested and "parent" not in filters:  # asking for a parent's children
        query = query.where(Stack.owner_id.is_(None))
    for key, values in filters.items():
        query = query.where(Stack.owner_id.in_(values) if key == "parent" else
                            STACK_FILTER_COLUMNS[key].in_(values))
    query = query.where(*_tag_conditions(session, tags))
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    known = [k for k in sort_keys if k in SORT_KEYS]
    descending = sort_dir == "desc" if known else sort_dir != "asc"
    columns = [SORT_KEYS[k] for k in known] or [Stack.created_at]
    keys = [_sortable(c) for c in columns] + [Stack.id]
    if marker:
        anchor = session.get(Stack, marker)
        if anchor is not None:
            values = [_anchor_value(anchor, c) for c in columns] + [anchor.id]
            query = query.where(keyset_after(keys, values, descending))
    query = query.order_by(*(k.desc() if descending else k.asc() for k in keys))
    if limit is not None:
        query = query.limit(limit)
    return list(session.scalars(query)), total


def _sortable(column: Any) -> Any:
    if column is Stack.updated_at:
        return func.coalesce(Stack.updated_at, literal(_NEVER, UTCDateTime()))
    return column


def _anchor_value(anchor: Stack, column: Any) -> Any:
    value = getattr(anchor, column.key)
    return _NEVER if value is None and column is Stack.updated_at else value


def keyset_after(keys: Sequence[Any], values: Sequence[Any], descending: bool) -> Any:
    """Rows strictly after ``values`` in the order of ``keys`` (all one direction):
    (k1 > v1) or (k1 = v1 and k2 > v2) or ... ; written out, not as a row value, so that
    it works the same on every backend."""
    alternatives = []
    for i, key in enumerate(keys):
        beyond = key < values[i] if descending else key > values[i]
        alternatives.append(and_(*(k == v for k, v in zip(keys[:i], values[:i],
                                                           strict=True)), beyond))
    return or_(*alternatives)


def _tag_conditions(session: Session, tags: TagFilter) -> list[Any]:
    # One condition per filter whatever its number of tags: a condition per tag joined
    # by AND/OR nests one level per tag, and SQLite refuses an expression past 1,000.
    conditions = []
    if tags.all:
        conditions.append(_has_all(session, tags.all))
    if tags.any:
        conditions.append(_has_any(session, tags.any))
    if tags.not_all:
        conditions.append(not_(_has_all(session, tags.not_all)))
    if tags.not_any:
        conditions.append(not_(_has_any(session, tags.not_any)))
    return conditions


def _has_all(session: Session, tags: Sequence[str]) -> Any:
    """The stack's tags (a JSON list) contain every one of ``tags``, in SQL."""
    if session.get_bind().dialect.name == "postgresql":
        # jsonb containment; false, not an error, for a row whose tags are not a list.
        return type_coerce(Stack.tags, JSONB).contains(list(tags))
    elements = func.json_each(Stack.tags).table_valued("value")
    found = (select(func.count(elements.c.value.distinct())).select_from(elements)
             .where(elements.c.value.in_(list(tags))).scalar_subquery())
    return found == len(set(tags))


def _has_any(session: Session, tags: Sequence[str]) -> Any:
    """The stack's tags (a JSON list) contain at least one of ``tags``, in SQL."""
    if session.get_bind().dialect.name == "postgresql":
        return type_coerce(Stack.tags, JSONB).has_any(array(list(tags)))
    elements = func.json_each(Stack.tags).table_valued("value")
    return exists(select(literal(1)).select_from(elements)
                  .where(elements.c.value.in_(list(tags))))


# --- resources ------------------------------------------------------------------------------


def list_resources(session: Session, stack_id: str) -> list[Resource]:
    return list(session.scalars(
        select(Resource).where(Resource.stack_id == stack_id).order_by(Resource.name)))


def list_resources_named(session: Session, stack_id: str, names: Sequence[str]
                         ) -> list[Resource]:
    if not names:
        return []
    return list(session.scalars(
        select(Resource).where(Resource.stack_id == stack_id, Resource.name.in_(list(names)))))


def get_resource(session: Session, stack: Stack, name: str) -> Resource:
    return get_stack_resource(session, stack.id, name)


def get_stack_resource(session: Session, stack_id: str, name: str) -> Resource:
    resource = session.scalars(
        select(Resource).where(Resource.stack_id == stack_id, Resource.name == name)).first()
    if resource is None:
        raise EntityNotFound(entity="Resource", name=name)
    return resource


def drop_deleted_resources(session: Session, stack_id: str) -> None:
    """Forget the resources an update deleted (those it removed from the template)."""
    session.execute(delete(Resource).where(Resource.stack_id == stack_id,
                                           Resource.action == Action.DELETE,
                                           Resource.status == Status.COMPLETE))


def delete_resources(session: Session, stack_id: str) -> None:
    session.execute(delete(Resource).where(Resource.stack_id == stack_id))


def record_replaced_physical_id(session: Session, resource_id: int, physical_id: str,
                                data: dict[str, Any]) -> None:
    row = session.get(Resource, resource_id)
    if row is not None and row.replaced is not None:
        row.replaced = {**row.replaced, "physical_id": physical_id, "data": data}


# --- events ---------------------------------------------------------------------------------


def add_event(session: Session, *, stack_id: str, resource_name: str, physical_resource_id: str,
              resource_type: str, action: str, status: str, reason: str, now: Now,
              properties: Any = None, lifecycle: Any = None) -> Event:
    event = Event(id=str(uuid.uuid4()), stack_id=stack_id, resource_name=resource_name,
                  physical_resource_id=physical_resource_id or "",
                  resource_type=resource_type, action=action, status=status,
                  # NOTE: Heat's column is 255 characters too; the full text stays in
                  # the stack or resource status reason.
                  reason=reason[:255], properties=properties,
                  # SQL NULL, not JSON null, so "is a plugin call" is an indexable test.
                  lifecycle=null() if lifecycle is None else lifecycle,
                  created_at=now)
    session.add(event)
    return event


STACK_TYPE = "OS::Heat::Stack"


def add_stack_event(session: Session, stack: Stack, now: Now) -> Event:
    """The stack-level event of the stack's current state: clients (``--wait``) find an
    operation's end by these, named after the stack and carrying its id."""
    return add_event(session, stack_id=stack.id, resource_name=stack.name,
                     physical_resource_id=stack.id, resource_type=STACK_TYPE,
                     action=stack.action, status=stack.status, reason=stack.status_reason,
                     now=now)


def list_lifecycle_events(session: Session, stack_id: str) -> list[Event]:
    query = (select(Event).where(Event.stack_id == stack_id, Event.lifecycle.is_not(None))
             .order_by(Event.seq))
    return list(session.scalars(query))


# Event sort keys. Events are numbered as they are written, so "event_time" orders by
# that number: the same order as the time, without ties between events of one instant.
EVENT_SORT_KEYS = {"event_time": Event.seq, "resource_type": Event.resource_type}
EVENT_FILTER_COLUMNS = {"resource_status": Event.status, "resource_action": Event.action,
                        "resource_name": Event.resource_name,
                        "resource_type": Event.resource_type}


def list_events(session: Session, stack_ids: Sequence[str], *, resource_name: str | None,
                filters: dict[str, list[str]], limit: int | None, marker: str | None,
                ascending: bool, sort_keys: Sequence[str] = ()) -> list[Event]:
    """One page of the events of a stack (and of the stacks nested in it, when
    ``stack_ids`` names them too): filters compare the stored columns; the order is
    ``sort_keys`` (known ones) then the event number; a marker naming no event of these
    stacks is ignored."""
    query = select(Event).where(Event.stack_id.in_(stack_ids))
    if resource_name is not None:
        query = query.where(Event.resource_name == resource_name)
    for key, values in filters.items():
        query = query.where(EVENT_FILTER_COLUMNS[key].in_(values))
    keys: list[Any] = []
    for name in dict.fromkeys(k for k in sort_keys if k in EVENT_SORT_KEYS):
        keys.append(EVENT_SORT_KEYS[name])
        if name == "event_time":
            break  # unique: any later key could never decide
    else:
        keys.append(Event.seq)
    if marker:
        anchor = session.scalars(
            select(Event).where(Event.id == marker, Event.stack_id.in_(stack_ids))).first()
        if anchor is not None:
            values = [getattr(anchor, k.key) for k in keys]
            query = query.where(keyset_after(keys, values, not ascending))
    query = query.order_by(*(k.asc() if ascending else k.desc() for k in keys))
    if limit is not None:
        query = query.limit(limit)
    return list(session.scalars(query))


def find_event(session: Session, stack_id: str, event_id: str) -> Event | None:
    return session.scalars(
        select(Event).where(Event.stack_id == stack_id, Event.id == event_id)).first()
