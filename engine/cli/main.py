"""``kiln-manage`` entry: argument parsing, dispatch, and the CLI's small error table.

A ``KilnError`` prints its message and exits 1; usage errors exit 2 (argparse); anything
else is a bug: traceback and exit 70.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from engine.cli.commands import db, lifecycle, tenants
from engine.errors import KilnError

Builder = Callable[[Sequence[str]], Any]
EXIT_ERROR, EXIT_BUG = 1, 70


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="kiln-manage", description="Administer Kiln.")
    root.add_argument("--config-file", action="append", default=[],
                      help="oslo.config file (repeatable)")
    nouns = root.add_subparsers(dest="noun", required=True)
    db.register(nouns)
    tenants.register(nouns)
    lifecycle.register(nouns)
    return root


def main(argv: Sequence[str], build: Builder) -> int:
    args = parser().parse_args(argv)
    config_args = [item for path in args.config_file for item in ("--config-file", path)]
    try:
        kiln = build(config_args)
        result: int = args.handler(kiln, args)
        return result
    except KilnError as exc:
        print(f"kiln-manage: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception:  # noqa: BLE001 -- last resort: a bug, reported as one
        traceback.print_exc()
        return EXIT_BUG
