"""Turn ``run.py``'s JSON files into the reStructuredText tables of ``README.rst``.

    python tests/benchmarks/report.py tests/benchmarks/results/*.json > tables.rst

Files are merged suite by suite in the order given (a later file's rows of a suite are
added after an earlier one's), so a matrix measured in several runs prints as one.
"""

from __future__ import annotations

import json
import pathlib
import sys
from collections.abc import Sequence
from typing import Any

OPERATIONS = ("create", "no-op update", "update all", "delete")


def list_table(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = [f".. list-table:: {title}", "   :header-rows: 1", ""]
    for row in [header, *rows]:
        lines.append(f"   * - {row[0]}")
        lines += [f"     - {cell}" for cell in row[1:]]
    return "\n".join(lines) + "\n"


def engine_rows(rows: Sequence[dict[str, Any]]) -> list[list[Any]]:
    """One line per (setup, shape, N): seconds and resources/s of each operation, and the
    peak RSS of each process (MiB) over the four operations."""
    cases: dict[tuple[str, str, int], dict[str, Any]] = {}
    for row in rows:
        case = cases.setdefault((row["setup"], row["shape"], row["resources"]), {})
        case[row["operation"]] = f"{row['seconds']:.2f} s / {row['per_second']:.0f}"
        if "peak_rss_mib" in row:
            case["rss"] = " + ".join(f"{mib:.0f}" for mib in row["peak_rss_mib"])
    return [[setup, shape, size, *(case.get(op, "") for op in OPERATIONS), case.get("rss", "")]
            for (setup, shape, size), case in cases.items()]


def generic_rows(rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    header = list(rows[0]) if rows else []
    return header, [[row.get(key, "") for key in header] for row in rows]


def main(paths: Sequence[str]) -> int:
    merged: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        for suite, rows in json.loads(pathlib.Path(path).read_text()).items():
            merged.setdefault(suite, []).extend(rows)
    for suite, rows in merged.items():
        if suite == "engine":
            print(list_table("Engine: seconds / resources per second; peak RSS (MiB) of "
                             "each process", ["setup", "shape", "N", *OPERATIONS,
                                              "peak RSS MiB"], engine_rows(rows)))
        else:
            header, body = generic_rows(rows)
            print(list_table(suite, header, body))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
