"""``yaql: {expression, data}`` through the ``yaql`` package, with Heat's limits.

The expression is parsed when the template is (a syntax error is a template error with a
line); it is evaluated with ``$.data`` bound to the resolved ``data``. Iterators are capped
at ``limit_iterators`` items and memory at ``memory_quota`` bytes, Heat's defaults, so a
tenant's expression cannot stall a worker or the API.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping
from typing import Any

import yaql
from yaql.language import exceptions as yaql_errors

from engine.template.functions.core import Function, Scope, resolve

LIMIT_ITERATORS = 200
MEMORY_QUOTA = 10000


@functools.lru_cache(maxsize=4)
def _engine(limit_iterators: int, memory_quota: int) -> Any:
    # The factory builds a parser table; one per limits pair is plenty.
    return yaql.YaqlFactory().create(options={"yaql.limitIterators": limit_iterators,
                                              "yaql.memoryQuota": memory_quota})


def parse_expression(text: str) -> Any:
    """The parsed expression; raises ``ValueError`` with yaql's reason on bad syntax."""
    try:
        return _engine(LIMIT_ITERATORS, MEMORY_QUOTA)(text)
    except yaql_errors.YaqlException as exc:
        raise ValueError(str(exc)) from None


@dataclasses.dataclass(frozen=True)
class Yaql(Function):
    fn_name = "yaql"
    expression: str
    data: Any

    def resolve(self, scope: Scope) -> Any:
        data = resolve(self.data, scope)
        try:
            parsed = parse_expression(self.expression)
            result = parsed.evaluate(data={"data": data}, context=yaql.create_context())
        except ValueError as exc:
            raise self.fail(f'Bad expression {exc}') from None
        except yaql_errors.YaqlException as exc:
            raise self.fail(f'Evaluation of "{self.fn_name}" failed: {exc}') from None
        except (TypeError, KeyError, IndexError, AttributeError, ArithmeticError) as exc:
            # yaql lets the Python errors of its operators through ("a" + 1).
            raise self.fail(f'Evaluation of "{self.fn_name}" failed: {exc}') from None
        return _plain(result)


def _plain(value: Any) -> Any:
    """yaql answers sets, tuples and frozen maps; a template value is JSON-shaped."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, Iterable):
        return [_plain(v) for v in value]
    return value
