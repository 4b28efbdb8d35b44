"""``kiln-manage lifecycle …``: the ordered lifecycle plugins, and what they hold for a
stack (placement's placements, quota's counts)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from engine.cli.output import emit


def register(nouns: Any) -> None:
    lifecycle = nouns.add_parser("lifecycle", help="lifecycle plugins").add_subparsers(
        dest="verb", required=True)
    listing = lifecycle.add_parser("list", help="enabled plugins in call (pre-op) order")
    listing.add_argument("--format", choices=("table", "json"), default="table")
    listing.set_defaults(handler=_list)
    show = lifecycle.add_parser("show", help="what each plugin holds for a stack (JSON)")
    show.add_argument("stack_id")
    show.set_defaults(handler=_show)


def _list(kiln: Any, args: argparse.Namespace) -> int:
    emit([{"position": p.position, "name": p.name, "ordinal": p.ordinal,
           "before": ",".join(p.before), "after": ",".join(p.after),
           "timeout_seconds": p.timeout_seconds, "on_timeout": p.on_timeout,
           "dry_run": p.supports_dry_run, "class": p.plugin_class,
           "distribution": p.distribution}
          for p in kiln.lifecycle_service.list_plugins()], args.format)
    return 0


def _show(kiln: Any, args: argparse.Namespace) -> int:
    print(json.dumps({"stack_id": args.stack_id,
                      "plugins": kiln.lifecycle_service.describe(args.stack_id)},
                     indent=2, default=str))
    return 0
