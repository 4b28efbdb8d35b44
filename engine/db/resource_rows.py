"""A stack's resource rows: reads, the rows a plan adds, the deletes of an update and of
a stack, and the physical id of a resource an update replaced."""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from sqlalchemy import (
    Text,
    bindparam,
    cast,
    delete,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session, SessionTransaction
from sqlalchemy.sql import Select

from engine.db.base import table
from engine.db.models import Resource, Stack
from engine.errors import EntityNotFound
from engine.vocabulary import Action, Status


def count_resources(session: Session, stack_id: str) -> int:
    """How many resources the stack itself holds (its nested stacks' not counted)."""
    return session.scalar(select(func.count()).select_from(Resource).where(
        Resource.stack_id == stack_id)) or 0


def list_resources(session: Session, stack_id: str) -> list[Resource]:
    return list(session.scalars(
        select(Resource).where(Resource.stack_id == stack_id).order_by(Resource.name)))


def list_resources_named(session: Session, stack_id: str, names: Sequence[str]
                         ) -> list[Resource]:
    if not names:
        return []
    return list(session.scalars(_NAMED, {"stack_id": stack_id, "names": list(names)}))


# Built once: a worker reads a step's rows this way at every close and every prepare.
_NAMED = select(Resource).where(Resource.stack_id == bindparam("stack_id"),
                                Resource.name.in_(bindparam("names", expanding=True)))


class RowText(NamedTuple):
    """A resource row as an output reads it, its JSON columns as the database's text:
    a digest of it is what the API's cache of resolved outputs is keyed on, and the
    JSON is decoded only when they are resolved again."""

    id: int
    name: str
    type: str
    physical_id: str | None
    generation: int
    properties: str | None
    data: str | None


# A stack's show reads the rows its outputs name this way, with one statement per number
# of names, built once: an expanding IN is rewritten at every execution, which cost as
# much as the read.
@functools.lru_cache(maxsize=32)
def _as_text(count: int) -> Select[int, str, str, str | None, int, str, str]:
    return (select(Resource.id, Resource.name, Resource.type, Resource.physical_id,
                   Resource.generation, cast(Resource.properties, Text),
                   cast(Resource.data, Text))
            .where(Resource.stack_id == bindparam("stack_id"),
                   Resource.name.in_([bindparam(f"n{i}") for i in range(count)]))
            .order_by(Resource.name))


def rows_as_text(reads: Connection | Session, stack_id: str, names: Sequence[str]
                 ) -> list[RowText]:
    """The stack's rows named ``names`` that exist, by name (``RowText``)."""
    if not names:
        return []
    values = {"stack_id": stack_id, **{f"n{i}": name for i, name in enumerate(names)}}
    return [RowText(*row) for row in reads.execute(_as_text(len(names)), values)]


class Outline(NamedTuple):
    """What a plan reads of a stored resource: no properties, no data."""

    id: int
    name: str
    type: str
    requires: list[str] | None
    replaced: bool  # holds a physical resource an earlier update replaced


def list_outlines(session: Session, stack_id: str, names: Sequence[str] | None = None
                  ) -> list[Outline]:
    """The outlines of the stack's resources (of those ``names`` only, when given)."""
    query = (select(Resource.id, Resource.name, Resource.type, Resource.requires,
                    Resource.replaced.is_not(None))
             .where(Resource.stack_id == stack_id).order_by(Resource.name))
    if names is not None:
        query = query.where(Resource.name.in_(list(names)))
    return [Outline(*row) for row in session.execute(query)]


class NewResource(NamedTuple):
    name: str
    type: str
    requires: list[str]


def add_resources(session: Session, stack_id: str, new: Iterable[NewResource],
                  now: datetime.datetime) -> None:
    """Insert the rows of the resources a plan adds to the stack, ``INIT_COMPLETE`` (not
    yet acted on), in one executemany ``INSERT`` (as ``steps.add_steps``, for the same
    reasons)."""
    rows: list[dict[str, Any]] = [
        {"stack_id": stack_id, "name": name, "type": type_name, "action": Action.INIT,
         "status": Status.COMPLETE, "status_reason": "", "physical_id": None,
         "properties": None, "data": {}, "requires": requires, "created_at": now,
         "updated_at": now} for name, type_name, requires in new]
    if rows:
        session.execute(insert(table(Resource)), rows)


_SET_REQUIRES = (update(table(Resource)).where(table(Resource).c.id == bindparam("row"))
                 .values(requires=bindparam("names")))


def set_requires(session: Session, requires: Mapping[int, list[str]]) -> None:
    """Store the resources' dependencies (by row id), in one executemany ``UPDATE``."""
    if requires:
        session.execute(_SET_REQUIRES, [{"row": row_id, "names": names}
                                        for row_id, names in requires.items()])


def write_rows(session: Session, rows: Sequence[Mapping[str, Any]]) -> None:
    """Write columns of many rows, each a mapping of its ``id`` and the columns to
    write: an ORM bulk UPDATE by primary key, one executemany per set of columns. The
    session's objects of these rows, if any, are not updated: for rows read as outlines
    (``list_outlines``), not as objects."""
    if rows:
        session.execute(update(Resource), list(rows))


_READ = "kiln_resources_read"  # in session.info: (stack id, name) -> row


@event.listens_for(Session, "after_transaction_end")
def _forget_read(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:  # the transaction, not a savepoint: its rows go
        session.info.pop(_READ, None)


def list_resources_read_once(session: Session, stack_id: str, names: Sequence[str]
                             ) -> list[Resource]:
    """:func:`list_resources_named`, each row read once a transaction: the steps of a
    round that reference one resource (a tree's root) read it once, not once a step.
    Without flushing first (a read that flushed would write each step's changes alone,
    not with the round's at its end), which finds the same objects: those the session
    holds already are the ones it gives."""
    read: dict[tuple[str, str], Resource] = session.info.setdefault(_READ, {})
    missing = [name for name in names if (stack_id, name) not in read]
    if missing:
        with session.no_autoflush:
            for row in list_resources_named(session, stack_id, missing):
                read[(stack_id, row.name)] = row
    return [read[(stack_id, name)] for name in names if (stack_id, name) in read]


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
