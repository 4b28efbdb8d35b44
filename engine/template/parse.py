"""YAML/JSON text -> plain data plus the source line of every path in it.

The data stays plain (dicts, lists, scalars) so the rest of the pipeline is ordinary Python;
line numbers live beside it in a path -> line map. Dates stay strings, as in Heat, so
``heat_template_version: 2018-08-31`` is the string it looks like. Duplicate keys are an
error rather than YAML's silent last-one-wins, because the lost key is almost always a bug.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import yaml

from engine.errors import Location, RequestLimitExceeded, StackValidationFailed
from engine.schema import MAX_DEPTH

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


# Python's int() and str() refuse integers of more digits (and so would json.dumps, on the
# way to the database); an integer this long is never a real template's.
MAX_INT_DIGITS = 4300
_INT_CEILING = 10**MAX_INT_DIGITS


class _Loader(_BaseLoader):  # type: ignore[misc,valid-type]
    """SafeLoader that builds only what JSON can hold, as Heat's template reaches its
    engine (Heat parses with a SafeLoader and sends the result through JSON): dates stay
    text, mapping keys become the text JSON gives them (``1`` -> ``"1"``, ``true`` ->
    ``"true"``, ``null`` -> ``"null"``), ``!!binary`` is its UTF-8 text, ``!!set`` the list
    of its members, ``!!omap`` and ``!!pairs`` lists of ``[key, value]``. What JSON or the
    database cannot hold is refused at its line: ``.inf`` and ``.nan``, integers over
    ``MAX_INT_DIGITS`` digits, NUL characters; so is a scalar its tag cannot read
    (``!!bool maybe``, ``!!int 0x``, a plain ``0x_``)."""

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[str, Any]:
        # NOTE: keys become text before they meet in a dict, where 1 and true are equal.
        if not isinstance(node, yaml.MappingNode):
            raise _refuse(node, "expected a mapping")
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = key_text(self.construct_object(key_node, deep=deep))
            if not isinstance(key, str):
                raise _refuse(key_node, "mapping keys must be scalars")
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def key_text(key: Any) -> Any:
    """A scalar mapping key as JSON writes it (as heatclient's ``json.dumps`` sends it);
    other keys are left for the caller to refuse."""
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, (int, float)):
        return json.dumps(key)
    return key


def _refuse(node: yaml.Node, problem: str) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(None, None, problem, node.start_mark)


def _construct_text(loader: _Loader, node: yaml.ScalarNode) -> str:
    text = loader.construct_scalar(node)
    if "\x00" in text:
        raise _refuse(node, "a NUL character cannot be stored")
    return str(text)


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node)
    # NOTE: checked before converting: a base-60 integer ("1:2:3...") costs quadratic time.
    # Digits as Python counts them (no sign, no underscores), and a base-60 one's too;
    # binary, octal and hexadecimal ones convert in linear time and are checked after.
    digits = text.replace("_", "").lstrip("+-")
    if not digits.startswith("0") and len(digits) - digits.count(":") > MAX_INT_DIGITS:
        raise _refuse(node, f"an integer of more than {MAX_INT_DIGITS} digits")
    value = int(yaml.constructor.SafeConstructor.construct_yaml_int(loader, node))
    if abs(value) >= _INT_CEILING:  # a hexadecimal or binary one can be longer in decimal
        raise _refuse(node, f"an integer of more than {MAX_INT_DIGITS} digits")
    return value


def _construct_float(loader: _Loader, node: yaml.ScalarNode) -> float:
    value = float(yaml.constructor.SafeConstructor.construct_yaml_float(loader, node))
    if not math.isfinite(value):
        raise _refuse(node, f"{loader.construct_scalar(node)} is not a finite number; JSON "
                            "has no infinity or NaN")
    return value


def _construct_binary(loader: _Loader, node: yaml.ScalarNode) -> str:
    data = yaml.constructor.SafeConstructor.construct_yaml_binary(loader, node)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _refuse(node, "the !!binary value is not UTF-8 text") from None
    if "\x00" in text:
        raise _refuse(node, "a NUL character cannot be stored")
    return str(text)


def _construct_set(loader: _Loader, node: yaml.MappingNode) -> Iterator[list[Any]]:
    members: list[Any] = []
    yield members
    # The keys as written (not as key text): they are values here. Document order, where
    # Heat's set has none.
    members.extend(yaml.constructor.SafeConstructor.construct_mapping(loader, node))


def _construct_pairs(loader: _Loader, node: yaml.SequenceNode) -> Iterator[list[Any]]:
    pairs: list[Any] = []
    yield pairs
    steps = yaml.constructor.SafeConstructor.construct_yaml_pairs(loader, node)
    built = next(steps)
    for _ in steps:  # the generator fills ``built`` when resumed
        pass
    pairs.extend([key, value] for key, value in built)


def _read_as(tag: str, construct: Callable[[_Loader, yaml.ScalarNode], Any]
             ) -> Callable[[_Loader, yaml.ScalarNode], Any]:
    """``construct`` refusing, at the value's line, a scalar its tag cannot read. PyYAML's
    own constructors assume the text matched the tag's pattern, which only an implicit
    tag guarantees: ``!!bool maybe`` is a KeyError there, ``!!int ""`` an IndexError,
    ``!!float abc`` and a plain ``0x_`` ValueErrors (Heat's parser lets them through as
    500s)."""
    def read(loader: _Loader, node: yaml.ScalarNode) -> Any:
        try:
            return construct(loader, node)
        except (ArithmeticError, LookupError, TypeError, ValueError):
            shown = str(node.value)
            # JSON's quoting: a control character in the value stays readable and storable.
            shown = json.dumps(shown if len(shown) <= 40 else shown[:40] + "...")
            raise _refuse(node, f"{shown} is not a valid !!{tag} value") from None
    return read


for _tag, _constructor in (
    ("str", _construct_text), ("timestamp", _construct_text), ("int", _construct_int),
    ("float", _construct_float), ("binary", _construct_binary),
    ("bool", yaml.constructor.SafeConstructor.construct_yaml_bool),
    ("null", yaml.constructor.SafeConstructor.construct_yaml_null),
):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _read_as(_tag, _constructor))
for _tag, _generator in (("set", _construct_set), ("omap", _construct_pairs),
                         ("pairs", _construct_pairs)):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _generator)


# A document may be at most MAX_DEPTH deep (engine.schema's, which JSON text in it meets
# too), and expand (through YAML aliases) to at most this many values. Real templates are
# a few levels deep and a few thousand values; a "billion laughs" alias bomb or a
# hand-made deep nest would otherwise cost minutes of CPU (every path is walked) or a
# RecursionError.
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
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_text(loader.construct_object(key_node, deep=True))
            if not isinstance(key, str):
                raise StackValidationFailed(
                    Location(path=render_path(path), line=key_node.start_mark.line + 1,
                             file=file),
                    reason="Error parsing template: mapping keys must be scalars",
                )
            if key in seen:
                raise StackValidationFailed(
                    Location(path=render_path((*path, key)),
                             line=key_node.start_mark.line + 1, file=file),
                    reason=f'Error parsing template: duplicate key "{key}"',
                )
            seen.add(key)
            child = (*path, key)
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
