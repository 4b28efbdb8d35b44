"""``kiln-manage purge-deleted``: remove the records of long-deleted stacks."""

from __future__ import annotations

import argparse
from typing import Any

from cliff.command import Command

from engine.cli.base import KilnLister, age, positive, when

FIELDS = ("id", "name", "tenant_id", "deleted_at", "resources", "events")
DEFAULT_BATCH = 100


class PurgeDeleted(KilnLister):
    """Remove the records of stacks deleted longer ago than --older-than.

    Their resources, events and operations go with them, one batch (one transaction)
    at a time, and what went is listed. With --dry-run nothing is removed and the list
    is what would go."""

    example = "kiln-manage purge-deleted --older-than 30d --dry-run"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--older-than", type=age, required=True, metavar="AGE",
                            help="deleted longer ago than AGE (30d, 12h, 90m, 45s, 2w)")
        parser.add_argument("--dry-run", action="store_true")
        parser.add_argument("--batch-size", type=positive, default=DEFAULT_BATCH, metavar="N",
                            help=f"stacks per transaction ({DEFAULT_BATCH})")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        rows = []
        for batch in self.kiln.operator.purge_deleted(
                parsed_args.older_than, dry_run=parsed_args.dry_run,
                batch_size=parsed_args.batch_size):
            rows += [(s.id, s.name, s.tenant_id, when(s.deleted_at), s.resources, s.events)
                     for s in batch]
        return FIELDS, rows


COMMANDS: dict[str, type[Command]] = {"purge-deleted": PurgeDeleted}
