"""What every ``kiln-manage`` command shares: the wired Kiln, the examples in ``--help``,
and turning values (times, ages, nested rows) into stable output fields.

Display commands are cliff's ``Lister``/``ShowOne``, so every one of them takes
``-f/--format table|json|yaml|csv|value`` and ``-c COLUMN``; field names are snake_case
and stay put, because scripts read them.
"""

from __future__ import annotations

import argparse
import datetime
import getpass
import json
import re
import socket
from collections.abc import Mapping, Sequence
from typing import Any

import prettytable
from cliff.columns import FormattableColumn
from cliff.command import Command
from cliff.lister import Lister
from cliff.show import ShowOne

from engine.clock import isotime
from engine.services.operator import StackRef

AGE = re.compile(r"^(\d+)([smhdw])$")
AGE_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class _KilnCommand:
    """Mixin: ``self.kiln`` is the wired application, built on first use."""

    app: Any
    #: One or more example command lines, shown under ``--help``.
    example: str = ""
    #: Whether the command refuses a database whose schema is behind this Kiln (every
    #: command but the ``db`` ones, which are how it catches up).
    needs_current_schema: bool = True
    #: Whether the command may create the SQLite database when there is none (only
    #: ``db upgrade``); every other command refuses, naming the path it tried.
    creates_database: bool = False
    #: Whether its first argument names a stack (see :meth:`stack_ref`).
    of_stack: bool = False

    @property
    def kiln(self) -> Any:
        return self.app.kiln_for(self.needs_current_schema, self.creates_database)

    def get_epilog(self) -> str:
        return f"example:\n  {self.example}" if self.example else ""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = super().get_parser(prog_name)  # type: ignore[misc]
        # Descriptions and examples as written (they are wrapped already), so an
        # example command line is never broken in two.
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
        if self.of_stack:
            parser.add_argument("stack", help="stack name or id (a name used in several "
                                              "tenants needs --tenant)")
            parser.add_argument("--tenant", help="the tenant (name or id) a stack name is in")
        return parser

    def stack_ref(self, parsed_args: argparse.Namespace) -> StackRef:
        """The stack the arguments name, in whichever tenant has it."""
        ref: StackRef = self.kiln.operator.find_stack(parsed_args.stack, parsed_args.tenant)
        return ref


class KilnCommand(_KilnCommand, Command):
    pass


class KilnLister(_KilnCommand, Lister):
    pass


class KilnShowOne(_KilnCommand, ShowOne):
    pass


# --- values ---------------------------------------------------------------------------


def when(value: datetime.datetime | None) -> str | None:
    """A time as ISO 8601 UTC to the second, as the API shows it, or None."""
    return isotime(value)


def ago(value: datetime.datetime | None, now: datetime.datetime) -> str | None:
    """How long ago, as the largest two units: ``3d4h``, ``2m5s``, ``0s``."""
    if value is None:
        return None
    return span((now - value).total_seconds())


def span(seconds: float) -> str:
    left = max(int(seconds), 0)
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size or (unit == "s" and not parts):
            parts.append(f"{left // size}{unit}")
            left %= size
        if len(parts) == 2:
            break
    return "".join(parts)


def age(text: str) -> datetime.timedelta:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w`` -> a timedelta (argparse type)."""
    match = AGE.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not an age like 30d, 12h, 90m, 45s or 2w")
    return datetime.timedelta(**{AGE_UNITS[match.group(2)]: int(match.group(1))})


def positive(text: str) -> int:
    """An integer of at least 1 (argparse type)."""
    value = int(text)
    if value < 1:
        raise ValueError(f"{text} is not 1 or more")
    return value


class Structured(FormattableColumn[Any]):
    """A nested value: indented JSON for people, the value itself for json and yaml."""

    def human_readable(self) -> str:
        if self._value in (None, {}, []):
            return ""
        return json.dumps(self._value, indent=2, sort_keys=True, default=str)


class Names(FormattableColumn[list[str]]):
    """A list of names: comma-separated for people, a list for json and yaml."""

    def human_readable(self) -> str:
        return ", ".join(self._value)


class Rows(FormattableColumn[list[dict[str, Any]]]):
    """Nested rows (resources, events): a table for people, a list for machines."""

    def __init__(self, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> None:
        super().__init__([{c: row.get(c) for c in columns} for row in rows])
        self._columns = list(columns)

    def human_readable(self) -> str:
        if not self._value:
            return ""
        table = prettytable.PrettyTable(self._columns)
        table.align = "l"
        for row in self._value:
            table.add_row(["" if row[c] is None else row[c] for c in self._columns])
        return table.get_string()


def actor() -> str:
    """Who is repairing, as the event will say: the login on the control host."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"
