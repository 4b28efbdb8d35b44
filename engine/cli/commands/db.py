"""``kiln-manage db upgrade|downgrade|current|check``: the schema."""

from __future__ import annotations

import argparse
from typing import Any

from cliff.command import Command

from engine.cli.base import KilnCommand, KilnShowOne
from engine.db import migration
from engine.errors import StartupFailed


class Upgrade(KilnCommand):
    """Migrate the database schema to the newest revision (or to --revision)."""

    needs_current_schema = False
    creates_database = True  # the one command that may: see KilnCommand.creates_database
    example = "kiln-manage db upgrade"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--revision", default="head", help="target revision (head)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        migration.upgrade(self.kiln.db, parsed_args.revision)
        print(f"Database at revision {migration.current_revision(self.kiln.db)}")
        return 0


class Downgrade(KilnCommand):
    """Migrate the database schema back to REVISION ("base" empties it)."""

    needs_current_schema = False
    example = "kiln-manage db downgrade 0009"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("revision")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        migration.downgrade(self.kiln.db, parsed_args.revision)
        print(f"Database at revision {migration.current_revision(self.kiln.db) or 'base'}")
        return 0


class Current(KilnShowOne):
    """Show the schema revision of the database and the newest this Kiln knows."""

    needs_current_schema = False
    example = "kiln-manage db current -f value -c current"

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        current = migration.current_revision(self.kiln.db) or "base"
        head = migration.HEAD_REVISION
        return ("current", "head", "up_to_date"), (current, head, current == head)


class Check(KilnCommand):
    """Exit 1 unless the schema is at the newest revision and matches the models.

    The second half compares the tables the database has with what the models declare
    (columns, types, indexes), so a migration that forgot something is caught."""

    needs_current_schema = False
    example = "kiln-manage db check && kiln-all"

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        migration.ensure_current(self.kiln.db)
        differences = migration.schema_differences(self.kiln.db)
        if differences:
            raise StartupFailed(reason="the database schema does not match Kiln's models: "
                                       + "; ".join(differences))
        print(f"Database schema is current ({migration.HEAD_REVISION}) and "
              f"matches the models")
        return 0


COMMANDS: dict[str, type[Command]] = {
    "db upgrade": Upgrade, "db downgrade": Downgrade, "db current": Current, "db check": Check,
}

