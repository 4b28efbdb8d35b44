"""Approval gates: a person's decision on an operation a lifecycle plugin parked for one
(``engine.lifecycle.base.Pending``).

A tenant's admin decides through the API (``.../stacks/{name}/{id}/approval``), an
operator through ``kiln-manage operation approve|reject``; both go through
``transitions.decide_approval``, which records who and why (and an event) and wakes the
operation so that a worker takes it up. The decision is the worker's to act on: this
service never calls a plugin."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from engine import reasons
from engine.clock import Clock
from engine.context import RequestContext
from engine.db import stack_rows, transitions
from engine.db.models import ApprovalState, Operation, Stack
from engine.db.session import Database, DbSession
from engine.errors import (
    ApprovalForbidden,
    BadRequest,
    EntityNotFound,
    NoApprovalAwaited,
    NoApprovalFound,
)
from engine.vocabulary import Verdict

#: What a request body's ``decision`` may say, and the verdict it gives the gate.
DECISIONS = {"approve": Verdict.APPROVED, "reject": Verdict.REJECTED}
MAX_COMMENT = 1000


@dataclasses.dataclass(frozen=True)
class ApprovalRecord:
    """One approval gate as the API and the admin CLI show it."""

    operation_id: str
    stack_id: str
    stack_name: str
    action: str
    plugin: str
    message: str
    override: bool
    requested_at: str
    expires_at: str
    decision: str | None = None
    decided_by: str | None = None
    comment: str | None = None
    decided_at: str | None = None

    @classmethod
    def of(cls, operation: Operation, stack: Stack, approval: ApprovalState
           ) -> ApprovalRecord:
        return cls(operation_id=operation.id, stack_id=stack.id, stack_name=stack.name,
                   action=operation.action, plugin=approval.get("plugin", ""),
                   message=approval.get("message", ""),
                   override=bool(approval.get("override")),
                   requested_at=approval.get("requested_at", ""),
                   expires_at=approval.get("expires_at", ""),
                   decision=approval.get("decision"), decided_by=approval.get("decided_by"),
                   comment=approval.get("comment"), decided_at=approval.get("decided_at"))

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def decision_of(body: Mapping[str, Any]) -> tuple[Verdict, str]:
    """The verdict and comment of a request body ``{"decision": "approve" | "reject",
    "comment": "..."}``; BadRequest naming what is wrong."""
    unknown = sorted(set(body) - {"decision", "comment"})
    if unknown:
        raise BadRequest(reason=f"Unknown key(s) in the approval: {', '.join(unknown)} "
                                f"(expected decision and an optional comment)")
    decision = body.get("decision")
    if decision not in DECISIONS:
        raise BadRequest(reason=f"The approval's decision must be one of "
                                f"{', '.join(DECISIONS)}, not {decision!r}")
    comment = body.get("comment", "")
    if not isinstance(comment, str) or len(comment) > MAX_COMMENT:
        raise BadRequest(reason=f"The approval's comment must be a string of at most "
                                f"{MAX_COMMENT} characters")
    return DECISIONS[decision], " ".join(comment.split())


class Approvals:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def awaited(self, ctx: RequestContext, name: str, stack_id: str) -> ApprovalRecord:
        """What the stack's operation waits for; 404 when it waits for nothing."""
        with self._db.read() as session:
            stack = stack_rows.get_stack(session, ctx.tenant_id, name, stack_id)
            operation = stack_rows.unfinished_operation(session, stack.id, lock=False)
            approval = transitions.awaited_approval(operation) if operation else None
            if operation is None or approval is None:
                raise NoApprovalFound(stack=name)
            return ApprovalRecord.of(operation, stack, approval)

    def decide(self, ctx: RequestContext, name: str, stack_id: str,
               body: Mapping[str, Any]) -> ApprovalRecord:
        """A tenant admin's decision on the approval the stack's operation waits for."""
        if not ctx.is_admin:
            raise ApprovalForbidden()
        verdict, comment = decision_of(body)
        # Kiln's tokens name no user: the token is who decided (kiln-manage token list).
        by = (f"token {ctx.username}" if ctx.username
              else f"an admin of tenant {ctx.token_tenant_id}")
        for attempt in self._db.retrying():
            with attempt as session:
                stack, operation = stack_rows.lock_stack(session, ctx.tenant_id, name,
                                                         stack_id)
                record = self._decide(session, stack, operation, verdict, by, comment)
        return record

    def decide_operation(self, operation_id: str, verdict: Verdict, comment: str,
                         actor: str) -> ApprovalRecord:
        """An operator's decision on the approval ``operation_id`` (a full id) waits for."""
        with self._db.transaction() as session:
            operation = session.get(Operation, operation_id, with_for_update=True)
            if operation is None:
                raise EntityNotFound(entity="Operation", name=operation_id)
            stack = stack_rows.load_stack(session, operation.stack_id)
            return self._decide(session, stack, operation, verdict, f"operator {actor}",
                                " ".join(comment.split()))

    def _decide(self, session: DbSession, stack: Stack, operation: Operation | None,
                verdict: Verdict, by: str, comment: str) -> ApprovalRecord:
        approval = transitions.awaited_approval(operation) if operation else None
        # Decided already (and not yet taken up by a worker) counts as not waiting: the
        # first decision stands.
        if operation is None or approval is None or "decision" in approval:
            raise NoApprovalAwaited(stack=stack.name)
        reason = reasons.approval_decided(verdict, by, comment,
                                          bool(approval.get("override")))
        transitions.decide_approval(session, operation, stack, verdict, by, comment, reason,
                                    self._clock())
        return ApprovalRecord.of(operation, stack, operation.lifecycle["approval"])
