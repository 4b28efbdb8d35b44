"""engine.template.functions.yaql_expression: Heat's ``[yaql]`` quotas from the budget,
the evaluation under the time budget, the answer metered, and one parser shared safely
by many threads."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from engine import budget
from engine.errors import EvaluationTooLong, StackValidationFailed, ValueTooLarge
from engine.template.functions.yaql_expression import _engine, parse_expression
from tests.unit.template.functions.conftest import SHORT, evaluate


@pytest.mark.parametrize(("expression", "reason"), [
    ("range(100000000)", "Collection length exceeds 200 elements"),
    ('"a" * 100000000', "Expression consumed too much memory"),
    ("range(10000000000).len()", "Collection length exceeds 200 elements"),
    ("sequence().len()", "Collection length exceeds 200 elements"),
])
@pytest.mark.timeout(60)
def test_heats_yaql_quotas_end_range_and_multiplication_bombs(expression: str,
                                                              reason: str) -> None:
    with pytest.raises(StackValidationFailed, match=reason):
        evaluate(f"value: {{yaql: {{expression: '{expression}'}}}}")


@pytest.mark.parametrize("expression", ["pow(10, 100000000)", "shiftBitsLeft(1, 1000000000)",
                                        "pow(3, 10000)", "range(1, 200).reduce($1 * $1 * $2)"])
@pytest.mark.timeout(60)
def test_an_integer_no_text_can_hold_is_refused_before_it_is_made(expression: str) -> None:
    # pow(10, 100000000) was one C call no deadline stops: minutes of a worker's time.
    with pytest.raises(StackValidationFailed, match="integer result would have more than"):
        evaluate(f"value: {{yaql: {{expression: '{expression}'}}}}")


@pytest.mark.parametrize(("expression", "value"), [
    ("pow(2, 10)", 1024), ("pow(3, 2, 5)", 4), ("shiftBitsLeft(3, 4)", 48),
    ("pow(-1, 100000000)", 1), ("pow(2, -1)", 0.5), ("3 * 4", 12), ("1.5 * 2", 3.0),
    ('"ab" * 2', "abab"), ("[1, 2] * 2", [1, 2, 1, 2]), ("2 * [3]", [3, 3])])
def test_integers_within_the_bound_are_yaqls_own(expression: str, value: object) -> None:
    assert evaluate(f"value: {{yaql: {{expression: '{expression}'}}}}") == value


@pytest.mark.parametrize(("expression", "reason"), [
    ("now()", "holds a datetime"), ("pow(-1, 0.5)", "holds a complex"),
    ("float(\"nan\")", "holds nan"), ("float(\"inf\") * 2", "holds inf"),
])
def test_an_answer_json_cannot_hold_is_the_evaluations_refusal(expression: str,
                                                                 reason: str) -> None:
    # Such answers reached the database and failed there, as a Kiln internal error.
    with pytest.raises(StackValidationFailed, match=f'Evaluation of "yaql" failed: .*{reason}'):
        evaluate(f"value: {{yaql: {{expression: '{expression}'}}}}")


def test_the_yaql_quotas_come_from_the_budget() -> None:
    with budget.evaluation(dataclasses.replace(budget.DEFAULT, yaql_limit_iterators=5)), \
            pytest.raises(StackValidationFailed, match="exceeds 5 elements"):
        evaluate("value: {yaql: {expression: 'range(6)'}}")


# Run untraced (unmeasured): the deadline chains to the trace function it finds, and
# coverage's C tracer, once called so, puts itself back in the deadline's place.
@pytest.mark.usefixtures("untraced")
@pytest.mark.timeout(60)
def test_nested_yaql_loops_stop_at_the_time_budget() -> None:
    loops = "range(200).select(range(200).select(range(200).select(range(200).len())))"
    with budget.evaluation(SHORT), pytest.raises(EvaluationTooLong) as raised:
        evaluate(f"value:\n  yaql: {{expression: '{loops}'}}\n")

    assert raised.value.location is not None and raised.value.location.line == 2
    assert 'Evaluation of "yaql" took too long' in str(raised.value)


def test_a_yaql_answer_larger_than_the_budget_is_refused(small: None) -> None:
    with pytest.raises(ValueTooLarge, match='"yaql" would produce a value larger'):
        evaluate("value: {yaql: {expression: 'range(100).select(range(100))'}}")


def test_a_parse_never_reads_the_text_another_thread_is_parsing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # yaql's parser keeps the text it reads in itself, and one engine serves every
    # thread. Here a second thread parses while the first is between two tokens: before
    # the lock, the first then read the end of the second's text ("Parse error:
    # unexpected end of statement" for a good expression). With the lock the second
    # waits for the first, whose wait for it is cut short.
    limits = budget.limits()
    lexer = _engine(limits.yaql_limit_iterators, limits.yaql_memory_quota).lexer
    next_token = lexer.token
    other: dict[str, object] = {}
    other_done = threading.Event()

    def parse_other() -> None:
        other["answer"] = parse_expression("2 + 2").evaluate(data={})
        other_done.set()

    second = threading.Thread(target=parse_other)

    def token() -> object:
        if not second.is_alive() and not other_done.is_set():
            second.start()
            other_done.wait(0.2)
        return next_token()

    monkeypatch.setattr(lexer, "token", token)

    assert parse_expression("1 + 1 + 1").evaluate(data={}) == 3
    second.join()
    assert other == {"answer": 4}
