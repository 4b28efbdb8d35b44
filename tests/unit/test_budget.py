"""engine.budget: value sizes, item counts, the time of patterns and Python code."""

from __future__ import annotations

import contextlib
import dataclasses
import re
import sys
from collections.abc import Iterator

import pytest

from engine import budget, config
from engine.errors import EvaluationTooLong, Location, TooManyItems, ValueTooLarge

HERE = Location(path="resources.r.properties.p", line=7)
# Backtracks for 2**40 steps on this input in Python's re and in the regex module alike.
BOMB, BOMB_INPUT = r"(a|aa)+$", "a" * 40 + "b"
SHORT = dataclasses.replace(budget.DEFAULT, evaluation_timeout_seconds=0.05)


@pytest.fixture
def configured() -> Iterator[None]:
    """Put the process's budget back after a test that configures one."""
    saved = budget.limits()
    yield
    budget.configure(saved)


# --- sizes and counts ------------------------------------------------------------------


def test_a_value_costs_one_per_value_plus_the_characters_of_its_strings() -> None:
    assert budget.value_size("abc") == 4
    assert budget.value_size(7) == 1
    assert budget.value_size(None) == 1
    assert budget.value_size(["ab", 1]) == 1 + 3 + 1
    assert budget.value_size({"key": "v"}) == 1 + 4 + 2


def test_counting_stops_past_the_limit_so_shared_values_cost_no_more() -> None:
    # A million references to one long string: counted only until the limit is passed.
    shared = ["x" * 1000] * 1_000_000

    assert 100 < budget.value_size(shared, limit=100) < 1200


def test_a_meter_refuses_once_the_total_passes_the_budget() -> None:
    with budget.evaluation(dataclasses.replace(budget.DEFAULT, max_value_chars=10)):
        meter = budget.Meter("repeat", HERE)
        meter.add("abcd")
        with pytest.raises(ValueTooLarge) as raised:
            meter.add("efghij")

    assert raised.value.location == HERE
    assert '"repeat" would produce a value larger than 10 characters' in str(raised.value)
    assert "template:7 resources.r.properties.p" in str(raised.value)


def test_item_counts_are_refused_before_the_work() -> None:
    with budget.evaluation(dataclasses.replace(budget.DEFAULT, max_function_items=3)):
        budget.check_items(3, "list_concat", HERE)
        with pytest.raises(TooManyItems, match="would produce 4 items, more than 3"):
            budget.check_items(4, "list_concat", HERE)


def test_configure_sets_the_process_budget_and_an_evaluation_may_override_it(
        configured: None) -> None:
    budget.configure(dataclasses.replace(budget.DEFAULT, max_value_chars=5000))
    assert budget.limits().max_value_chars == 5000

    with budget.evaluation(dataclasses.replace(budget.DEFAULT, max_value_chars=7)):
        assert budget.limits().max_value_chars == 7
        with budget.evaluation():  # a nested entry point joins the one running
            assert budget.limits().max_value_chars == 7
    assert budget.limits().max_value_chars == 5000


def test_a_budget_has_no_defaults_of_its_own_but_the_options() -> None:
    # Every limit is written once, as its option's default in engine.config.
    with pytest.raises(TypeError):
        budget.Budget()  # type: ignore[call-arg]
    declared = {(group, opt.dest): opt.default
                for group, opts in config.list_opts() for opt in opts}

    assert {field: declared[option] for field, option in budget.OPTIONS.items()} \
        == dataclasses.asdict(budget.DEFAULT)
    assert set(budget.OPTIONS) == {f.name for f in dataclasses.fields(budget.Budget)}


# --- regular expressions ---------------------------------------------------------------


def test_a_pattern_matches_as_heat_matches_it() -> None:
    assert budget.match_pattern("[a-z]+", "abc")
    assert not budget.match_pattern("[a-z]+", "abc1")
    # Heat takes the first match and asks that it reach the end; fullmatch would find
    # the longer alternative.
    assert not budget.match_pattern("a|ab", "ab")
    assert budget.match_pattern("ab|a", "ab")


@pytest.mark.timeout(60)
def test_a_backtracking_pattern_stops_at_the_time_budget_with_its_location() -> None:
    with budget.evaluation(SHORT), pytest.raises(EvaluationTooLong) as raised:
        budget.match_pattern(BOMB, BOMB_INPUT, HERE)

    assert raised.value.location == HERE
    assert f'Matching the pattern "{BOMB}" took too long' in str(raised.value)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a|a)+$", r"(a*)*$", r"(.*a){25}",
                                     r"^(a?){40}a{40}$", r"(x+x+)+y"])
def test_well_known_catastrophic_patterns_end(pattern: str) -> None:
    # Stopped, or (most of them: the regex module does not even backtrack on these)
    # answered: none matches the input.
    with budget.evaluation(SHORT), contextlib.suppress(EvaluationTooLong):
        assert not budget.match_pattern(pattern, BOMB_INPUT)


@pytest.mark.timeout(60)
def test_one_evaluation_shares_one_time_budget() -> None:
    with budget.evaluation(SHORT):
        with pytest.raises(EvaluationTooLong):
            budget.match_pattern(BOMB, BOMB_INPUT)
        # Spent: the next pattern, however easy, is refused without running.
        with pytest.raises(EvaluationTooLong):
            budget.match_pattern("a", "a")
    with budget.evaluation(SHORT):
        assert budget.match_pattern("a", "a")


def test_timed_work_inside_timed_work_shares_its_deadline_even_outside_an_evaluation(
        ) -> None:
    with budget.timed("yaql", None) as outer, budget.timed("a pattern", None) as inner:
        assert inner == outer


def test_patterns_keep_pythons_re_syntax() -> None:
    with pytest.raises(re.error):
        budget.compile_pattern("(")
    # The regex module knows Unicode properties; re, and so Heat, does not.
    with pytest.raises(re.error, match="bad escape"):
        budget.compile_pattern(r"\p{L}+")
    with pytest.raises(re.error):
        budget.BoundedPattern(r"\p{L}+")


def test_a_pattern_nested_too_deep_for_the_compiler_is_a_pattern_error() -> None:
    with pytest.raises(re.error, match="too complex"):
        budget.compile_pattern("(" * 2000 + ")" * 2000)


@pytest.mark.parametrize("pattern", ["a{99999999}", "(a{1000}){1000}", "(?:x|(b{400}){400})",
                                     "(?=a{20000})", "(?P<g>a)(?(g)b{20000}|c)",
                                     "[a-z0]{99999}"])
def test_repeats_that_would_unroll_past_the_limit_are_a_pattern_error(pattern: str) -> None:
    # The regex module writes counted repeats out: a{99999999} took 5 GB, then failed.
    with pytest.raises(re.error, match="repeats come to more than"):
        budget.compile_pattern(pattern)
    with pytest.raises(re.error):
        budget.BoundedPattern(pattern)


@pytest.mark.parametrize("pattern", ["(a{90}){100}", "x*", "a{5,}", r"[a-z]{1,64}@\w+"])
def test_repeats_within_the_limit_compile(pattern: str) -> None:
    assert budget.BoundedPattern(pattern).pattern == pattern


def test_a_bounded_pattern_answers_as_a_compiled_pattern_does() -> None:
    pattern = budget.BoundedPattern("a(.)", re.IGNORECASE)
    text = "xAbcad"

    found = pattern.search(text)
    assert found is not None and found.group(1) == "b"
    assert pattern.match(text) is None
    assert [m.group() for m in pattern.finditer(text)] == ["Ab", "ad"]
    assert pattern.split(text) == ["x", "b", "c", "d", ""]
    assert pattern.sub("-", text, 1) == "x-cad"


# --- Python code under a deadline --------------------------------------------------------


def _forever() -> None:
    def step() -> int:
        return 1

    while True:
        step()


# Run untraced (unmeasured): the deadline chains to the trace function it finds, and
# coverage's C tracer, once called so, puts itself back in the deadline's place.
@pytest.mark.usefixtures("untraced")
@pytest.mark.timeout(60)
def test_python_code_stops_at_its_deadline_and_the_trace_function_is_put_back() -> None:
    before = sys.gettrace()
    with (budget.evaluation(SHORT), budget.timed("the loop", HERE) as deadline,
          pytest.raises(EvaluationTooLong, match="the loop took too long"),
          budget.python_deadline(deadline, lambda: budget.too_long("the loop", HERE))):
        _forever()

    assert sys.gettrace() is before


# Run untraced (unmeasured): the deadline chains to the trace function it finds, and
# coverage's C tracer, once called so, puts itself back in the deadline's place.
@pytest.mark.usefixtures("untraced")
@pytest.mark.timeout(60)
def test_code_that_catches_every_exception_still_stops() -> None:
    def stubborn() -> None:
        while True:
            try:
                _forever()
            except Exception:  # noqa: BLE001, S112 -- what careless code does
                continue

    with (budget.evaluation(SHORT), budget.timed("stubborn", None) as deadline,
          pytest.raises(EvaluationTooLong),
          budget.python_deadline(deadline, lambda: budget.too_long("stubborn", None))):
        stubborn()
