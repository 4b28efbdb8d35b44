"""``kiln-manage stack graph``: a stack's resources and what each depends on, as an
indented tree (the default), Graphviz DOT, or any list format.

The tree reads in the order things happen on create: resources that depend on nothing
at the left, and under each resource the ones that depend on it. A resource with several
prerequisites appears under each of them; after the first time its dependents are not
repeated ("see above").
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from cliff.command import Command
from cliff.formatters.base import ListFormatter

from engine.cli.base import KilnLister, Names

FIELDS = ("resource_name", "type", "status", "requires")


def dependents(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """name -> the names that require it, sorted."""
    found: dict[str, list[str]] = {row["resource_name"]: [] for row in rows}
    for row in rows:
        for needed in row["requires"]:
            found.setdefault(needed, []).append(row["resource_name"])
    return {name: sorted(names) for name, names in found.items()}


def tree_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The indented tree; see the module documentation."""
    by_name = {row["resource_name"]: row for row in rows}
    below = dependents(rows)
    shown: set[str] = set()
    lines: list[str] = []

    def walk(name: str, depth: int) -> None:
        row = by_name.get(name, {"type": "?", "status": "?"})
        label = f"{'    ' * depth}{name} ({row['type']}, {row['status']})"
        if name in shown and below.get(name):
            lines.append(label + "  [see above]")
            return
        lines.append(label)
        shown.add(name)
        for child in below.get(name, []):
            walk(child, depth + 1)

    roots = sorted(name for name, row in by_name.items()
                   if not [r for r in row["requires"] if r in by_name])
    for root in roots:
        walk(root, 0)
    for name in sorted(set(by_name) - shown):  # only on a cycle, which a stack never has
        walk(name, 0)
    return lines


def dot_lines(rows: Sequence[Mapping[str, Any]], title: str = "stack") -> list[str]:
    """Graphviz: an edge from each resource to each resource it requires."""
    def quoted(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = [f"digraph {quoted(title)} {{", "  rankdir=BT;", "  node [shape=box];"]
    for row in sorted(rows, key=lambda r: r["resource_name"]):
        # \n inside a quoted DOT string is a line break in the drawn label.
        label = "\\n".join(quoted(str(row[key]))[1:-1]
                            for key in ("resource_name", "type", "status"))
        lines.append(f"  {quoted(row['resource_name'])} [label=\"{label}\"];")
    for row in sorted(rows, key=lambda r: r["resource_name"]):
        for needed in sorted(row["requires"]):
            lines.append(f"  {quoted(row['resource_name'])} -> {quoted(needed)};")
    lines.append("}")
    return lines


def _rows(column_names: Sequence[str], data: Iterable[Sequence[Any]]
          ) -> list[dict[str, Any]]:
    rows = [dict(zip(column_names, values, strict=True)) for values in data]
    for row in rows:
        requires = row.get("requires")
        row["requires"] = requires.machine_readable() if isinstance(requires, Names) else []
        row.setdefault("type", "?")
        row.setdefault("status", "?")
    return rows


class TreeFormatter(ListFormatter):
    """The stack graph as an indented tree."""

    def add_argument_group(self, parser: argparse.ArgumentParser) -> None:
        return None

    def emit_list(self, column_names: Sequence[str], data: Iterable[Sequence[Any]],
                  stdout: TextIO, parsed_args: argparse.Namespace) -> None:
        for line in tree_lines(_rows(column_names, data)):
            stdout.write(line + "\n")


class DotFormatter(ListFormatter):
    """The stack graph in Graphviz DOT."""

    def add_argument_group(self, parser: argparse.ArgumentParser) -> None:
        return None

    def emit_list(self, column_names: Sequence[str], data: Iterable[Sequence[Any]],
                  stdout: TextIO, parsed_args: argparse.Namespace) -> None:
        for line in dot_lines(_rows(column_names, data), getattr(parsed_args, "stack", "")):
            stdout.write(line + "\n")


class StackGraph(KilnLister):
    """Show a stack's dependency graph as a tree, in DOT (-f dot), or as a list.

    The tree starts from resources that depend on nothing, each resource's dependents
    under it; any other format lists each resource with what it requires."""

    of_stack = True
    example = "kiln-manage stack graph web -f dot | dot -Tsvg > web.svg"

    @property
    def formatter_namespace(self) -> str:
        return "kiln.manage.formatter.graph"

    @property
    def formatter_default(self) -> str:
        return "tree"


    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        ref = self.stack_ref(parsed_args)
        records = self.kiln.stack_resources.list_resources(ref.context(), ref.name, ref.id,
                                                           {})
        requires: dict[str, list[str]] = {r.name: [] for r in records}
        for record in records:
            for dependent in record.required_by:
                requires.setdefault(dependent, []).append(record.name)
        return FIELDS, [(r.name, r.type, f"{r.action}_{r.status}",
                         Names(sorted(requires[r.name])))
                        for r in sorted(records, key=lambda r: r.name)]


COMMANDS: dict[str, type[Command]] = {"stack graph": StackGraph}
