"""The stack list in SQL: Heat's filters and tag filters, sort keys and directions, and
marker pages."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import (
    exists,
    func,
    literal,
    not_,
    select,
    type_coerce,
)
from sqlalchemy.dialects.postgresql import JSONB, array
from sqlalchemy.orm import Session

from engine.db.base import UTCDateTime
from engine.db.models import Stack
from engine.db.paging import keyset_after

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


class ListedStack(NamedTuple):
    """What a list shows of a stack (``engine.services.records.stack_record``), and what
    a show shows besides its parameters and outputs (``engine.db.stack_rows.ShownStack``
    holds one): not its definition nor its outputs, whose decoding, with an ORM object
    per stack, took most of a list of 1,000 stacks' time."""

    id: str
    name: str
    tenant_id: str
    action: str
    status: str
    status_reason: str
    description: str
    tags: Any
    disable_rollback: bool
    timeout_mins: int | None
    owner: str
    created_at: datetime.datetime
    updated_at: datetime.datetime | None
    deleted_at: datetime.datetime | None
    owner_id: str | None


#: The columns of a ``ListedStack``, in its order (the show selects them first).
LISTED_COLUMNS = tuple(getattr(Stack, field) for field in ListedStack._fields)

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
                tags: TagFilter = TagFilter(), show_nested: bool = False, count: bool = True
                ) -> tuple[list[ListedStack], int | None]:
    """One page of stacks and, with ``count``, the count of all that match the filters
    (None without).

    Without a known sort key the order is newest first; with one, ascending unless
    ``sort_dir`` says otherwise. Every order ends with the id, so pages never overlap;
    a marker that names no stack of the tenant's is ignored."""
    query = select(*LISTED_COLUMNS)
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
    total = (session.scalar(select(func.count()).select_from(query.subquery())) or 0
             if count else None)
    known = [k for k in sort_keys if k in SORT_KEYS]
    descending = sort_dir == "desc" if known else sort_dir != "asc"
    columns = [SORT_KEYS[k] for k in known] or [Stack.created_at]
    keys = [_sortable(c) for c in columns] + [Stack.id]
    if marker:
        # Only a stack the list could show anchors it: another tenant's is no marker,
        # or paging from it would tell where that stack sorts (its creation time).
        anchored = select(*LISTED_COLUMNS).where(Stack.id == marker)
        if tenant_id is not None:
            anchored = anchored.where(Stack.tenant_id == tenant_id)
        found = session.execute(anchored).first()
        anchor = None if found is None else ListedStack(*found)
        if anchor is not None:
            values = [_anchor_value(anchor, c) for c in columns] + [anchor.id]
            query = query.where(keyset_after(keys, values, descending))
    query = query.order_by(*(k.desc() if descending else k.asc() for k in keys))
    if limit is not None:
        query = query.limit(limit)
    return [ListedStack(*row) for row in session.execute(query)], total


def _sortable(column: Any) -> Any:
    if column is Stack.updated_at:
        return func.coalesce(Stack.updated_at, literal(_NEVER, UTCDateTime()))
    return column


def _anchor_value(anchor: ListedStack, column: Any) -> Any:
    value = getattr(anchor, column.key)
    return _NEVER if value is None and column is Stack.updated_at else value


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
