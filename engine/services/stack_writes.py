"""Stack writes: create (and adopt), update and delete.

A write stores the stack, its operation and its first event in one transaction and
returns; workers do the rest. Each is refused first, before any other work, while too
many operations wait for a worker (``engine.services.backlog``). With a ``door``
(``[lifecycle_plugins] check_at_the_door``) a create, adopt or update first asks the
lifecycle plugins that support dry runs for their verdict, as its preview would, and one
that would fail the operation refuses the request (``LifecycleDenied``) before anything
is stored. The worker's real pre-ops still decide: the door only spares the tenant a
stack that would fail at once.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from typing import Any

from engine import reasons
from engine.clock import Clock
from engine.context import RequestContext
from engine.db import resource_rows, stack_rows, stack_trees, transitions
from engine.db.models import OperationPayload, Stack, StackDefinition
from engine.db.session import Database
from engine.errors import ActionInProgress, BadRequest, EntityNotFound, RequestLimitExceeded
from engine.ir.stored import StoredIrs
from engine.resources.registry import ResourceTypeRegistry
from engine.schema import extract_bool
from engine.services import stack_requests, update_preview
from engine.services.adopt import adopt_request
from engine.services.backlog import Backlog
from engine.services.operation_start import request_context, start_operation
from engine.services.proposals import Proposal, Proposals, StackLimits, stack_name
from engine.services.records import StackRecord, stack_record
from engine.services.stack_dry_runs import StackDryRuns
from engine.services.stack_lookup import named_stack
from engine.services.update_requests import check_immutable, update_body
from engine.vocabulary import Action, Status


@dataclasses.dataclass(frozen=True)
class _Judged:
    """An update the plugins judged at the door: the stored definition it was made
    from (``update_preview.stored_request``) and the stack it proposes."""

    stored: Mapping[str, Any]
    new: Proposal


class StackWrites:
    def __init__(self, db: Database, registry: ResourceTypeRegistry, limits: StackLimits,
                 clock: Clock, irs: StoredIrs, *, door: StackDryRuns | None = None) -> None:
        """``door``: the dry runs a create or update passes before it is stored (their
        plugins bounded by ``[lifecycle_plugins] door_timeout_seconds``); None: none."""
        self._db = db
        self._registry = registry
        self._limits = limits
        self._clock = clock
        self._irs = irs
        self._door = door
        self._proposals = Proposals(registry, limits, clock)
        self._backlog = Backlog(db, clock, limits.max_pending_operations)

    def create(self, ctx: RequestContext, body: Mapping[str, Any]) -> StackRecord:
        self._backlog.check()
        stack_requests.check_body(body)
        stack_requests.refuse_converge(body)
        action = Action.CREATE
        payload: OperationPayload | None = None
        if body.get("adopt_stack_data") is not None:
            action = Action.ADOPT
            body, payload = adopt_request(body)
            # Another body: the abandon data's template, parameters and environment.
            stack_requests.check_body(body)
        proposal = self._proposals.propose(ctx, body, stack_name(body), str(uuid.uuid4()))
        if self._door is not None:
            self._door.create_verdicts(ctx, proposal, action)  # a refusal stores nothing
        stack = proposal.stack
        operation = transitions.new_operation(request_context(ctx), stack.id, action,
                                              stack.created_at, proposal.timeout_seconds,
                                              payload)
        with self._db.transaction() as session:
            # Counted in the inserting transaction; two creates racing at the very limit
            # may both pass (the quota lifecycle plugin holds the exact count if needed).
            limit = self._limits.max_stacks_per_tenant
            if limit >= 0 and stack_rows.count_live_stacks(session, ctx.tenant_id) >= limit:
                raise RequestLimitExceeded(reason=f"You have reached the maximum stacks per "
                                                  f"tenant, {limit}. Please delete some "
                                                  "stacks.")
            transitions.begin_stack(session, stack, operation, reasons.stack_started(action),
                                    stack.created_at)
            return stack_record(proposal.ir, stack)

    def update(self, ctx: RequestContext, name: str, stack_id: str, body: Mapping[str, Any],
               *, patch: bool) -> None:
        """PUT (``patch=False``) or PATCH: checked as a create is, judged at the door,
        then stored as an UPDATE operation carrying the stored definition and the new
        one."""
        self._backlog.check()
        judged = self._judge_update(ctx, name, stack_id, body, patch=patch)
        for attempt in self._db.retrying():
            with attempt as session:
                stack, _ = stack_rows.lock_stack(session, ctx.tenant_id, name, stack_id)
                _check_updatable(stack, name)
                stack_requests.check_body(body)
                stored = update_preview.stored_request(stack)
                if judged is not None and judged.stored == stored:
                    new = judged.new  # the stack is as the door saw it: no second build
                else:
                    new = self._proposals.propose(
                        ctx, update_body(stored, body, patch=patch,
                                         sink_rules=self._limits.sink_rules),
                        stack.name, stack.id)
                check_immutable(self._irs.if_valid(stack), new.ir)
                payload: OperationPayload = {
                    "previous": definition(stack), "target": definition(new.stack),
                    # Heat's "observe reality": resources whose type can read its
                    # backend put back what drifted (specs/aws-resources.rst).
                    "converge": extract_bool(body.get("converge", False), "converge")}
                start_operation(session, ctx, name, stack_id, Action.UPDATE, self._clock(),
                                self._limits.default_timeout_seconds, payload,
                                timeout_seconds=new.timeout_seconds)
                stack.tags, stack.timeout_mins = new.stack.tags, new.stack.timeout_mins
                stack.disable_rollback, stack.files = new.stack.disable_rollback, new.stack.files

    def _judge_update(self, ctx: RequestContext, name: str, stack_id: str,
                      body: Mapping[str, Any], *, patch: bool) -> _Judged | None:
        """The door of an update: checked as the update checks it, then judged by the
        plugins as its preview judges it (``StackDryRuns.update_verdicts``); None
        without a door. Outside any write transaction, so no lock waits on a plugin;
        the update re-checks the stack under its lock, and the worker's pre-op judges
        the update it stores whatever happened in between."""
        if self._door is None:
            return None
        with self._db.read() as session:
            stack = named_stack(session, ctx, name, stack_id)
            rows = resource_rows.list_resources(session, stack.id)
            lineage = stack_trees.lineage(session, stack)
        _check_updatable(stack, name)
        stack_requests.check_body(body)
        stored = update_preview.stored_request(stack)
        new = self._proposals.propose(
            ctx, update_body(stored, body, patch=patch, sink_rules=self._limits.sink_rules),
            stack.name, stack.id)
        stored_ir = self._irs.if_valid(stack)
        check_immutable(stored_ir, new.ir)
        if stack.status == Status.IN_PROGRESS:
            # What storing it would answer; no plugin is asked about a request that fails.
            raise ActionInProgress(stack_name=stack.name, action=stack.action)
        planned = update_preview.forecast(stack, rows, new.ir, self._registry, self._clock)
        self._door.update_verdicts(ctx, stack, rows, lineage, stored_ir, new, planned)
        return _Judged(stored, new)

    def delete(self, ctx: RequestContext, name: str, stack_id: str) -> None:
        """Delete; a stack busy with another operation has it cancelled first (without
        rollback), as Heat's delete does, and the delete follows it."""
        self._backlog.check()
        for attempt in self._db.retrying():
            with attempt as session:
                stack, running = stack_rows.lock_stack(session, ctx.tenant_id, name, stack_id)
                if stack.status != Status.IN_PROGRESS or stack.deleted_at is not None:
                    running = None
                if running is None or running.action in (Action.DELETE, Action.ABANDON):
                    start_operation(session, ctx, name, stack_id, Action.DELETE, self._clock(),
                                    self._limits.default_timeout_seconds)
                    return
                timeout = (stack.timeout_mins or 0) * 60 or self._limits.default_timeout_seconds
                transitions.cancel_then_delete(session, stack, running, request_context(ctx),
                                               timeout, reasons.stack_started(Action.DELETE),
                                               self._clock())


def _check_updatable(stack: Stack, name: str) -> None:
    if stack.deleted_at is not None:
        raise EntityNotFound(entity="Stack", name=name)
    if (stack.action, stack.status) == (Action.SUSPEND, Status.COMPLETE):
        raise BadRequest(reason="Updating a stack when it is suspended is not supported.")


def definition(stack: Stack) -> StackDefinition:
    """What an update changes and a rollback restores."""
    return {"template": stack.template, "parameters": stack.parameters,
            "environment": stack.environment, "files": stack.files}
