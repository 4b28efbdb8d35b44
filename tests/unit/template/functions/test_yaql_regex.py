"""engine.template.functions.yaql_regex: yaql's regular expression functions, answering
as yaql's own and stopping at the evaluation's time budget."""

from __future__ import annotations

from typing import Any

import pytest

from engine import budget
from engine.errors import EvaluationTooLong, StackValidationFailed
from tests.unit.template.functions.conftest import SHORT, evaluate


@pytest.mark.timeout(60)
@pytest.mark.parametrize("expression", [
    "regex(\"(a|aa)+$\").matches($.data.s)",
    "$.data.s =~ \"(a|aa)+$\"",
    "$.data.s.matches(\"(a|aa)+$\")",
    "regex(\"(a|aa)+$\").searchAll($.data.s)",
    "$.data.s.replace(regex(\"(a|aa)+$\"), \"x\")",
])
def test_yaql_regular_expressions_stop_at_the_time_budget(expression: str) -> None:
    text = f"value: {{yaql: {{expression: '{expression}', data: {{s: {'a' * 40}b}}}}}}"
    with budget.evaluation(SHORT), pytest.raises(EvaluationTooLong):
        evaluate(text)


@pytest.mark.parametrize(("expression", "expected"), [
    ('regex("a(.)c").search("xabcabd", $2.value)', "b"),
    ('regex("a.").searchAll("abcadc", $.start)', [0, 3]),
    ('regex("a.").replace("abcadc", "xx", count => 1)', "xxcadc"),
    ('"abcadc".replaceBy(regex("a."), $1.value + "!")', "ab!cad!c"),
    ('"a,b;c".split(regex("[,;]"))', ["a", "b", "c"]),
    ('regex("A", ignoreCase => true).matches("a")', True),
    ('"abc" !~ "z"', True),
    ('escapeRegex("a.")', "a\\."),
    ('isRegex(regex("a"))', True),
])
def test_yaql_regular_expressions_answer_as_yaqls_own(expression: str, expected: Any) -> None:
    assert evaluate(f"value: {{yaql: {{expression: '{expression}'}}}}") == expected


def test_a_bad_yaql_regular_expression_is_an_evaluation_error() -> None:
    with pytest.raises(StackValidationFailed, match="is not a regular expression"):
        evaluate("value: {yaql: {expression: 'regex(\"(\").matches(\"a\")'}}")
