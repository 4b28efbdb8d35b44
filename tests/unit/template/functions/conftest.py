"""What the tests of the template functions share: a scope of parameters only, a value
parsed and resolved as a template's is, and small budgets."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from engine import budget
from engine.template.functions import Deferred, ParseContext, parse_value, resolve
from engine.template.parse import parse_text
from engine.template.versions import find_hot_version

SMALL = dataclasses.replace(budget.DEFAULT, max_value_chars=1000, max_function_items=50)
SHORT = dataclasses.replace(budget.DEFAULT, evaluation_timeout_seconds=0.05)


class Params:
    """A scope with parameters only."""

    def __init__(self, **params: Any) -> None:
        self.params = params

    def param(self, name: str) -> Any:
        return self.params[name]

    def reference_id(self, resource: str) -> Any:
        raise Deferred(resource)

    def attribute(self, resource: str, attribute: str, path: Any = ()) -> Any:
        raise Deferred(resource)

    def attributes(self, resource: str) -> Any:
        raise Deferred(resource)


def evaluate(text: str, scope: Any = None, version: str = "2021-04-16") -> Any:
    """The value of the ``value`` key of the YAML ``text``, resolved in ``scope``."""
    doc = parse_text(text)
    hot = find_hot_version(version)
    assert hot is not None
    value = parse_value(ParseContext(doc, hot), doc.data["value"], ("value",))
    return resolve(value, scope or Params())


def evaluate_value(value: Any, scope: Any = None) -> Any:
    """``value`` (a function call as Python data, not text) resolved in ``scope``."""
    hot = find_hot_version("2021-04-16")
    assert hot is not None
    context = ParseContext(parse_text("value: 0\n"), hot)
    return resolve(parse_value(context, value, ("value",)), scope or Params())


@pytest.fixture
def small() -> Iterator[None]:
    with budget.evaluation(SMALL):
        yield
