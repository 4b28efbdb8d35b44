"""``kiln-manage stack reset-state``: the operator's last resort for a stuck stack."""

from __future__ import annotations

import argparse
from typing import Any

from cliff.command import Command

from engine.cli.base import KilnShowOne, actor, when
from engine.services.operator import RESET_STATUSES


class StackResetState(KilnShowOne):
    """Set a stack to <ACTION>_FAILED or _COMPLETE, ending its operation.

    For a stack left IN_PROGRESS by a worker that will not come back (normally another
    worker resumes the work once the dead one's lease expires: check `worker list` and
    `operation show` first). The operation's open steps are cancelled, resources caught
    mid-action become FAILED, and an event records who reset it and why. Refused while
    a live worker holds the operation or one of its steps, unless --force. Lifecycle
    post-ops the operation still owed are called by a running engine (told the stack's
    new status), so plugins release what they reserved; --skip-post-ops records them
    as never called instead."""

    of_stack = True
    example = ('kiln-manage stack reset-state web --to FAILED '
               '--reason "engine host lost in the power cut"')

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--to", required=True, choices=RESET_STATUSES)
        parser.add_argument("--reason", required=True,
                            help="why; recorded in the stack's status reason and event")
        parser.add_argument("--force", action="store_true",
                            help="even while a live worker holds the operation")
        parser.add_argument("--skip-post-ops", action="store_true",
                            help="never call the lifecycle post-ops the operation owes "
                                 "(an event per plugin says so)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        ref = self.stack_ref(parsed_args)
        stack = self.kiln.operator.reset_state(ref, parsed_args.to, parsed_args.reason,
                                               actor(), force=parsed_args.force,
                                               skip_post_ops=parsed_args.skip_post_ops)
        return (("id", "name", "tenant", "action", "status", "status_reason", "updated_at"),
                (stack.id, stack.name, ref.tenant_name, stack.action, stack.status,
                 stack.status_reason, when(stack.updated_at)))


COMMANDS: dict[str, type[Command]] = {"stack reset-state": StackResetState}
