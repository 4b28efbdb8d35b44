"""``kiln-manage``: the cliff application, its global options and its exit statuses.

Exit 0 on success, 1 when the command fails (the reason on stderr), 2 on a usage error
(argparse's own status, and an unknown command). An error that is not a ``KilnError`` is
a bug: its traceback goes to stderr too, since its message alone rarely says enough.
"""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from cliff.app import App
from cliff.command import Command
from cliff.commandmanager import CommandManager

from engine import logs
from engine.cli.commands import (
    db,
    operations,
    plugins,
    purge,
    stack_graph,
    stack_repair,
    stacks,
    tenants,
    workers,
)
from engine.db import migration
from engine.errors import KilnError

#: Builds the wired application from the --config-file arguments; ``create_database``
#: lets it create a SQLite database that does not exist yet.
Builder = Callable[[Sequence[str], bool], Any]
USAGE_ERROR = 2

COMMANDS: dict[str, type[Command]] = {
    **db.COMMANDS, **tenants.COMMANDS, **stacks.COMMANDS, **stack_graph.COMMANDS,
    **stack_repair.COMMANDS, **operations.COMMANDS, **plugins.COMMANDS, **workers.COMMANDS,
    **purge.COMMANDS,
}

DESCRIPTION = """Inspect and repair Kiln from the control host, across every tenant, straight
from the database: no token needed, and the API need not be up."""

EXAMPLES = """examples:
  kiln-manage stack list --status FAILED                  failed stacks of every tenant
  kiln-manage stack show web                              why it failed, who holds it
  kiln-manage stack events web --follow                   watch an operation to its end
  kiln-manage stack graph web --format dot | dot -Tsvg    its dependency graph
  kiln-manage worker list                                 which engines are alive
  kiln-manage stack reset-state web --to FAILED --reason "engine host lost"
  kiln-manage help stack                                  every stack command

Every listing takes -f/--format table|json|yaml|csv|value and -c COLUMN."""


class KilnManage(App):
    NAME = "kiln-manage"
    # Warnings and errors only: output is for reading and for scripts; -v adds the
    # engine's and Alembic's INFO lines.
    DEFAULT_VERBOSE_LEVEL = 0

    def __init__(self, build: Builder) -> None:
        manager = CommandManager(None)  # the commands are all here, not plugins
        for name, command in COMMANDS.items():
            manager.add_command(name, command)
        super().__init__(description=DESCRIPTION, version=_version(),
                         command_manager=manager, deferred_help=True)
        self._build = build
        self._kiln: Any = None
        self._schema_checked = False

    def build_option_parser(self, description: str | None, version: str | None,
                            argparse_kwargs: dict[str, Any] | None = None
                            ) -> argparse.ArgumentParser:
        parser = super().build_option_parser(
            description, version,
            {"epilog": EXAMPLES, "formatter_class": argparse.RawDescriptionHelpFormatter})
        parser.add_argument("--config-file", action="append", default=[], metavar="PATH",
                            help="oslo.config file to read (repeatable), as for every Kiln "
                                 "command; options may also come from OS_<GROUP>__<OPTION> "
                                 "environment variables")
        return parser

    def kiln_for(self, current_schema: bool, create_database: bool = False) -> Any:
        """The wired application (database, registries, services), built on first use
        so ``--help`` needs no database; with ``current_schema``, refused (SchemaBehind)
        unless the database is at the newest revision; a SQLite database that does not
        exist is refused (DatabaseMissing) unless ``create_database``."""
        if self._kiln is None:
            config_args = [item for path in self.options.config_file
                           for item in ("--config-file", path)]
            self._kiln = self._build(config_args, create_database)
        if current_schema and not self._schema_checked:
            migration.ensure_current(self._kiln.db)
            self._schema_checked = True
        return self._kiln

    def configure_logging(self) -> None:
        """cliff's console (and --log-file) handlers, as its -v/-q/--debug options
        promise, with Kiln's log context and third-party floors (``engine.logs``): a
        command's lines go to whoever runs it, never to the services' [DEFAULT] log_file
        (an admin's command must not create, or write as another user, the services'
        file)."""
        super().configure_logging()
        for handler in logging.getLogger().handlers:
            logs.adopt(handler)

    def run(self, argv: list[str]) -> int:
        if not argv:  # cliff would start an interactive shell; an admin tool wants a verb
            self.parser.print_help(sys.stderr)
            return USAGE_ERROR
        return super().run(argv)

    def clean_up(self, cmd: Command, result: int, err: BaseException | None) -> None:
        if err is not None and not isinstance(err, KilnError | BrokenPipeError) \
                and not self.options.debug:
            traceback.print_exception(err, file=sys.stderr)
        if self._kiln is not None:
            # Its connections closed now, not by the interpreter's exit: a caller that
            # runs commands in its own process (a test) keeps none open.
            self._kiln.db.dispose()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kiln")
    except PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str], build: Builder) -> int:
    return KilnManage(build).run(list(argv))
