"""Child stacks, as a nested-stack resource asks for them (``Runtime.nested``).

A child is an ordinary stack row with ``owner_id``/``parent_resource``/``nested_depth``
set, and its operations are ordinary operations: any worker claims them. Starting one
is a short transaction here; the resource then polls :meth:`state` without holding a
thread, like any other waiting resource.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from engine import budget, reasons
from engine.clock import Clock
from engine.db import resource_rows, stack_rows, stack_trees, transitions
from engine.db.models import OperationContext, Stack, StackDefinition
from engine.db.session import Database, DbSession
from engine.errors import RequestLimitExceeded
from engine.ir.build import build_from_document, pseudo_parameters
from engine.resources.nested import NestedState
from engine.resources.registry import ResourceTypeRegistry
from engine.template.environment import Environment, child_registry
from engine.template.loader import written_resources
from engine.template.parse import SourceDocument, document
from engine.vocabulary import Action, Status

# Heat's default timeout of a stack, when neither the child nor the parent has one.
DEFAULT_TIMEOUT_SECONDS = 3600


class WorkerNestedStacks:
    """``Runtime.nested`` for one resource of one (parent) stack. The parent is read in
    each call's own transaction: its definition may change between calls (an update)."""

    def __init__(self, db: Database, clock: Clock, registry: ResourceTypeRegistry,
                 parent_id: str, resource_name: str, max_depth: int) -> None:
        self._db = db
        self._clock = clock
        self._registry = registry
        self._parent_id = parent_id
        self._resource = resource_name
        self._max_depth = max_depth

    def _context(self, session: DbSession, stack: Stack) -> OperationContext:
        """The context of an operation on ``stack`` (the parent, or a child), asked for
        by the parent's running operation."""
        return _context(stack, stack_rows.running_request_id(session, self._parent_id))

    def template_file(self, name: str) -> Any:
        with self._db.read() as session:
            files = dict(stack_rows.load_stack(session, self._parent_id).files or {})
        if name not in files:
            raise KeyError(f'The template "{name}" is not in the stack\'s files')
        return files[name]

    def create(self, name: str, template: Any, parameters: Mapping[str, Any], *,
               template_file: str = "template", timeout_mins: int | None = None) -> str:
        now = self._clock()
        with self._db.transaction() as session:
            existing = stack_trees.live_child_stack(session, self._parent_id, self._resource)
            if existing is not None:
                return existing.id
            parent = stack_rows.load_stack(session, self._parent_id)
            depth = (parent.nested_depth or 0) + 1
            if depth > self._max_depth:
                raise RequestLimitExceeded(reason=f"Maximum nested stack depth "
                                                  f"({self._max_depth}) exceeded")
            child_id = str(uuid.uuid4())
            definition = self._definition(session, parent, child_id, name, template,
                                          parameters, template_file)
            _check_total(session, parent.id, definition.pop("resources"))
            minutes = timeout_mins or parent.timeout_mins
            stack = Stack(
                id=child_id, tenant_id=parent.tenant_id, name=name,
                description=definition.pop("description"), outputs=None, tags=[],
                disable_rollback=True, timeout_mins=minutes, owner=parent.owner,
                created_at=now, owner_id=parent.id, parent_resource=self._resource,
                nested_depth=depth, **definition)
            operation = transitions.new_operation(
                self._context(session, parent), child_id, Action.CREATE, now,
                (minutes or 0) * 60 or DEFAULT_TIMEOUT_SECONDS)
            transitions.begin_stack(session, stack, operation,
                                    reasons.stack_started(Action.CREATE), now)
        return child_id

    def update(self, stack_id: str, template: Any, parameters: Mapping[str, Any], *,
               template_file: str = "template", timeout_mins: int | None = None) -> None:
        now = self._clock()
        with self._db.transaction() as session:
            parent = stack_rows.load_stack(session, self._parent_id)
            stack = stack_rows.load_stack(session, stack_id)
            target = self._definition(session, parent, stack_id, stack.name, template,
                                      parameters, template_file)
            target.pop("description")
            resources = target.pop("resources")
            running = stack_rows.unfinished_operation(session, stack_id)
            if running is not None and running.action == Action.UPDATE and _same_definition(
                    (running.payload or {}).get("target") or {}, target):
                return
            # The child's resources are counted as its new template's, not twice.
            _check_total(session, parent.id, resources - resource_rows.count_resources(
                session, stack_id))
            stack.facade = target.pop("facade")
            previous: StackDefinition = {
                "template": stack.template, "parameters": stack.parameters,
                "environment": stack.environment, "files": stack.files}
            definition: StackDefinition = {
                "template": target["template"], "parameters": target["parameters"],
                "environment": target["environment"], "files": target["files"]}
            stack.timeout_mins = timeout_mins or stack.timeout_mins
            transitions.begin(session, stack, transitions.new_operation(
                self._context(session, parent), stack_id, Action.UPDATE, now,
                (stack.timeout_mins or 0) * 60 or DEFAULT_TIMEOUT_SECONDS,
                {"previous": previous, "target": definition}),
                reasons.stack_started(Action.UPDATE), now)

    def delete(self, stack_id: str) -> None:
        """Start deleting the child; one busy with another operation has it cancelled
        first, and the delete follows (as a stack delete does)."""
        now = self._clock()
        with self._db.transaction() as session:
            running = stack_rows.unfinished_operation(session, stack_id)
            stack = stack_rows.load_stack(session, stack_id)
            context = self._context(session, stack)
            if stack.deleted_at is not None:
                return
            timeout = (stack.timeout_mins or 0) * 60 or DEFAULT_TIMEOUT_SECONDS
            started = reasons.stack_started(Action.DELETE)
            if running is None:
                transitions.begin(session, stack, transitions.new_operation(
                    context, stack_id, Action.DELETE, now, timeout), started, now)
            elif running.action not in (Action.DELETE, Action.ABANDON) and not (
                    running.payload or {}).get("then"):  # else a delete is already coming
                transitions.cancel_then_delete(session, stack, running, context, timeout,
                                               started, now)

    def act(self, stack_id: str, action: str) -> None:
        now = self._clock()
        with self._db.transaction() as session:
            running = stack_rows.unfinished_operation(session, stack_id)
            if running is not None and running.action == action:
                return  # a step taken over asking again
            stack = stack_rows.load_stack(session, stack_id)
            transitions.begin(session, stack, transitions.new_operation(
                self._context(session, stack), stack_id, action, now,
                (stack.timeout_mins or 0) * 60 or DEFAULT_TIMEOUT_SECONDS),
                reasons.stack_started(action), now)

    def state(self, stack_id: str) -> NestedState | None:
        with self._db.read() as session:
            stack = session.get(Stack, stack_id)
            if stack is None:
                return None
            if stack.deleted_at is not None:
                return NestedState(Action.DELETE, Status.COMPLETE, stack.status_reason, {})
            # A finished operation's end is what the parent waits for; while one runs (or
            # is still queued behind the stack row's last state) the child is busy.
            busy = stack_rows.is_busy(session, stack_id)
            outputs = {o["output_key"]: o.get("output_value")
                       for o in (stack.outputs or []) if isinstance(o, Mapping)}
            status = Status.IN_PROGRESS if busy else stack.status
            return NestedState(stack.action, status, stack.status_reason or "", outputs)

    def resource_definitions(self, stack_id: str) -> Mapping[str, Any]:
        with self._db.read() as session:
            template = stack_rows.load_stack(session, stack_id).template or {}
        resources = template.get("resources") or {}
        return {str(name): body for name, body in resources.items()}

    # --- helpers ------------------------------------------------------------------------

    def _definition(self, session: DbSession, parent: Stack, stack_id: str, name: str,
                    template: Any, parameters: Mapping[str, Any], template_file: str
                    ) -> dict[str, Any]:
        """The child's stored definition, checked as a create checks it (errors name the
        child's template file and line). It inherits the parent's files, registry (its
        ``resources`` those the parent resource's name matches), parameter_defaults and
        event sinks, never its parameters, as in Heat."""
        doc = document(template, template_file)
        facade = self._facade(session, parent)
        inherited = Environment.from_dict(parent.environment)
        environment: dict[str, Any] = {
            "parameter_defaults": dict(inherited.parameter_defaults),
            "resource_registry": child_registry(inherited.resource_registry, self._resource),
            "parameters": dict(parameters)}
        if inherited.event_sinks:  # as Heat's child environment: the parent's sinks too
            environment["event_sinks"] = [dict(sink) for sink in inherited.event_sinks]
        files = dict(parent.files or {})
        ir = build_from_document(doc, parameters,
                                 pseudo_parameters(stack_id, name, parent.tenant_id),
                                 self._registry.get, files=files, environment=environment,
                                 constraints=self._registry.constraint, facade=facade)
        return {"template": doc.data, "parameters": dict(parameters),
                "environment": environment, "files": files, "facade": facade,
                "description": ir.description, "resources": written_resources(doc)}

    def _facade(self, session: DbSession, parent: Stack) -> dict[str, Any]:
        """The owning resource as ``resource_facade`` shows it, from the parent's stored
        definition (metadata and update policy as written)."""
        written = ((parent.template or {}).get("resources") or {}).get(self._resource) or {}
        if not isinstance(written, Mapping):
            written = {}
        policy = written.get("deletion_policy", written.get("DeletionPolicy", "Delete"))
        if not isinstance(policy, str):
            # A function of parameters: the policy the parent's step decided and stored.
            policy = resource_rows.get_stack_resource(session, parent.id,
                                                      self._resource).deletion_policy
        return {"metadata": written.get("metadata", written.get("Metadata")) or {},
                "deletion_policy": str(policy).capitalize(),
                "update_policy": written.get("update_policy",
                                             written.get("UpdatePolicy")) or {}}


def _check_total(session: DbSession, parent_id: str, adding: int) -> None:
    """Heat's bound on a tree of nested stacks (``_validate_nested_resources`` in
    ``heat/engine/resources/stack_resource.py``): the resources a child would add and
    every resource of its root's tree together may not pass ``max_resources_per_stack``,
    or a group of groups would multiply past every limit (1000 groups of 1000).

    A stack of the tree started but not yet planned has no resource rows: its template
    counts instead, as Heat's rows exist once its stack is created, so that siblings
    started in one round are not each measured against the tree without the others."""
    limit = budget.limits().max_resources_per_stack
    tree = stack_trees.tree_resources(session, parent_id, lock=True)
    pending = sum(max(written_resources(SourceDocument(template)) - rows, 0)
                  for template, rows in tree.unplanned)
    if tree.rows + pending + adding > limit:
        raise RequestLimitExceeded(reason="Maximum resources per stack exceeded.")


def _same_definition(stored: Mapping[str, Any], target: Mapping[str, Any]) -> bool:
    return all(stored.get(key) == target.get(key) for key in ("template", "parameters"))


def _context(stack: Stack, request_id: str) -> OperationContext:
    """The requester a child's operations record: the stack's owner, acting for its
    tenant (lifecycle plugins see nested operations as Heat's do), and the request the
    parent's operation came from, so that its log lines lead to the child's."""
    return {"tenant_id": stack.tenant_id, "token_tenant_id": stack.tenant_id, "role": "",
            "request_id": request_id, "username": stack.owner or "",
            "nested_in": stack.owner_id or stack.id}
