"""A stack's resource rows: reads, the deletes of an update and of a stack, and the
physical id of a resource an update replaced."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    delete,
    func,
    select,
)
from sqlalchemy.orm import Session

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
