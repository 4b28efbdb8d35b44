"""Template functions within the evaluation budget (engine.budget): what can amplify is
refused, before it is built, at the line of the call; what used to hang ends.

Each bomb here would take minutes or gigabytes without its budget; ``timeout`` bounds
the tests that would hang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from engine import budget
from engine.errors import EvaluationTooLong, StackValidationFailed, TooManyItems, ValueTooLarge
from engine.template.functions import Deferred, ParseContext, parse_value, resolve
from engine.template.parse import parse_text
from engine.template.versions import find_hot_version

SMALL = budget.Budget(max_value_chars=1000, max_function_items=50)
SHORT = budget.Budget(evaluation_timeout_seconds=0.05)


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
    doc = parse_text(text)
    hot = find_hot_version(version)
    assert hot is not None
    value = parse_value(ParseContext(doc, hot), doc.data["value"], ("value",))
    return resolve(value, scope or Params())


@pytest.fixture
def small() -> Iterator[None]:
    with budget.evaluation(SMALL):
        yield


# --- str_replace -------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_nested_str_replace_is_refused_at_its_line_before_it_is_built() -> None:
    # Each level multiplies by a thousand: 10**3, 10**6, then 10**9 characters.
    thousand = "x" * 1000
    text = ("value:\n"
            "  str_replace:\n"
            "    template:\n"
            "      str_replace:\n"
            f"        template: {thousand}\n"
            f"        params: {{x: {thousand}}}\n"
            f"    params: {{x: {thousand}}}\n")

    with pytest.raises(ValueTooLarge) as raised:
        evaluate(text)

    assert raised.value.location is not None and raised.value.location.line == 2
    assert str(raised.value).startswith("template:2 value.str_replace: ")
    assert "larger than 1048576 characters" in str(raised.value)


def test_str_replace_within_the_budget_is_unchanged(small: None) -> None:
    assert evaluate("value: {str_replace: {template: 'ab ab', params: {a: b, b: c}}}") \
        == "bc bc"


def test_str_replace_with_thousands_of_keys_needs_no_recursion() -> None:
    # Beyond Python's recursion limit, which a split per key used to reach.
    keys = {f"k{i:05d}": f"v{i}" for i in range(1500)}
    template = " ".join(keys)

    result = resolve(parse_value(
        ParseContext(parse_text("value: 0\n"), find_hot_version("2021-04-16")),  # type: ignore[arg-type]
        {"str_replace": {"template": template, "params": keys}}, ("value",)), Params())

    assert result == " ".join(keys.values())


# --- repeat ------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_a_repeat_over_a_large_product_is_refused_before_any_combination() -> None:
    hundred = list(range(100))

    with pytest.raises(TooManyItems, match="would produce 1000000 items, more than 10000"):
        evaluate("value: {repeat: {for_each: {'%a%': {get_param: l}, '%b%': {get_param: l},"
                 " '%c%': {get_param: l}}, template: '%a%-%b%-%c%'}}",
                 Params(l=[str(i) for i in hundred]))


def test_a_repeat_whose_copies_outgrow_the_budget_stops(small: None) -> None:
    with pytest.raises(ValueTooLarge, match='"repeat" would produce a value larger than 1000'):
        evaluate("value: {repeat: {for_each: {'%i%': {get_param: l}}, "
                 "template: {name: '%i%', pad: {get_param: pad}}}}",
                 Params(l=[str(i) for i in range(40)], pad="p" * 100))


def test_one_string_of_a_repeat_may_not_outgrow_the_budget(small: None) -> None:
    with pytest.raises(ValueTooLarge):
        evaluate("value: {repeat: {for_each: {'%x%': {get_param: big}}, "
                 "template: {get_param: many}}}",
                 Params(big=["y" * 400], many="%x%" * 10))


# --- lists and maps ----------------------------------------------------------------------


def test_list_concat_counts_its_items_and_the_size_of_repeated_lists(small: None) -> None:
    with pytest.raises(TooManyItems):
        evaluate("value: {list_concat: [{get_param: l}, {get_param: l}]}",
                 Params(l=list(range(30))))
    with pytest.raises(ValueTooLarge):
        evaluate("value: {list_concat: [{get_param: l}, {get_param: l}, {get_param: l}]}",
                 Params(l=["z" * 400]))


@pytest.mark.timeout(60)
def test_list_concat_unique_over_repeats_is_linear_and_keeps_first_of_equals() -> None:
    text = ("value:\n"
            "  list_concat_unique:\n"
            "    - repeat: {for_each: {'%i%': {get_param: l}}, template: {n: '%i%'}}\n"
            "    - repeat: {for_each: {'%i%': {get_param: l}}, template: {n: '%i%'}}\n")
    many = [str(i) for i in range(5000)]

    assert evaluate(text, Params(l=many)) == [{"n": i} for i in many]
    # Python's equality, as Heat's ``not in``: 1, 1.0 and True are one value.
    assert evaluate("value: {list_concat_unique: [[1, {a: [1]}], [1.0, true, {a: [1.0]}]]}") \
        == [1, {"a": [1]}]


@pytest.mark.timeout(60)
def test_filter_of_long_lists_is_linear() -> None:
    many = list(range(10000))
    assert evaluate("value: {filter: [{get_param: odd}, {get_param: all}]}",
                    Params(odd=many[1::2], all=many)) == many[::2]


def test_list_join_counts_the_delimiter_between_every_item_before_joining(
        small: None) -> None:
    with pytest.raises(ValueTooLarge):
        evaluate("value: {list_join: [{get_param: d}, {get_param: l}]}",
                 Params(d="-" * 100, l=["a"] * 20))
    with pytest.raises(TooManyItems):
        evaluate("value: {list_join: [',', {get_param: l}]}", Params(l=["a"] * 51))


def test_map_merge_and_map_replace_stay_within_the_budget(small: None) -> None:
    keys = {f"k{i}": "v" for i in range(30)}
    with pytest.raises(TooManyItems):
        evaluate("value: {map_merge: [{get_param: a}, {get_param: b}]}",
                 Params(a=keys, b={f"o{i}": 1 for i in range(30)}))
    # One long replacement value for every key's value is many copies once stored.
    with pytest.raises(ValueTooLarge):
        evaluate("value: {map_replace: [{get_param: m}, {values: {v: {get_param: long}}}]}",
                 Params(m=keys, long="w" * 100))


def test_str_split_into_more_items_than_the_budget_is_refused_but_an_index_is_not(
        small: None) -> None:
    with pytest.raises(TooManyItems):
        evaluate("value: {str_split: [',', {get_param: s}]}", Params(s="," * 60))
    assert evaluate("value: {str_split: [',', {get_param: s}, 3]}", Params(s="," * 60)) == ""


# --- yaql --------------------------------------------------------------------------------


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


def test_the_yaql_quotas_come_from_the_budget() -> None:
    with budget.evaluation(budget.Budget(yaql_limit_iterators=5)), \
            pytest.raises(StackValidationFailed, match="exceeds 5 elements"):
        evaluate("value: {yaql: {expression: 'range(6)'}}")


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
