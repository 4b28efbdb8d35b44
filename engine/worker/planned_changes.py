"""The planned change of each resource, for the views an operation's pre-ops receive.

Made by the same planner and update decision as the operation (``update_forecast``,
which the update preview reads too), before any step runs: a create creates every
resource of its template (an adopt too: it takes each one over), a delete deletes every
stored one (the rollback of a create too; an abandon also, every one retained), and an
update decides each resource as its step will (the rollback of an update is the update
back to the previous definition, a restore the update to the snapshot's: its types'
``handle_restore`` is not asked here, so where a type changes its properties on restore
its step may differ from its forecast). Other operations (suspend, resume, check, ...) get no
changes. The post-ops see the plan's actions as ``lifecycle_calls`` kept them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from engine.clock import Clock
from engine.db import resource_rows, stack_rows
from engine.db.models import Operation
from engine.db.session import Database
from engine.ir.stored import StoredIrs
from engine.lifecycle.planned import view_changes
from engine.lifecycle.snapshot import Redefined
from engine.lifecycle.view import ResourceChange
from engine.resources.read_only import ReadOnlyRuntime
from engine.resources.registry import ResourceTypeRegistry
from engine.resources.update_forecast import (
    PlannedChange,
    StoredFacts,
    forecast_create,
    forecast_delete,
    forecast_update,
)
from engine.vocabulary import UPDATE_LIKE, Action
from engine.worker.stored_scope import operation_secrets

LOG = logging.getLogger(__name__)
# Operations whose plan the plugins see (a rollback's: of a create or of an update).
_PLANNED = (Action.CREATE, Action.DELETE, Action.ADOPT, Action.ABANDON, *UPDATE_LIKE)

@dataclasses.dataclass(frozen=True)
class _Named:
    """What a read-only runtime needs of a stack or a row, kept past the session."""

    id: Any
    name: str
    tenant_id: str = ""
    generation: int = 0  # a row's: its stable name is the worker's (``resource_key``)


class PlannedChanges:
    def __init__(self, db: Database, types_: ResourceTypeRegistry, clock: Clock,
                 irs: StoredIrs) -> None:
        self._db = db
        self._types = types_
        self._clock = clock
        self._irs = irs

    def of(self, operation_id: str) -> Mapping[str, ResourceChange] | None:
        """The operation's planned changes, masked for the plugins; None for an operation
        that is not planned here, or when the forecast fails (logged: the operation
        itself goes on and decides as it always does; the views say
        ``changes_known`` false)."""
        try:
            return self._of(operation_id)
        except Exception:  # noqa: BLE001 -- the forecast must not fail the operation
            LOG.exception("operation %s: the planned changes for the lifecycle plugins "
                          "could not be made; they see none", operation_id)
            return None

    def _of(self, operation_id: str) -> Mapping[str, ResourceChange] | None:
        with self._db.read() as session:
            operation = session.get(Operation, operation_id)
            if operation is None or operation.action not in _PLANNED:
                return None
            stack = stack_rows.load_stack(session, operation.stack_id)
            rows = resource_rows.list_resources(session, stack.id)
            stored = {row.name: StoredFacts.of(row) for row in rows}
            keys = {row.name: _Named(row.id, row.name, generation=row.generation)
                    for row in rows}
            payload = operation.payload or {}
            secrets = operation_secrets(stack, payload)
            target = None
            if operation.action in (Action.CREATE, Action.ADOPT):
                target = self._irs.of(stack)
            elif operation.action in UPDATE_LIKE \
                    and "target" in payload:
                # An update, or the rollback of one: back to the previous definition.
                target = self._irs.of(Redefined.of(stack, payload["target"]))
            identity = _Named(stack.id, stack.name, stack.tenant_id)
            action = operation.action
            converge = bool(payload.get("converge"))
        # Outside the transaction: the decision runs resource type code.
        planned: Mapping[str, PlannedChange]
        if target is None:  # a delete, an abandon, the rollback of a create
            planned = forecast_delete(stored)
            if action == Action.ABANDON:
                # Abandon forgets the resources and leaves every one where it is.
                planned = {name: dataclasses.replace(change, retained=True)
                           for name, change in planned.items()}
        elif action in (Action.CREATE, Action.ADOPT):
            planned = forecast_create(target, self._types)
        else:
            planned = forecast_update(
                target, stored, self._types,
                lambda name: ReadOnlyRuntime(identity, keys[name], self._clock),
                converge=converge)
        return view_changes(planned, secrets)

