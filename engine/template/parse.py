"""YAML/JSON text -> plain data plus the source line of every path in it.

The data stays plain (dicts, lists, scalars) so the rest of the pipeline is ordinary Python;
line numbers live beside it in a path -> line map. Dates stay strings, as in Heat, so
``heat_template_version: 2018-08-31`` is the string it looks like. Duplicate keys are an
error rather than YAML's silent last-one-wins, because the lost key is almost always a bug.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import yaml

from engine.errors import Location, RequestLimitExceeded, StackValidationFailed

Path = tuple[str | int, ...]


def render_path(path: Path) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


@dataclasses.dataclass(frozen=True)
class SourceDocument:
    """A parsed document and where each of its paths came from."""

    data: Any
    lines: Mapping[Path, int] = dataclasses.field(default_factory=dict)
    file: str = "template"

    def location(self, path: Path) -> Location:
        """The location of ``path``, using the nearest ancestor that has a line."""
        probe = tuple(path)
        while probe and probe not in self.lines:
            probe = probe[:-1]
        return Location(path=render_path(path), line=self.lines.get(probe), file=self.file)


# NOTE: libyaml's parser when PyYAML was built with it: several times faster than the
# pure-Python one, with the same marks (line numbers).
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc,valid-type]
    """SafeLoader without the timestamp resolver and with duplicate-key detection."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


# A document may be at most this deep, and expand (through YAML aliases) to at most this
# many values. Real templates are a few levels deep and a few thousand values; a "billion
# laughs" alias bomb or a hand-made deep nest would otherwise cost minutes of CPU (every
# path is walked) or a RecursionError.
MAX_DEPTH = 64
MAX_VALUES = 200_000


def parse_text(text: str, file: str = "template") -> SourceDocument:
    """Parse YAML (JSON is a subset) keeping lines; errors name the file and line."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return SourceDocument(data=None, file=file)
        lines: dict[Path, int] = {}
        _record_lines(loader, node, (), lines, file, _Budget(file))
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        raise StackValidationFailed(
            Location(line=line, file=file), reason=f"Error parsing template: {problem}"
        ) from None
    except yaml.YAMLError as exc:
        raise StackValidationFailed(
            Location(file=file), reason=f"Error parsing template: {exc}"
        ) from None
    finally:
        loader.dispose()
    return SourceDocument(data=data, lines=lines, file=file)


def from_data(data: Any, file: str = "template") -> SourceDocument:
    """A document that arrived already parsed (a JSON object): paths but no lines."""
    _check_shape(data, (), _Budget(file))
    return SourceDocument(data=data, file=file)


class _Budget:
    """Counts the values a walk meets, and refuses the document past the limits."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.values = 0

    def visit(self, path: Path, line: int | None = None) -> None:
        self.values += 1
        if self.values > MAX_VALUES:
            raise RequestLimitExceeded(
                Location(path=render_path(path), line=line, file=self.file),
                reason=f"Template expands to more than {MAX_VALUES} values (YAML aliases "
                       "included); refused.")
        if len(path) > MAX_DEPTH:
            raise RequestLimitExceeded(
                # Where the deep part starts, not the whole path down.
                Location(path=render_path(path[:2]), line=line, file=self.file),
                reason=f"Template nesting is deeper than {MAX_DEPTH} levels; refused.")


def _check_shape(data: Any, path: Path, budget: _Budget) -> None:
    budget.visit(path)
    if isinstance(data, Mapping):
        for key, value in data.items():
            _check_shape(value, (*path, str(key)), budget)
    elif isinstance(data, list):
        for index, value in enumerate(data):
            _check_shape(value, (*path, index), budget)


def _record_lines(
    loader: _Loader, node: yaml.Node, path: Path, lines: dict[Path, int], file: str,
    budget: _Budget,
) -> None:
    budget.visit(path, node.start_mark.line + 1)
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                raise StackValidationFailed(
                    Location(path=render_path(path), line=key_node.start_mark.line + 1,
                             file=file),
                    reason="Error parsing template: mapping keys must be scalars",
                )
            if key in seen:
                raise StackValidationFailed(
                    Location(path=render_path((*path, str(key))),
                             line=key_node.start_mark.line + 1, file=file),
                    reason=f'Error parsing template: duplicate key "{key}"',
                )
            seen.add(key)
            child = (*path, str(key))
            lines[child] = key_node.start_mark.line + 1
            _record_lines(loader, value_node, child, lines, file, budget)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _record_lines(loader, item, (*path, index), lines, file, budget)


def document(template: Any, file: str = "template") -> SourceDocument:
    """A document from what a request carried: template text, or an already-parsed map."""
    if isinstance(template, str):
        return parse_text(template, file)
    return from_data(template, file)
