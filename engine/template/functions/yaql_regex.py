"""yaql's regular-expression functions, with every match timed (``engine.budget``).

yaql's own versions run Python's ``re``, which cannot be stopped: ``regex("(a|aa)+$")``
on forty ``a`` and a ``b`` holds a thread for minutes. These take their place in the
context :mod:`yaql_expression` evaluates in, with the same names, arguments and answers
(yaql 3's standard library), but the pattern is a :class:`~engine.budget.BoundedPattern`:
the same syntax, matched under the evaluation's time budget.
"""

from __future__ import annotations

import re
from typing import Any

from yaql.language import specs, yaqltypes

from engine.budget import BoundedPattern, compile_pattern


@specs.parameter("pattern", yaqltypes.String())
@specs.name("regex")
def regex_(pattern: str, ignore_case: bool = False, multi_line: bool = False,
           dot_all: bool = False) -> BoundedPattern:
    flags = ((re.IGNORECASE if ignore_case else 0) | (re.MULTILINE if multi_line else 0)
             | (re.DOTALL if dot_all else 0))
    return _pattern(pattern, flags)


def _pattern(pattern: str, flags: int = 0) -> BoundedPattern:
    try:
        compile_pattern(pattern, flags)
        return BoundedPattern(pattern, flags)
    except re.error as exc:
        # A ValueError is what the yaql function reports as a failed evaluation.
        raise ValueError(f'"{pattern}" is not a regular expression: {exc}') from None


def _record(found: Any, group: int | str) -> dict[str, Any]:
    return {"value": found.group(group), "start": found.start(group),
            "end": found.end(group)}


def _published(context: Any, found: Any) -> Any:
    """A child context with the match as ``$1`` and its groups as ``$2``…, named groups
    by name (yaql's variables for a selector)."""
    child = context.create_child_context()
    for index in range(len(found.groups()) + 1):
        child[f"${index + 1}"] = _record(found, index)
    for name in found.groupdict():
        child[f"${name}"] = _record(found, name)
    return child


@specs.parameter("regexp", BoundedPattern)
@specs.parameter("string", yaqltypes.String())
@specs.method
@specs.name("matches")
def matches(regexp: BoundedPattern, string: str) -> bool:
    return regexp.search(string) is not None


@specs.parameter("string", yaqltypes.String())
@specs.parameter("regexp", yaqltypes.String())
@specs.method
@specs.name("matches")
def string_matches(string: str, regexp: str) -> bool:
    return _pattern(regexp).search(string) is not None


@specs.parameter("string", yaqltypes.String())
@specs.parameter("regexp", BoundedPattern)
@specs.name("#operator_=~")
def matches_operator(string: str, regexp: BoundedPattern) -> bool:
    return regexp.search(string) is not None


@specs.parameter("string", yaqltypes.String())
@specs.parameter("pattern", yaqltypes.String())
@specs.name("#operator_=~")
def matches_operator_string(string: str, pattern: str) -> bool:
    return _pattern(pattern).search(string) is not None


@specs.parameter("string", yaqltypes.String())
@specs.parameter("regexp", BoundedPattern)
@specs.name("#operator_!~")
def not_matches_operator(string: str, regexp: BoundedPattern) -> bool:
    return regexp.search(string) is None


@specs.parameter("string", yaqltypes.String())
@specs.parameter("pattern", yaqltypes.String())
@specs.name("#operator_!~")
def not_matches_operator_string(string: str, pattern: str) -> bool:
    return _pattern(pattern).search(string) is None


@specs.parameter("regexp", BoundedPattern)
@specs.parameter("string", yaqltypes.String())
@specs.parameter("selector", yaqltypes.Lambda(with_context=True))
@specs.method
@specs.name("search")
def search(context: Any, regexp: BoundedPattern, string: str, selector: Any = None) -> Any:
    found = regexp.search(string)
    if found is None:
        return None
    return found.group() if selector is None else selector(_published(context, found))


@specs.parameter("regexp", BoundedPattern)
@specs.parameter("string", yaqltypes.String())
@specs.parameter("selector", yaqltypes.Lambda(with_context=True))
@specs.method
@specs.name("searchAll")
def search_all(context: Any, regexp: BoundedPattern, string: str,
               selector: Any = None) -> list[Any]:
    return [found.group() if selector is None else selector(_published(context, found))
            for found in regexp.finditer(string)]


@specs.parameter("regexp", BoundedPattern)
@specs.parameter("string", yaqltypes.String())
@specs.parameter("max_split", int)
@specs.method
@specs.name("split")
def split(regexp: BoundedPattern, string: str, max_split: int = 0) -> list[Any]:
    return regexp.split(string, max_split)


@specs.parameter("string", yaqltypes.String())
@specs.parameter("regexp", BoundedPattern)
@specs.parameter("max_split", int)
@specs.method
@specs.name("split")
def string_split(string: str, regexp: BoundedPattern, max_split: int = 0) -> list[Any]:
    return regexp.split(string, max_split)


@specs.parameter("regexp", BoundedPattern)
@specs.parameter("string", yaqltypes.String())
@specs.parameter("repl", yaqltypes.String())
@specs.parameter("count", int)
@specs.method
@specs.name("replace")
def replace(regexp: BoundedPattern, string: str, repl: str, count: int = 0) -> str:
    return regexp.sub(repl, string, count)


@specs.parameter("string", yaqltypes.String())
@specs.parameter("regexp", BoundedPattern)
@specs.parameter("repl", yaqltypes.String())
@specs.parameter("count", int)
@specs.method
@specs.name("replace")
def string_replace(string: str, regexp: BoundedPattern, repl: str, count: int = 0) -> str:
    return regexp.sub(repl, string, count)


@specs.parameter("regexp", BoundedPattern)
@specs.parameter("string", yaqltypes.String())
@specs.parameter("repl", yaqltypes.Lambda(with_context=True))
@specs.parameter("count", int)
@specs.method
@specs.name("replaceBy")
def replace_by(context: Any, regexp: BoundedPattern, string: str, repl: Any,
               count: int = 0) -> str:
    return _replace_by(context, regexp, string, repl, count)


@specs.parameter("string", yaqltypes.String())
@specs.parameter("regexp", BoundedPattern)
@specs.parameter("repl", yaqltypes.Lambda(with_context=True))
@specs.parameter("count", int)
@specs.method
@specs.name("replaceBy")
def string_replace_by(context: Any, string: str, regexp: BoundedPattern, repl: Any,
                      count: int = 0) -> str:
    return _replace_by(context, regexp, string, repl, count)


def _replace_by(context: Any, regexp: BoundedPattern, string: str, repl: Any,
                count: int) -> str:
    return regexp.sub(lambda found: repl(_published(context, found)), string, count)


@specs.parameter("string", yaqltypes.String())
@specs.name("escapeRegex")
def escape_regex(string: str) -> str:
    return re.escape(string)


@specs.name("isRegex")
def is_regex(value: Any) -> bool:
    return isinstance(value, BoundedPattern)


FUNCTIONS = (regex_, matches, string_matches, matches_operator, matches_operator_string,
             not_matches_operator, not_matches_operator_string, search, search_all, split,
             string_split, replace, string_replace, replace_by, string_replace_by,
             escape_regex, is_regex)


def register(context: Any) -> None:
    """Add the functions to a yaql context made without yaql's own (``regex=False``)."""
    for function in FUNCTIONS:
        context.register_function(function)
