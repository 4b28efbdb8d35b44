"""``kiln-manage operation list|show|cancel|approve|reject``: the work rows the engines
run, and the approval gates they wait at."""

from __future__ import annotations

import argparse
import datetime
from typing import Any, ClassVar

from cliff.command import Command

from engine.cli.base import KilnLister, KilnShowOne, Names, Structured, actor, ago, when
from engine.clock import utcnow
from engine.services.operator import OperationRecord
from engine.vocabulary import Verdict

LIST_FIELDS = ("id", "stack_name", "action", "state", "age", "held_by", "holder_alive",
               "lease_expires_at", "steps_done", "steps_total")


def _list_row(op: OperationRecord, now: datetime.datetime) -> tuple[Any, ...]:
    return (op.id, op.stack_name, op.action, op.state, ago(op.created_at, now),
            Names(list(op.held_by)), op.holder_alive, when(op.lease_expires_at),
            op.steps.done, op.steps.total)


def _show(op: OperationRecord) -> tuple[Any, Any]:
    fields: dict[str, Any] = {
        "id": op.id, "stack_id": op.stack_id, "stack_name": op.stack_name,
        "tenant_id": op.tenant_id, "action": op.action, "state": op.state,
        "attempt": op.attempt, "cancel_requested": op.cancelled,
        "created_at": when(op.created_at), "updated_at": when(op.updated_at),
        "finished_at": when(op.finished_at), "deadline_at": when(op.deadline_at),
        "held_by": Names(list(op.held_by)), "holder_alive": op.holder_alive,
        "lease_expires_at": when(op.lease_expires_at),
        "steps_total": op.steps.total, "steps_done": op.steps.done,
        "steps_running": op.steps.running, "steps_failed": op.steps.failed,
        "step_holders": Structured(op.step_holders),
        "awaiting_approval": Structured(op.awaiting_approval or {}),
        "failure_reason": op.failure_reason,
    }
    return tuple(fields), tuple(fields.values())


class OperationList(KilnLister):
    """List unfinished operations with their age, lease owner and lease expiry.

    Unfinished: pending, running, or still owing lifecycle post-ops; newest first. With
    --all the finished ones are listed too."""

    example = "kiln-manage operation list --all --stack web"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--all", action="store_true", help="finished ones too")
        parser.add_argument("--stack", help="only this stack's (name or id)")
        parser.add_argument("--tenant", help="the tenant a --stack name is in")
        parser.add_argument("--limit", type=int)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        operator = self.kiln.operator
        stack = operator.find_stack(parsed_args.stack, parsed_args.tenant) \
            if parsed_args.stack else None
        now = utcnow()
        found = operator.operations(unfinished_only=not parsed_args.all, stack=stack,
                                    limit=parsed_args.limit)
        return LIST_FIELDS, [_list_row(op, now) for op in found]


class OperationShow(KilnShowOne):
    """Show an operation: state, lease, steps by outcome, holders and failure.

    The operation is named by its id or the first characters of it."""

    example = "kiln-manage operation show 3f2a9c1e"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("operation", help="id or its first characters (4 or more)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        return _show(self.kiln.operator.operation(parsed_args.operation))


class OperationCancel(KilnShowOne):
    """Cancel an operation: it ends FAILED at once, without rollback.

    A worker ends it: resources caught mid-action are marked FAILED ("Operation
    cancelled") and a pending operation never starts. Lifecycle post-ops are still
    called. A running engine carries the cancel out."""

    example = "kiln-manage operation cancel 3f2a9c1e"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("operation", help="id or its first characters (4 or more)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        return _show(self.kiln.operator.cancel_operation(parsed_args.operation))


class _Decide(KilnShowOne):
    decision: ClassVar[Verdict]

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("operation", help="id or its first characters (4 or more)")
        parser.add_argument("--comment", default="", help="why; recorded with the decision")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        operation_id = self.kiln.operator.operation(parsed_args.operation).id
        record = self.kiln.approvals.decide_operation(operation_id, self.decision,
                                                      parsed_args.comment, actor())
        fields = record.as_dict()
        return tuple(fields), tuple(fields.values())


class OperationApprove(_Decide):
    """Approve an operation parked at an approval gate.

    A worker takes it up at once and calls the next lifecycle plugins. The decision, the
    operator and the comment are recorded and shown as a stack event."""

    example = 'kiln-manage operation approve 3f2a9c1e --comment "change ticket 4411"'
    decision = Verdict.APPROVED


class OperationReject(_Decide):
    """Reject an operation parked at an approval gate.

    It fails as a denial does, and the lifecycle plugins already called are called back
    in reverse order. The decision, the operator and the comment are recorded and shown
    as a stack event."""

    example = 'kiln-manage operation reject 3f2a9c1e --comment "not in a freeze"'
    decision = Verdict.REJECTED


COMMANDS: dict[str, type[Command]] = {
    "operation list": OperationList, "operation show": OperationShow,
    "operation cancel": OperationCancel, "operation approve": OperationApprove,
    "operation reject": OperationReject,
}
