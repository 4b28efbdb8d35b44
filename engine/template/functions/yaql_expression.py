"""``yaql: {expression, data}`` through the ``yaql`` package, with Heat's limits.

The expression is parsed when the template is (a syntax error is a template error with a
line); it is evaluated with ``$.data`` bound to the resolved ``data``. The evaluation
budget (``engine.budget``) bounds it as Heat's ``[yaql]`` options do (iterators capped at
``limit_iterators`` items, memory at ``memory_quota`` bytes) and further: the answer may
be no larger than any function's, the evaluation runs under the budget's deadline, its
regular expressions are timed (:mod:`yaql_regex`), and ``len`` of an iterator counts no
further than ``limit_iterators`` (yaql's own counts an endless ``sequence()`` for ever).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import yaql
from yaql.language import exceptions as yaql_errors
from yaql.language import specs, utils, yaqltypes

from engine import budget
from engine.template.functions import yaql_regex
from engine.template.functions.core import Function, Scope, resolve


@functools.lru_cache(maxsize=4)
def _engine(limit_iterators: int, memory_quota: int) -> Any:
    # The factory builds a parser table; one per limits pair is plenty.
    return yaql.YaqlFactory().create(options={"yaql.limitIterators": limit_iterators,
                                              "yaql.memoryQuota": memory_quota})


@specs.parameter("collection", utils.IteratorType)
@specs.inject("engine", yaqltypes.Engine())
@specs.name("len")
@specs.extension_method
def _bounded_len(collection: Any, engine: Any) -> int:
    return sum(1 for _ in utils.limit_iterable(collection, engine))


# An integer of more decimal digits than Python turns into text (its 4,300-digit limit)
# could never be stored or shown; yaql's ``pow``, ``*`` and ``shiftBitsLeft`` make one in
# a single C call that no deadline interrupts (``pow(10, 100000000)`` held a worker for
# minutes), so they refuse a result past this many bits first.
MAX_INTEGER_BITS = 14_300


def _too_large() -> ValueError:
    return ValueError(f"the integer result would have more than {MAX_INTEGER_BITS} bits")


@specs.parameter("a", yaqltypes.Number())
@specs.parameter("b", yaqltypes.Number())
@specs.parameter("c", yaqltypes.Number(nullable=True))
@specs.name("pow")
def _bounded_pow(a: Any, b: Any, c: Any = None) -> Any:
    if (c is None and isinstance(a, int) and isinstance(b, int) and abs(a) > 1 and b > 0
            and (abs(a).bit_length() - 1) * b > MAX_INTEGER_BITS):
        raise _too_large()
    return pow(a, b, c)


@specs.parameter("left", yaqltypes.Number())
@specs.parameter("right", yaqltypes.Number())
@specs.name("#operator_*")
def _bounded_multiplication(left: Any, right: Any) -> Any:
    # ``reduce($1 * $1)`` squares at every step: the bits double each time.
    if (isinstance(left, int) and isinstance(right, int)
            and left.bit_length() + right.bit_length() > MAX_INTEGER_BITS + 1):
        raise _too_large()
    return left * right


@specs.parameter("value", int)
@specs.parameter("bits_number", int)
@specs.name("shiftBitsLeft")
def _bounded_shift_left(value: int, bits_number: int) -> int:
    if value and value.bit_length() + bits_number > MAX_INTEGER_BITS:
        raise _too_large()
    return value << bits_number


@functools.lru_cache(maxsize=1)
def _context() -> Any:
    """yaql's standard library with the timed regex functions; read-only once made, each
    evaluation runs in a child of it."""
    context = yaql.create_context(regex=False)
    yaql_regex.register(context)
    # A child layer, so that this ``len`` is chosen before the library's for iterators.
    context = context.create_child_context()
    context.register_function(_bounded_len)
    context.register_function(_bounded_pow)
    context.register_function(_bounded_multiplication)
    context.register_function(_bounded_shift_left)
    return context


# NOTE: yaql parses with ply, whose lexer and parser keep the text being read in
# themselves, and an engine holds one of each: two threads parsing at once through one
# engine read each other's text (a wrong expression, or a parse error of a good one). A
# parse is short (tens of microseconds for an expression of a line; evaluating never
# touches the parser), so one lock serialises parsing rather than an engine, with its
# parser tables, per thread.
_parsing = threading.Lock()


def parse_expression(text: str) -> Any:
    """The parsed expression; raises ``ValueError`` with yaql's reason on bad syntax."""
    limits = budget.limits()
    engine = _engine(limits.yaql_limit_iterators, limits.yaql_memory_quota)
    try:
        with _parsing:
            return engine(text)
    except yaql_errors.YaqlException as exc:
        raise ValueError(str(exc)) from None


@dataclasses.dataclass(frozen=True)
class Yaql(Function):
    fn_name = "yaql"
    expression: str
    data: Any

    def resolve(self, scope: Scope) -> Any:
        data = resolve(self.data, scope)
        what = f'Evaluation of "{self.fn_name}"'
        # The answer is made plain inside the deadline: yaql's iterators are lazy, and
        # most of the work can happen while they are read.
        try:
            parsed = parse_expression(self.expression)
        except ValueError as exc:
            raise self.fail(f'Bad expression {exc}') from None
        with budget.timed(what, self.location) as deadline, budget.python_deadline(
                deadline, lambda: budget.too_long(what, self.location)):
            try:
                result = parsed.evaluate(data={"data": data},
                                         context=_context().create_child_context())
                return _plain(result, budget.Meter(self.fn_name, self.location))
            except yaql_errors.YaqlException as exc:
                raise self.fail(f'{what} failed: {exc}') from None
            except (TypeError, ValueError, KeyError, IndexError, AttributeError,
                    ArithmeticError, RecursionError) as exc:
                # yaql lets the Python errors of its operators through ("a" + 1).
                raise self.fail(f'{what} failed: {exc}') from None


def _plain(value: Any, meter: budget.Meter) -> Any:
    """yaql answers sets, tuples and frozen maps; a template value is JSON-shaped. Each
    part is counted as it is read, so an answer past the budget stops being made. What
    JSON cannot hold (``now()``'s datetime, ``pow(-1, 0.5)``'s complex number, NaN) is
    refused here, with the evaluation's message, rather than when it is stored."""
    meter.add_size(1)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        meter.add_size(len(value))
        return value
    if isinstance(value, int):
        if value.bit_length() > MAX_INTEGER_BITS:
            raise _too_large()  # "a" * 2 ** 14 and the like, made by hand
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"the answer holds {value}, which JSON cannot")
        return value
    if isinstance(value, Mapping):
        return {_plain_key(k, meter): _plain(v, meter) for k, v in value.items()}
    if isinstance(value, Iterable) and not isinstance(value, (bytes, bytearray)):
        return [_plain(v, meter) for v in value]
    raise ValueError(f"the answer holds a {type(value).__name__}, which a template value "
                     "cannot hold")


def _plain_key(key: Any, meter: budget.Meter) -> Any:
    if key is not None and not isinstance(key, (str, int, float)):
        raise ValueError(f"the answer has a map key that is a {type(key).__name__}")
    return _plain(key, meter)
