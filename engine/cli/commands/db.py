"""``kiln-manage db upgrade|downgrade|current|check``."""

from __future__ import annotations

import argparse
from typing import Any

from engine.db import migration


def register(nouns: Any) -> None:
    db = nouns.add_parser("db", help="database schema").add_subparsers(dest="verb", required=True)
    upgrade = db.add_parser("upgrade", help="migrate the schema to the newest revision")
    upgrade.add_argument("--revision", default="head")
    upgrade.set_defaults(handler=_upgrade)
    downgrade = db.add_parser("downgrade", help="migrate the schema back to REVISION")
    downgrade.add_argument("revision")
    downgrade.set_defaults(handler=_downgrade)
    db.add_parser("current", help="print the schema revision").set_defaults(handler=_current)
    db.add_parser("check", help="exit 1 unless the schema is at the newest revision"
                  ).set_defaults(handler=_check)


def _upgrade(kiln: Any, args: argparse.Namespace) -> int:
    migration.upgrade(kiln.db, args.revision)
    print(f"Database at revision {migration.current_revision(kiln.db)}")
    return 0


def _downgrade(kiln: Any, args: argparse.Namespace) -> int:
    migration.downgrade(kiln.db, args.revision)
    print(f"Database at revision {migration.current_revision(kiln.db) or 'base'}")
    return 0


def _current(kiln: Any, args: argparse.Namespace) -> int:
    current = migration.current_revision(kiln.db)
    head = migration.head_revision(kiln.db)
    print(f"{current or 'base'} (head: {head})")
    return 0


def _check(kiln: Any, args: argparse.Namespace) -> int:
    migration.ensure_current(kiln.db)
    print("Database schema is current")
    return 0
