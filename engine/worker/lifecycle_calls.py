"""Calls the lifecycle plugins around an operation, one recorded call at a time.

Calls happen outside any database transaction (a plugin may take seconds, and on SQLite
an open write transaction would stop every other writer), and each returned call is
recorded at once, in its own short transaction guarded by the operation's claim: in
``operations.lifecycle`` (so a worker that takes over neither repeats nor skips a call)
and as a stack event (so tenants and operators see it). A call whose worker died before
recording it is made again by the next worker; the plugin contract asks for idempotence.
No call starts once the worker may not act on its claims, and no wait on one goes on
once it was fenced (``engine/worker/liveness.py``): ``NotLive`` is raised and the
operation given back. A call under way when the worker merely pauses is waited for, and
recorded if the operation is still the worker's: calling it again would be worse.

A plugin that wants the root stack only (``tree_scope = "root"``) is not called for a
nested stack's operation: its pre-op is recorded as skipped, as below.

The plan the pre-ops see (``planned_changes``) is kept with the operation, its actions
only, in its own short transaction guarded by the lease, so the post-ops see it too,
beside what became of each resource (read from the rows as they are called).

On UPDATE a plugin's pre-op is skipped when its cache key equals the one recorded with
its call in the stack's last update that completed (``operations.lifecycle`` keeps it,
so no other table does).
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from engine import reasons
from engine.clock import Clock
from engine.context import RequestContext
from engine.db import event_rows, resource_rows, stack_rows, stack_trees, transitions
from engine.db.leases import LeaseLost
from engine.db.models import LifecycleProgress, Operation, OperationContext, Stack
from engine.db.models import Resource as ResourceRow
from engine.db.session import Database, DbSession
from engine.errors import KilnError
from engine.ir.stored import StoredIrs
from engine.lifecycle.planned import outcomes, plan_record, recalled, with_changes
from engine.lifecycle.registry import LifecycleRegistry, LoadedPlugin
from engine.lifecycle.runner import (
    ALLOW,
    APPROVED,
    ERROR,
    EXPIRED,
    PENDING,
    POST,
    PRE,
    SKIPPED,
    WARN,
    Call,
    CallRecord,
    invoke,
    out_of_scope,
)
from engine.lifecycle.snapshot import Redefined, StackFacts, TreeMemberFacts, stack_view
from engine.lifecycle.view import ResourceChange, StackView
from engine.resources.registry import ResourceTypeRegistry
from engine.vocabulary import Action, Change, OperationState, Verdict
from engine.worker.planned_changes import PlannedChanges
from engine.worker.stored_scope import operation_secrets, stack_secrets

LOG = logging.getLogger(__name__)


class LifecycleCalls:
    """An operation's lifecycle plugin calls: its pre-ops, then its post-ops."""

    def __init__(self, db: Database, types: ResourceTypeRegistry, plugins: LifecycleRegistry,
                 owner: str, clock: Clock, *, irs: StoredIrs,
                 live: Callable[[], None] | None = None,
                 not_fenced: Callable[[], None] | None = None,
                 heartbeat_seconds: float = 0.5) -> None:
        """``live`` raises ``NotLive`` when the worker may not act on its claims, asked
        before each call; ``not_fenced`` when it was fenced, asked every
        ``heartbeat_seconds`` while one runs (by default it always may)."""
        self._db = db
        # The driver's: the plan then uses the IR the pre-ops' views were built from.
        self._irs = irs
        self._plugins = plugins
        self._owner = owner
        self._clock = clock
        self._live = live or _always
        self._not_fenced = not_fenced or _always
        self._heartbeat_seconds = heartbeat_seconds
        self._planned = PlannedChanges(db, types, clock, irs)

    def pre_ops(self, operation_id: str) -> None:
        """Call every pre-op not yet recorded, in order, stopping at the first that fails
        the operation. The driver reads the verdicts from ``operations.lifecycle``."""
        call, progress = self._read(operation_id, is_stack_failure=False, keys=True)
        if call is not None and _awaits_decision(progress):
            if not self._settle_approval(operation_id):
                return  # still undecided: the driver parks the operation again
            call, progress = self._read(operation_id, is_stack_failure=False, keys=True)
        if call is None or any(item.get("blocking") for item in progress.get("pre", [])):
            return
        called = {item["plugin"] for item in progress.get("pre", [])}
        if all(loaded.name in called for loaded in self._plugins.plugins):
            return
        changes = self._planned.of(operation_id)
        if changes is not None and progress.get("planned") != plan_record(changes):
            self._remember(operation_id, changes)
        call = with_changes(call, changes)
        if call.cached_keys and not _changes_nothing(changes):
            # A key vouches for the plugin's inputs, not for the resources: one marked
            # unhealthy (to be replaced) or changed outside an update since must be seen.
            call = dataclasses.replace(call, cached_keys={})
        for loaded in self._plugins.plugins:
            if loaded.name in called:
                continue
            # A root-only plugin, on a nested stack: recorded as skipped, owed no post-op.
            record = out_of_scope(loaded, call) or self._invoke(loaded, PRE, call)
            self._record(operation_id, record, loaded.approval_window_seconds)
            if record.blocking or record.verdict == PENDING:
                return  # denied, or parked until a person decides

    def post_ops(self, operation_id: str, is_stack_failure: bool) -> None:
        """Call the post-op of every plugin whose pre-op was called, in reverse order;
        one that fails is recorded and the rest still run."""
        call, progress = self._read(operation_id, is_stack_failure=is_stack_failure,
                                    post=True)
        if call is None:
            return
        done = {item["plugin"] for item in progress.get("post", [])}
        for name in progress.get("post_order", []):
            if name in done:
                continue
            loaded = self._plugins.find(name)
            if loaded is None:
                # Disabled or uninstalled since its pre-op: nobody left to call.
                record = CallRecord(plugin=name, phase=POST, action=call.action,
                                    verdict=ERROR, duration_ms=0,
                                    message="plugin is no longer enabled on this worker",
                                    is_stack_failure=is_stack_failure)
            else:
                record = self._invoke(loaded, POST, call)
            self._record(operation_id, record)

    # --- pieces -------------------------------------------------------------------------

    def _read(self, operation_id: str, is_stack_failure: bool, keys: bool = False,
              post: bool = False) -> tuple[Call | None, dict[str, Any]]:
        """The call for the operation's plugins, and its lifecycle progress; for the
        post-ops (``post``) with the stored plan and each resource's outcome."""
        with self._db.read() as session:
            operation = session.get(Operation, operation_id)
            if operation is None or operation.lease_owner != self._owner:
                return None, {}
            stack = stack_rows.load_stack(session, operation.stack_id)
            payload = operation.payload or {}
            lineage = stack_trees.lineage(session, stack)
            # Read once for every view of the call (a stack of 10,000 resources is 10,000
            # rows).
            stored = {row.name: row for row in resource_rows.list_resources(session, stack.id)}
            current = None
            if "target" in payload:
                # Update and its rollback: ``stack`` is what the stack was, and
                # ``current_stack`` what it becomes, as Heat passes them.
                view = self._view(Redefined.of(stack, payload["previous"]), stored,
                                  operation.action, lineage)
                current = self._view(Redefined.of(stack, payload["target"]), stored,
                                     operation.action, lineage, target=True)
            else:
                view = self._view(stack, stored, operation.action, lineage)
            context = _context(operation, stack)
            cached = (_cached_keys(session, operation)
                      if keys and operation.action == Action.UPDATE else None)
            call = Call(context=context, stack=view, action=operation.action,
                        current_stack=current, is_stack_failure=is_stack_failure,
                        cached_keys=cached, by_parent="nested_in" in (operation.context or {}))
            progress = dict(operation.lifecycle or {})
            if post:
                planned = (operation.lifecycle or {}).get("planned")
                changes = recalled(planned) if planned is not None else None
                call = with_changes(call, changes, outcomes(
                    stored, changes or {}, operation_secrets(stack, payload)))
            return call, progress

    def _view(self, stack: StackFacts, stored: Mapping[str, ResourceRow], action: str,
              lineage: Sequence[TreeMemberFacts], target: bool = False) -> StackView:
        secrets = stack_secrets(stack)
        try:
            return stack_view(stack, action=action, ir=self._irs.of(stack),
                              stored=stored, secrets=secrets, target=target,
                              lineage=lineage)
        except KilnError:
            pass  # e.g. a type uninstalled since: plugins still see the stored rows
        except Exception:  # noqa: BLE001 -- a bug in the view must not fail the operation
            # Every operation of the stack reads this view, its delete too: failing here
            # would leave a stack no one can delete. The stored rows need no evaluation.
            LOG.exception("stack %s: its %s view for the lifecycle plugins failed; they "
                          "see the stored resources only", stack.id, action)
        return stack_view(stack, action=action, ir=None, stored=stored, secrets=secrets,
                          target=target, lineage=lineage)

    def _settle_approval(self, operation_id: str) -> bool:
        """Take up the decision on the approval the operation waits for: approved, it
        goes on with the next plugin; rejected or expired, it is denied as by the plugin
        (``transitions.settle_approval``). False while undecided and within its window."""
        now = self._clock()
        with self._db.transaction() as session:
            operation = session.get(Operation, operation_id, with_for_update=True)
            if operation is None or operation.lease_owner != self._owner:
                raise LeaseLost(operation_id)
            approval = transitions.awaited_approval(operation)
            if approval is None:
                return True
            pending = operation.lifecycle["pre"][-1]
            decision = approval.get("decision")
            if decision is None:
                if now < datetime.datetime.fromisoformat(approval["expires_at"]):
                    return False
                verdict, message = EXPIRED, f"no decision by {approval['expires_at']}"
            else:
                verdict = Verdict(decision)
                message = reasons.approval_by(approval.get("decided_by", ""),
                                              approval.get("comment", ""))
            record = {**pending, "verdict": verdict, "message": message,
                      "blocking": verdict != APPROVED}
            transitions.settle_approval(operation, record, now)
            if verdict == EXPIRED:
                # Approvals and rejections have their event from the person's request.
                stack = stack_rows.load_stack(session, operation.stack_id)
                event_rows.add_lifecycle_event(
                    session, stack, operation.id, record,
                    reasons.approval_expired(pending["plugin"], approval["expires_at"]), now)
            return True

    def _record(self, operation_id: str, record: CallRecord,
                approval_window_seconds: float | None = None) -> None:
        now = self._clock()
        with self._db.transaction() as session:
            operation = session.get(Operation, operation_id, with_for_update=True)
            if operation is None or operation.lease_owner != self._owner:
                raise LeaseLost(operation_id)
            progress: LifecycleProgress = {**(operation.lifecycle or {})}
            key: Literal["pre", "post"] = "pre" if record.phase == PRE else "post"
            progress[key] = [*progress.get(key, []), record.as_dict()]
            operation.lifecycle = progress  # a new object, so the JSON column is written
            stack = stack_rows.load_stack(session, operation.stack_id)
            event_rows.add_lifecycle_event(
                session, stack, operation.id, record.as_dict(),
                f"{record.summary()} ({record.duration_ms} ms)", now)
            if record.verdict == PENDING:
                window = record.window_seconds or approval_window_seconds or 0.0
                expires_at = now + datetime.timedelta(seconds=window)
                transitions.await_approval(
                    operation, stack, record.as_dict(), expires_at,
                    reasons.awaiting_approval(record.plugin, record.message,
                                              expires_at.isoformat(timespec="seconds")),
                    now)

    def _remember(self, operation_id: str, changes: Mapping[str, ResourceChange]) -> None:
        """Keep the plan's actions with the operation, for its post-ops."""
        with self._db.transaction() as session:
            operation = session.get(Operation, operation_id, with_for_update=True)
            if operation is None or operation.lease_owner != self._owner:
                raise LeaseLost(operation_id)
            # A new object, so the JSON column is written.
            operation.lifecycle = {**(operation.lifecycle or {}),
                                   "planned": plan_record(changes)}

    def _invoke(self, loaded: LoadedPlugin, phase: str, call: Call) -> CallRecord:
        """One plugin call, started only while we may act on our claims, and abandoned
        (``NotLive``) should we be fenced while it runs: the operation is ours while our
        liveness holds, so nothing is written per call to keep it."""
        self._live()
        return invoke(loaded, phase, call, self._not_fenced, self._heartbeat_seconds)


def _always() -> None:
    """A worker with no liveness to check (tests that drive the calls directly)."""


def _awaits_decision(progress: LifecycleProgress | dict[str, Any]) -> bool:
    pre = progress.get("pre", [])
    return bool(pre) and pre[-1].get("verdict") == PENDING


def _changes_nothing(changes: Mapping[str, ResourceChange] | None) -> bool:
    """Whether the plan is known and leaves every resource as it is."""
    return changes is not None and all(
        change.action == Change.NONE for change in changes.values())


def _cached_keys(session: DbSession, operation: Operation) -> dict[str, str]:
    """Each plugin's cache key as recorded by the stack's last operation, if that was an
    update that completed by itself; none after anything else (a failed update's leftovers
    or un-made post-ops, a delete, a check or an operator's reset are worth a fresh
    decision)."""
    last = stack_rows.last_finished_operation(session, operation.stack_id)
    if (last is None or last.action != Action.UPDATE or last.state != OperationState.COMPLETE
            or last.failure_reason is not None):
        return {}
    return {item["plugin"]: item["cache_key"] for item in (last.lifecycle or {}).get("pre", [])
            if item.get("cache_key") and item.get("verdict") in (ALLOW, WARN, SKIPPED)}


def _context(operation: Operation, stack: Stack) -> RequestContext:
    """The requester's context as stored with the operation (the stack's owner when the
    operation predates that record)."""
    stored: OperationContext | dict[str, str] = operation.context or {}
    return RequestContext(tenant_id=stored.get("tenant_id", stack.tenant_id),
                          token_tenant_id=stored.get("token_tenant_id", stack.tenant_id),
                          role=stored.get("role", "member"),
                          request_id=stored.get("request_id", ""),
                          username=stored.get("username", ""))
