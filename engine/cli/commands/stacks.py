"""``kiln-manage stack list|show|resources|events|template``: every tenant's stacks."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import yaml
from cliff.command import Command

from engine.cli.base import (
    KilnCommand,
    KilnLister,
    KilnShowOne,
    Names,
    Rows,
    Structured,
    age,
    ago,
    when,
)
from engine.cli.follow import Follower
from engine.clock import utcnow
from engine.services.events import EventQuery
from engine.services.operator import STACK_ORDERS, OperationRecord, StackFilter
from engine.vocabulary import Status

LIST_FIELDS = ("id", "name", "tenant", "action", "status", "status_reason", "created_at",
               "updated_at", "last_change")
RESOURCE_FIELDS = ("resource_name", "type", "action", "status", "status_reason",
                   "physical_resource_id", "required_by", "updated_at")
EVENT_FIELDS = ("time", "resource_name", "action", "status", "reason", "id")
LIFECYCLE_FIELDS = ("time", "plugin", "phase", "action", "verdict", "message")
SHOWN_EVENTS = 10


def resource_row(record: Any) -> dict[str, Any]:
    return {"resource_name": record.name, "type": record.type, "action": record.action,
            "status": record.status, "status_reason": record.status_reason,
            "physical_resource_id": record.physical_id,
            "required_by": Names(list(record.required_by)),
            "updated_at": when(record.updated_at or record.created_at),
            "stack": record.stack[0] if record.stack else None}


def event_row(record: Any) -> dict[str, Any]:
    return {"time": when(record.created_at), "resource_name": record.resource_name,
            "action": record.action, "status": record.status, "reason": record.reason,
            "id": record.id, "stack": record.stack[0] if record.stack else None}


def event_line(fields: dict[str, Any]) -> str:
    where = f"{fields['stack']}/" if fields.get("stack") else ""
    return (f"{fields['time']}  {where}{fields['resource_name']}  "
            f"{fields['action']}_{fields['status']}  {fields['reason']}")


def operation_fields(operation: OperationRecord | None) -> dict[str, Any]:
    if operation is None:
        return {"operation_id": None, "operation": None, "held_by": None,
                "holder_alive": None, "lease_expires_at": None, "steps": None}
    steps = operation.steps
    return {"operation_id": operation.id,
            "operation": f"{operation.action} {operation.state}"
                         + (" (cancel requested)" if operation.cancelled else ""),
            "held_by": Names(list(operation.held_by)),
            "holder_alive": operation.holder_alive,
            "lease_expires_at": when(operation.lease_expires_at),
            "steps": f"{steps.done}/{steps.total} done, {steps.running} running, "
                     f"{steps.failed} failed"}


class StackList(KilnLister):
    """List the stacks of every tenant (or one), newest first.

    --status takes COMPLETE, FAILED, IN_PROGRESS or an action with it (CREATE_FAILED);
    --older-than keeps stacks whose last change (update, else creation) is older than
    the age given: find operations that have been running too long with
    ``--status IN_PROGRESS --older-than 1h``."""

    example = "kiln-manage stack list --status FAILED --older-than 1d --sort updated"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--tenant", help="only this tenant's (name or id)")
        parser.add_argument("--name", action="append", default=[], help="repeatable")
        parser.add_argument("--status", action="append", default=[], help="repeatable")
        parser.add_argument("--action", action="append", default=[],
                            help="CREATE, UPDATE, DELETE, …; repeatable")
        parser.add_argument("--older-than", type=age, metavar="AGE",
                            help="last changed longer ago than AGE (30d, 12h, 90m, 45s)")
        parser.add_argument("--deleted", action="store_true",
                            help="include deleted stacks")
        parser.add_argument("--nested", action="store_true", help="include nested stacks")
        parser.add_argument("--sort", choices=STACK_ORDERS, default="created")
        parser.add_argument("--asc", action="store_true", help="oldest / A first")
        parser.add_argument("--limit", type=int)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        wanted = StackFilter(
            tenant=parsed_args.tenant, names=parsed_args.name, actions=parsed_args.action,
            statuses=parsed_args.status, older_than=parsed_args.older_than,
            show_deleted=parsed_args.deleted, show_nested=parsed_args.nested,
            order=parsed_args.sort, descending=not parsed_args.asc, limit=parsed_args.limit)
        at = utcnow()
        rows = [(s.stack.id, s.stack.name, s.tenant_name, s.stack.action, s.stack.status,
                 s.stack.status_reason, when(s.stack.created_at), when(s.stack.updated_at),
                 ago(s.stack.updated_at or s.stack.created_at, at))
                for s in self.kiln.operator.list_stacks(wanted)]
        return LIST_FIELDS, rows


class StackShow(KilnShowOne):
    """Show a stack: status, operation and lease, resources, events, plugin decisions.

    Also its timings, parameters (hidden ones masked) and outputs."""

    of_stack = True
    example = "kiln-manage stack show web --tenant acme"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--events", type=int, default=SHOWN_EVENTS, metavar="N",
                            help=f"how many of the last events to show ({SHOWN_EVENTS})")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        operator = self.kiln.operator
        ref = self.stack_ref(parsed_args)
        ctx = ref.context()
        stack = operator.stack(ref)
        resources = self.kiln.stack_resources.list_resources(ctx, ref.name, ref.id, {})
        events = self.kiln.stack_events.list_events(ctx, ref.name, ref.id,
                                                    EventQuery(limit=parsed_args.events))
        calls = self.kiln.stack_events.lifecycle_calls(ctx, ref.name, ref.id)
        fields: dict[str, Any] = {
            "id": stack.id, "name": stack.name, "tenant_id": ref.tenant_id,
            "tenant": ref.tenant_name, "action": stack.action, "status": stack.status,
            "status_reason": stack.status_reason, "description": stack.description,
            "created_at": when(stack.created_at), "updated_at": when(stack.updated_at),
            "deleted_at": when(stack.deleted_at), "timeout_mins": stack.timeout_mins,
            "disable_rollback": stack.disable_rollback, "parent": stack.parent,
            **operation_fields(operator.current_operation(ref)),
            "parameters": Structured(stack.parameters),
            "outputs": Structured([{"output_key": o.get("output_key"),
                                    "output_value": o.get("output_value"),
                                    "output_error": o.get("output_error")}
                                   for o in stack.outputs or []]),
            "resources": Rows([{**resource_row(r), "status": f"{r.action}_{r.status}"}
                               for r in resources],
                              ("resource_name", "type", "status", "status_reason",
                               "physical_resource_id")),
            "last_events": Rows([event_row(e) for e in reversed(events)],
                                ("time", "resource_name", "action", "status", "reason")),
            "lifecycle": Rows([{**call, "message": call.get("message", "")}
                               for call in calls], LIFECYCLE_FIELDS),
        }
        return tuple(fields), tuple(fields.values())


class StackResources(KilnLister):
    """List a stack's resources with their status, reason and physical id."""

    of_stack = True
    example = "kiln-manage stack resources web --status FAILED"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--status", action="append", default=[],
                            help="only these (FAILED, CREATE_FAILED, …); repeatable")
        parser.add_argument("--nested-depth", type=int, default=0, metavar="N",
                            help="include resources of nested stacks, N levels down")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        ref = self.stack_ref(parsed_args)
        filters = {"status": parsed_args.status} if parsed_args.status else {}
        records = self.kiln.stack_resources.list_resources(
            ref.context(), ref.name, ref.id, filters, nested_depth=parsed_args.nested_depth)
        fields = (*RESOURCE_FIELDS, "stack") if parsed_args.nested_depth else RESOURCE_FIELDS
        rows = [resource_row(r) for r in records]
        return fields, [tuple(row[f] for f in fields) for row in rows]


class StackEvents(KilnLister):
    """List a stack's events; with --follow, stream them until its operation ends.

    Events are listed oldest first. --follow shows the operation's progress (steps done
    out of all) as well.
    Following, events are printed one per line (JSON lines with -f json) and the
    progress is a bar on a terminal, a plain line whenever it changes otherwise. The
    exit status is then 1 if the stack ended FAILED."""

    of_stack = True
    example = "kiln-manage stack events web --follow"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--limit", type=int, default=50, metavar="N",
                            help="the last N events (50)")
        parser.add_argument("--resource", help="only this resource's events")
        parser.add_argument("--nested-depth", type=int, default=0, metavar="N",
                            help="include events of nested stacks, N levels down")
        parser.add_argument("--follow", action="store_true",
                            help="stream new events until the operation ends")
        parser.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                            help="how often --follow looks (1.0)")
        return parser

    def run(self, parsed_args: argparse.Namespace) -> int:
        if not parsed_args.follow:
            return super().run(parsed_args)
        ref = self.stack_ref(parsed_args)
        follower = Follower(self.kiln.operator, self.kiln.stack_events, ref, sys.stdout,
                            as_json=parsed_args.formatter == "json",
                            is_tty=sys.stdout.isatty(), interval=parsed_args.interval,
                            render=event_row, line=event_line)
        status = follower.run(parsed_args.limit, parsed_args.nested_depth)
        return 1 if status == Status.FAILED else 0

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        ref = self.stack_ref(parsed_args)
        events = self.kiln.stack_events.list_events(ref.context(), ref.name, ref.id,
                                                    EventQuery(limit=parsed_args.limit),
                                                    resource_name=parsed_args.resource,
                                                    nested_depth=parsed_args.nested_depth)
        fields = (*EVENT_FIELDS, "stack") if parsed_args.nested_depth else EVENT_FIELDS
        rows = [event_row(e) for e in reversed(events)]
        return fields, [tuple(row[f] for f in fields) for row in rows]


class StackTemplate(KilnCommand):
    """Print the stack's template as stored (YAML, or JSON with --json)."""

    of_stack = True
    example = "kiln-manage stack template web > web.yaml"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--json", action="store_true", help="JSON instead of YAML")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        ref = self.stack_ref(parsed_args)
        template = self.kiln.stack_reads.get_template(ref.context(), ref.name, ref.id)
        if parsed_args.json:
            print(json.dumps(template, indent=2))
        else:
            print(yaml.safe_dump(template, sort_keys=False, default_flow_style=False), end="")
        return 0


COMMANDS: dict[str, type[Command]] = {
    "stack list": StackList, "stack show": StackShow, "stack resources": StackResources,
    "stack events": StackEvents, "stack template": StackTemplate,
}
