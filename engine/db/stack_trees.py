"""Trees of nested stacks: a stack's children, its descendants, its lineage up to the
root, and the resources of the whole tree (what ``max_resources_per_stack`` bounds)."""

from __future__ import annotations

import dataclasses
from typing import Any

from sqlalchemy import (
    func,
    select,
)
from sqlalchemy.orm import Session

from engine.db.models import Operation, Resource, Stack
from engine.vocabulary import UPDATE_LIKE, Action


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
class TreeMember:
    """A stack of a tree, and the resource of its parent that made it (None for the
    root)."""

    id: str
    name: str
    parent_resource: str | None


def lineage(session: Session, stack: Stack) -> list[TreeMember]:
    """The stacks from ``stack``'s root down to ``stack`` (Heat's ``path_in_stack``):
    one query per stack above it, none for a top-level stack. A parent whose row is gone
    ends the walk there."""
    members = [TreeMember(stack.id, stack.name, stack.parent_resource)]
    owner, seen = stack.owner_id, {stack.id}
    while owner is not None and owner not in seen:
        row = session.execute(select(Stack.name, Stack.parent_resource, Stack.owner_id)
                              .where(Stack.id == owner)).one_or_none()
        if row is None:
            break
        name, resource, above = row
        members.append(TreeMember(owner, name, resource))
        seen.add(owner)
        owner = above
    return members[::-1]


@dataclasses.dataclass(frozen=True)
class TreeResources:
    """The resources of a tree of stacks, as far as the database holds them."""

    rows: int  # of every live stack of the tree
    # A stack's resources become rows when its operation plans. For each stack of the
    # tree whose create or update-like operation has not planned yet: the template it will
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
            Operation.action.in_((Action.CREATE, *UPDATE_LIKE)))):
        payload = operation.payload or {}
        if payload.get("planned"):
            continue
        template: Any
        if operation.action in UPDATE_LIKE:
            target = payload.get("target")
            if not target:
                continue  # a create's rollback: it only deletes
            template = target.get("template")
        else:
            template = session.scalar(select(Stack.template)
                                      .where(Stack.id == operation.stack_id))
        unplanned.append((template, rows.get(operation.stack_id, 0)))
    return TreeResources(rows=sum(rows.values()), unplanned=unplanned)
