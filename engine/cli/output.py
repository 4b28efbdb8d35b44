"""Printing records as a table or as JSON with stable field names."""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping, Sequence
from typing import Any


def _plain(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return value


def emit(rows: Sequence[Mapping[str, Any]], fmt: str, *, single: bool = False) -> None:
    clean = [{k: _plain(v) for k, v in row.items()} for row in rows]
    if fmt == "json":
        print(json.dumps(clean[0] if single and clean else clean, indent=2))
        return
    if not clean:
        return
    columns = list(clean[0])
    widths = {c: max(len(c), *(len(str(r[c] if r[c] is not None else "")) for r in clean))
              for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns).rstrip())
    for row in clean:
        print("  ".join(str(row[c] if row[c] is not None else "").ljust(widths[c])
                        for c in columns).rstrip())
