"""Evaluation budgets: the most one evaluation of a tenant's template may cost.

A template is small (``[api] max_template_bytes``), but what it asks for need not be:
``str_replace`` puts a value everywhere a key appears, ``repeat`` copies its template for
every combination of its lists, a group makes ``count`` members, yaql loops, and a regular
expression can backtrack for longer than anyone waits. This module bounds each of those
with one :class:`Budget`:

* **value size** (``max_value_chars``): no function produces a value larger than this,
  counted as one for every value in it (scalar, list, map, map key) plus the characters
  of every string: about the length of its JSON. Functions that can amplify count while
  they build (:class:`Meter`), so a bomb is refused before it is built;
* **items** (``max_function_items``): the items one function may make (``repeat``'s
  combinations, ``list_concat``'s, ``list_join``'s, ``str_split``'s items, ``map_merge``'s
  keys), checked before the work starts (:func:`check_items`);
* **group members** (``max_resources_per_stack``): a group holds no more members than a
  stack may hold resources (``engine.schema.ResourceLimit``);
* **yaql** (``yaql_limit_iterators``, ``yaql_memory_quota``): Heat's ``[yaql]`` quotas;
* **time** (``evaluation_timeout_seconds``): regular expressions, yaql and
  ``str_replace`` together, per evaluation, by the wall clock. Patterns run on the
  ``regex`` module with a timeout (:func:`match_pattern`, :class:`BoundedPattern`),
  Python code under a deadline (:func:`python_deadline`), ``str_replace`` checks the
  deadline before each key.

Who does what: ``engine.bootstrap`` calls :func:`configure` once per process; the entry
points of an evaluation (``engine.ir.build.build``, the worker's property evaluation and
its outputs) run inside :func:`evaluation`, which keeps the time spent; everything else
reads :func:`limits`. Exceeding a budget raises a ``BudgetExceeded`` (``engine.errors``):
a 400 naming the template line when the API evaluates, a FAILED resource in the worker.

NOTE: the configured budget is module state, set once at start, and the running
evaluation a context variable (per thread), instead of an argument: the limits are read
deep inside pure evaluation (a function's ``resolve``, a schema constraint) that a dozen
scopes and callers reach, and threading one more argument through all of them would
touch every one for a value that never changes in a process.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import importlib
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ParamSpec, TypeVar

import regex

from engine import config
from engine.errors import EvaluationTooLong, Location, TooManyItems, ValueTooLarge

P = ParamSpec("P")
T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Budget:
    """The limits. They have no defaults here: each is an option of ``engine.config``
    (:data:`OPTIONS`), and :data:`DEFAULT` holds the options' declared defaults."""

    max_value_chars: int
    max_function_items: int
    max_resources_per_stack: int  # also the whole tree of a nested stack (Heat's rule)
    yaql_limit_iterators: int
    yaql_memory_quota: int
    evaluation_timeout_seconds: float


# Each limit's option in ``engine.config``: (group, name).
OPTIONS: Mapping[str, tuple[str, str]] = {
    "max_value_chars": ("template", "max_value_chars"),
    "max_function_items": ("template", "max_function_items"),
    "max_resources_per_stack": ("api", "max_resources_per_stack"),
    "yaql_limit_iterators": ("yaql", "limit_iterators"),
    "yaql_memory_quota": ("yaql", "memory_quota"),
    "evaluation_timeout_seconds": ("template", "evaluation_timeout_seconds"),
}


def from_options(option: Callable[[str, str], Any]) -> Budget:
    """The budget whose every limit is ``option(group, name)`` of its option."""
    return Budget(**{field: option(group, name) for field, (group, name) in OPTIONS.items()})


# What holds until ``engine.bootstrap`` configures the process: the shipped defaults.
DEFAULT = from_options(config.declared_default)

#: Heat's max_nested_stack_depth: a stack may have children five levels down. Here, with
#: the other limits, so that what reads it (an events query's depth) need not load the
#: template functions with ``engine.ir``.
MAX_NESTED_DEPTH = 5


@dataclasses.dataclass
class _Evaluation:
    budget: Budget
    spent: float = 0.0  # seconds of timed work so far
    deadline: float | None = None  # of the timed work running now (monotonic)


_configured = DEFAULT
_current: contextvars.ContextVar[_Evaluation | None] = contextvars.ContextVar(
    "kiln_evaluation", default=None)


def configure(budget: Budget) -> None:
    """Set the process's budget (``engine.bootstrap``, once, before any thread runs)."""
    global _configured
    _configured = budget


def limits() -> Budget:
    """The budget in force: the running evaluation's, else the process's."""
    running = _current.get()
    return running.budget if running is not None else _configured


@contextlib.contextmanager
def evaluation(budget: Budget | None = None) -> Iterator[None]:
    """One evaluation (a request's template, a resource's properties): the time budget
    is shared by all it does. Inside another evaluation it joins that one, unless given
    a budget of its own (tests)."""
    outer = _current.get()
    if outer is not None and budget is None:
        yield
        return
    token = _current.set(_Evaluation(budget or _configured))
    try:
        yield
    finally:
        _current.reset(token)


def within_evaluation(call: Callable[P, T]) -> Callable[P, T]:
    """Decorate an entry point so that it runs as (or inside) one evaluation."""
    @functools.wraps(call)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        with evaluation():
            return call(*args, **kwargs)
    return wrapper


# --- sizes and counts ---------------------------------------------------------------


def value_size(value: Any, limit: int | None = None) -> int:
    """The size of ``value`` in budget units (see the module docs); counting stops as
    soon as it passes ``limit``, so a value shared a million times costs ``limit``."""
    total, todo = 0, [value]
    while todo:
        item = todo.pop()
        total += 1
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, Mapping):
            for key, inner in item.items():
                todo.append(key)
                todo.append(inner)
        elif isinstance(item, (list, tuple)):
            todo.extend(item)
        if limit is not None and total > limit:
            break
    return total


class Meter:
    """What one function builds, counted as it is built: :meth:`add` raises
    ``ValueTooLarge`` the moment the total passes ``max_value_chars``."""

    def __init__(self, function: str, location: Location | None) -> None:
        self.limit = limits().max_value_chars
        self.left = self.limit
        self._function = function
        self._location = location

    def add(self, value: Any) -> None:
        self.add_size(value_size(value, self.left))

    def add_size(self, size: int) -> None:
        self.left -= size
        if self.left < 0:
            raise ValueTooLarge(self._location, function=self._function, limit=self.limit)


def check_size(value: Any, function: str, location: Location | None) -> Any:
    """``value`` when it fits ``max_value_chars``; else ``ValueTooLarge``."""
    Meter(function, location).add(value)
    return value


def check_items(count: int, function: str, location: Location | None) -> None:
    """Refuse, before the work starts, a function that would make ``count`` items."""
    limit = limits().max_function_items
    if count > limit:
        raise TooManyItems(location, function=function, count=count, limit=limit)


# --- time ---------------------------------------------------------------------------


@contextlib.contextmanager
def timed(what: str, location: Location | None) -> Iterator[float]:
    """Run timed work (a pattern match, a yaql evaluation): yields its deadline, the
    time left of the evaluation's budget, and adds what it took to the time spent.
    Work inside timed work shares the outer deadline. Outside any evaluation the work
    is an evaluation of its own."""
    running = _current.get()
    if running is None:
        with evaluation(), timed(what, location) as deadline:
            yield deadline
        return
    if running.deadline is not None:
        yield running.deadline
        return
    left = running.budget.evaluation_timeout_seconds - running.spent
    if left <= 0:
        raise too_long(what, location)
    start = time.monotonic()
    running.deadline = start + left
    try:
        yield running.deadline
    finally:
        running.spent += time.monotonic() - start
        running.deadline = None


def too_long(what: str, location: Location | None) -> EvaluationTooLong:
    return EvaluationTooLong(location, what=what,
                             seconds=limits().evaluation_timeout_seconds)


def seconds_left(deadline: float) -> float:
    # NOTE: never 0: the regex module reads a zero timeout as none at all.
    return max(deadline - time.monotonic(), 0.001)


class _Expired(BaseException):
    """Raised into Python code past its deadline; a BaseException, so that the code's
    own ``except Exception`` cannot swallow it."""


# Modules whose functions the collector calls back at any moment: raised there, the stop
# would be printed as "Exception ignored" and lost; the next call of the evaluation's own
# code raises it instead.
_CALLBACKS = frozenset({"weakref", "_weakrefset"})


@contextlib.contextmanager
def python_deadline(deadline: float, expired: Callable[[], Exception]) -> Iterator[None]:
    """Stop the Python code run inside with ``expired()`` once the monotonic clock passes
    ``deadline``. The clock is read at every Python call (a trace function, this thread
    only), so a loop of calls cannot outlive it; C code that never calls back (a regular
    expression) is not stopped: patterns have their own timeout."""
    previous = sys.gettrace()

    def trace(frame: Any, event: Any, arg: Any) -> Any:
        if time.monotonic() > deadline and frame.f_globals.get("__name__") not in _CALLBACKS:
            raise _Expired
        # A debugger's or coverage tool's trace function keeps working.
        return previous(frame, event, arg) if previous is not None else None

    sys.settrace(trace)
    try:
        yield
    except _Expired:
        raise expired() from None
    finally:
        sys.settrace(previous)


# --- regular expressions ------------------------------------------------------------
# Patterns keep Python's ``re`` syntax, as in Heat: ``re`` decides what is a pattern, the
# ``regex`` module (same syntax in its VERSION0) runs it, with a timeout and without
# holding the GIL, so a pattern that backtracks for ever stops at the budget and other
# threads run meanwhile.


# The most pattern items a compiled pattern may unroll to. ``regex`` writes out every
# counted repeat (``a{1000000}`` is a million items, about 280 MB, and ``(a{1000}){1000}``
# the same), where ``re`` keeps a count; ``a{99999999}`` took 5 GB and then failed.
MAX_PATTERN_ITEMS = 10_000
# The standard library's own parser of ``re`` syntax (no public name; used only to count).
_RE_PARSER: Any = importlib.import_module("re._parser")
_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}


def compile_pattern(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``pattern`` compiled by ``re`` for its syntax: raises ``re.error`` for one that is
    not a regular expression, a nesting too deep for the compiler included, or one whose
    counted repeats unroll past ``MAX_PATTERN_ITEMS``."""
    try:
        compiled = re.compile(pattern, flags)
        unrolled = _unrolled_items(_RE_PARSER.parse(pattern, flags))
    except (RecursionError, OverflowError) as exc:
        raise re.error(f"the pattern is too complex to compile ({exc})") from None
    if unrolled > MAX_PATTERN_ITEMS:
        raise re.error(f"the pattern's repeats come to more than {MAX_PATTERN_ITEMS} items")
    return compiled


def _unrolled_items(items: Any) -> int:
    """How many items ``items`` (a parsed pattern) is once every counted repeat is
    written out: a repeat's count times its body (its lower bound when unbounded)."""
    total = 0
    for op, argument in items:
        if str(op) in _REPEATS:
            low, high, body = argument
            times = low if high == _RE_PARSER.MAXREPEAT else high
            total += max(times, 1) * _unrolled_items(body)
        else:
            total += 1 + sum(_unrolled_items(part) for part in _subpatterns(argument))
        if total > MAX_PATTERN_ITEMS:
            return total  # past the limit: no need to count the rest
    return total


def _subpatterns(argument: Any) -> Iterator[Any]:
    """The parsed sub-patterns inside an item's argument (groups, branches, assertions)."""
    if isinstance(argument, _RE_PARSER.SubPattern):
        yield argument
    elif isinstance(argument, (tuple, list)):
        for part in argument:
            yield from _subpatterns(part)


# A compiled pattern can hold megabytes (a class repeated 10,000 times: about 5 MB), so
# few are kept, and the regex module's own cache of 500 is bypassed.
@functools.lru_cache(maxsize=32)
def _runnable(pattern: str, flags: int) -> regex.Pattern[str]:
    compile_pattern(pattern, flags)
    try:
        return regex.compile(pattern, flags | regex.VERSION0, cache_pattern=False)
    except (regex.error, RecursionError, OverflowError) as exc:
        raise re.error(f"the pattern cannot be run safely ({exc})") from None


def _timeout_flags(flags: int) -> int:
    # The ``re`` and ``regex`` flag values agree for I, M, S, X, U and A.
    return flags & (re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE | re.UNICODE
                    | re.ASCII)


class BoundedPattern:
    """A compiled pattern whose every use is timed (for yaql's regex functions)."""

    def __init__(self, pattern: str, flags: int = 0,
                 location: Location | None = None) -> None:
        self.pattern = pattern
        self._compiled = _runnable(pattern, _timeout_flags(flags))
        self._location = location

    def _timed(self, work: Callable[[float], T]) -> T:
        what = f'Matching the pattern "{self.pattern}"'
        with timed(what, self._location) as deadline:
            try:
                return work(seconds_left(deadline))
            except TimeoutError:
                raise too_long(what, self._location) from None

    def match(self, text: str) -> regex.Match[str] | None:
        return self._timed(lambda t: self._compiled.match(text, timeout=t, concurrent=True))

    def search(self, text: str) -> regex.Match[str] | None:
        return self._timed(lambda t: self._compiled.search(text, timeout=t,
                                                           concurrent=True))

    def finditer(self, text: str) -> list[regex.Match[str]]:
        return self._timed(lambda t: list(self._compiled.finditer(text, timeout=t,
                                                                  concurrent=True)))

    def split(self, text: str, max_split: int = 0) -> list[str | Any]:
        return self._timed(lambda t: self._compiled.split(text, max_split, timeout=t,
                                                          concurrent=True))

    def sub(self, replacement: str | Callable[[Any], str], text: str, count: int = 0) -> str:
        return self._timed(lambda t: self._compiled.sub(replacement, text, count,
                                                        timeout=t, concurrent=True))


def match_pattern(pattern: str, text: str, location: Location | None = None) -> bool:
    """Heat's ``allowed_pattern`` test: the pattern matches at the start of ``text`` and
    the match ends at its end (not ``fullmatch``, which may backtrack into a longer
    alternative than Heat's first match)."""
    found = BoundedPattern(pattern, location=location).match(text)
    return found is not None and found.end() == len(text)
