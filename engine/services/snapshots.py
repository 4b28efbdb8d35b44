"""Stack snapshots, as Heat's ``…/snapshots`` API: create, list, show, delete, restore.

A snapshot is an operation, SNAPSHOT, run by the workers like any other (lifecycle pre-
and post-ops, one operation per stack at a time, refused while too many wait for a
worker): the request stores the snapshot row IN_PROGRESS with it, and the operation's
end stores the stack's definition and each resource's data in it. A restore is an
operation too, RESTORE: an update back to the snapshot's template, environment
(parameters included) and files, in which each resource's type is first given its
snapshot entry (``Resource.handle_restore``). See ``specs/stack-snapshots.rst``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from engine.clock import Clock
from engine.context import RequestContext
from engine.db import snapshot_rows, stack_rows
from engine.db.models import OperationPayload, Snapshot, Stack
from engine.db.session import Database, DbSession
from engine.errors import (
    ActionInProgress,
    BadRequest,
    EntityNotFound,
    NotSupported,
    RequestLimitExceeded,
)
from engine.resources.abandon_data import shown
from engine.resources.registry import ResourceTypeRegistry
from engine.services.backlog import Backlog
from engine.services.operation_start import start_operation
from engine.services.proposals import Proposals, StackLimits
from engine.services.records import SnapshotRecord
from engine.services.stack_writes import definition
from engine.services.update_preview import stored_request
from engine.services.update_requests import update_body
from engine.vocabulary import Action, Status

#: Heat's column: a longer name is refused rather than cut.
MAX_NAME_LENGTH = 255


class StackSnapshots:
    def __init__(self, db: Database, registry: ResourceTypeRegistry, limits: StackLimits,
                 clock: Clock, *, max_per_stack: int = -1,
                 backlog: Backlog | None = None) -> None:
        """``max_per_stack``: the most snapshots a stack may have, an admin excepted
        (Heat's ``max_snapshots_per_stack``); -1: no limit. ``backlog``: the bound a
        snapshot or restore is checked against, as every write that queues an
        operation; None: no bound."""
        self._db = db
        self._registry = registry
        self._clock = clock
        self._limits = limits
        self._max_per_stack = max_per_stack
        self._proposals = Proposals(registry, limits, clock)
        self._backlog = backlog or Backlog(db, clock, -1)

    def create(self, ctx: RequestContext, name: str, stack_id: str, body: Any
               ) -> SnapshotRecord:
        """``POST …/snapshots``: the new snapshot, IN_PROGRESS; the stack shows
        SNAPSHOT_IN_PROGRESS until a worker has run the operation."""
        snapshot_name = _snapshot_name(body)
        self._backlog.check()
        for attempt in self._db.retrying():
            with attempt as session:
                stack = _live_stack(session, ctx, name, stack_id)
                if stack.status == Status.IN_PROGRESS:  # before the count, as Heat
                    raise ActionInProgress(stack_name=stack.name, action=stack.action)
                limit = self._max_per_stack
                if (not ctx.is_admin and limit >= 0
                        and snapshot_rows.count_snapshots(session, stack.id) >= limit):
                    raise RequestLimitExceeded(
                        reason=f"You have reached the maximum snapshots per stack, {limit}. "
                               "Please delete some snapshots.")
                snapshot_id = str(uuid.uuid4())
                now = self._clock()
                # The operation first: it locks the stack (operation, then stack, the
                # order every writer keeps) before the snapshot row refers to it.
                start_operation(session, ctx, name, stack_id, Action.SNAPSHOT, now,
                                self._limits.default_timeout_seconds,
                                {"snapshot": {"id": snapshot_id}})
                snapshot = snapshot_rows.add_snapshot(session, stack, snapshot_name, now,
                                                      snapshot_id)
                return self._record(snapshot)
        raise AssertionError("unreachable: retrying() raises after its last attempt")

    def list_snapshots(self, ctx: RequestContext, name: str, stack_id: str
                       ) -> Sequence[SnapshotRecord]:
        with self._db.read() as session:
            stack = _live_stack(session, ctx, name, stack_id)
            return [self._record(s) for s in snapshot_rows.list_snapshots(session, stack.id)]

    def show(self, ctx: RequestContext, name: str, stack_id: str, snapshot_id: str
             ) -> SnapshotRecord:
        with self._db.read() as session:
            stack = _live_stack(session, ctx, name, stack_id)
            return self._record(
                snapshot_rows.get_snapshot(session, ctx.tenant_id, stack, snapshot_id))

    def delete(self, ctx: RequestContext, name: str, stack_id: str, snapshot_id: str) -> None:
        """Heat refuses an in-progress one (its operation fills it still). Kiln's types
        keep nothing outside the row, so the row is all there is to delete."""
        for attempt in self._db.retrying():
            with attempt as session:
                stack = _live_stack(session, ctx, name, stack_id)
                snapshot = snapshot_rows.get_snapshot(session, ctx.tenant_id, stack,
                                                      snapshot_id)
                if snapshot.status == Status.IN_PROGRESS:
                    raise NotSupported(feature="Deleting in-progress snapshot")
                snapshot_rows.delete_snapshot(session, snapshot)

    def restore(self, ctx: RequestContext, name: str, stack_id: str, snapshot_id: str) -> None:
        """``POST …/snapshots/{id}/restore``: a RESTORE operation, checked as an update
        to the snapshot's definition is (its template must still build: a type
        uninstalled since is a 400 now, not a failed stack later)."""
        self._backlog.check()
        for attempt in self._db.retrying():
            with attempt as session:
                stack = _live_stack(session, ctx, name, stack_id)
                snapshot = snapshot_rows.get_snapshot(session, ctx.tenant_id, stack,
                                                      snapshot_id)
                if stack.status == Status.IN_PROGRESS:
                    raise ActionInProgress(stack_name=stack.name, action=stack.action)
                data = snapshot.data
                if not isinstance(data, Mapping):
                    # Kiln's words: Heat has no answer for it (it fails on the missing data).
                    raise BadRequest(reason=f"The snapshot {snapshot.id} is "
                                            f"{snapshot.status} and holds nothing to restore.")
                body = {"template": data.get("template"),
                        "environment": data.get("environment") or {},
                        "files": data.get("files") or {}}
                new = self._proposals.propose(
                    ctx, update_body(stored_request(stack), body, patch=False),
                    stack.name, stack.id)
                resources = data.get("resources")
                payload: OperationPayload = {
                    "previous": definition(stack), "target": definition(new.stack),
                    "snapshot": {"id": snapshot.id, "resources": dict(
                        resources if isinstance(resources, Mapping) else {})}}
                start_operation(session, ctx, name, stack_id, Action.RESTORE, self._clock(),
                                self._limits.default_timeout_seconds, payload,
                                timeout_seconds=new.timeout_seconds)

    def _record(self, snapshot: Snapshot) -> SnapshotRecord:
        """The snapshot as every view shows it: its data masked as abandon data is (the
        restore takes the hidden values from the row)."""
        data = snapshot.data
        return SnapshotRecord(id=snapshot.id, name=snapshot.name, status=snapshot.status,
                              status_reason=snapshot.status_reason,
                              data=shown(data, self._registry) if data is not None else None,
                              created_at=snapshot.created_at)


def _snapshot_name(body: Any) -> str | None:
    if not isinstance(body, Mapping):
        raise BadRequest(reason="The request body must be a JSON object")
    name = body.get("name")
    if name is not None and not isinstance(name, str):
        raise BadRequest(reason="The snapshot name must be a string")
    if name is not None and len(name) > MAX_NAME_LENGTH:
        raise BadRequest(reason=f"The snapshot name is longer than {MAX_NAME_LENGTH} "
                                "characters")
    return name or None


def _live_stack(session: DbSession, ctx: RequestContext, name: str, stack_id: str) -> Stack:
    stack = stack_rows.get_stack(session, ctx.tenant_id, name, stack_id)
    if stack.deleted_at is not None:
        raise EntityNotFound(entity="Stack", name=name)
    return stack
