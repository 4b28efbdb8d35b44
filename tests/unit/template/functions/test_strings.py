"""engine.template.functions.strings: ``str_replace`` as Heat replaces, in a pass per key
and within the evaluation budget; ``list_join`` and ``str_split`` within the budget.

Each bomb here would take minutes or gigabytes without its budget; ``timeout`` bounds
the tests that would hang."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from engine import budget
from engine.errors import EvaluationTooLong, StackValidationFailed, TooManyItems, ValueTooLarge
from tests.unit.template.functions.conftest import Params, evaluate, evaluate_value


def heats_rule(text: str, params: dict[str, str]) -> str:
    """Heat's str_replace, as its source describes it (Replace in
    heat/engine/hot/functions.py): longest keys first (equal lengths in order); the text
    is split on the first key, each piece on the next, and the pieces joined back with
    the values. Written here as plainly as possible, to check the fast one against."""
    keys = sorted(sorted(params), key=len, reverse=True)
    pieces: list[tuple[str, bool]] = [(text, True)]  # (text, still searched)
    for key in keys:
        after: list[tuple[str, bool]] = []
        for piece, searched in pieces:
            if not searched:
                after.append((piece, False))
                continue
            for i, part in enumerate(piece.split(key)):
                if i:
                    after.append((params[key], False))
                after.append((part, True))
        pieces = after
    return "".join(piece for piece, _ in pieces)


def str_replace(text: str, params: dict[str, str]) -> str:
    return str(evaluate_value({"str_replace": {"template": text, "params": params}}))


# --- Heat's rule ---------------------------------------------------------------------------


@given(st.text("abc", max_size=30),
       st.dictionaries(st.text("abc", min_size=1, max_size=4), st.text("abcxy", max_size=3),
                       max_size=6))
@example("abcd", {"bcd": "1", "ab": "2"})  # the longer key wins though it starts later
@example("aaa", {"a": "b", "aa": "c"})  # then the shorter one in what is left
@example("abab", {"ab": "ba", "ba": "x"})  # never in a value put in by another key
@example("xaby", {"ab": "", "xy": "!"})  # nor across the place of another key
def test_str_replace_is_heats_rule(text: str, params: dict[str, str]) -> None:
    assert str_replace(text, params) == heats_rule(text, params)


def test_keys_of_one_length_go_in_order() -> None:
    assert str_replace("abc", {"bc": "2", "ab": "1"}) == "1c"
    assert str_replace("abc", {"ab": "1", "bc": "2"}) == "1c"


def test_characters_of_any_plane_are_kept() -> None:
    # Kiln marks the places of keys with characters in neither the text nor a key.
    text = "\ue000 \U000f0000 k \x00"
    assert str_replace(text, {"k": "\ue001", "\x00": "z"}) == "\ue000 \U000f0000 \ue001 z"


# --- within the budget ---------------------------------------------------------------------


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


def test_the_size_counted_is_the_results_so_a_shrinking_key_makes_room(small: None) -> None:
    # 600 characters: the first key grows them past the budget's 1000, the second
    # shrinks them back to 750; only a result past the budget is refused.
    assert evaluate("value: {str_replace: {template: {get_param: t}, "
                    "params: {ab: xxxxx, c: ''}}}", Params(t="abcc" * 150)) == "xxxxx" * 150
    with pytest.raises(ValueTooLarge):
        evaluate("value: {str_replace: {template: {get_param: t}, params: {c: ddddd}}}",
                 Params(t="abcc" * 150))


@pytest.mark.timeout(60)
def test_thousands_of_keys_take_a_pass_each_and_no_recursion() -> None:
    # Each key once in the text: quadratic in Python steps before (10,000 keys took
    # 7.5 s; Heat's recursive split takes about a minute), and beyond Python's
    # recursion limit before that.
    keys = {f"k{i:05d}": f"v{i}" for i in range(10000)}
    # What is checked is the shape of the work, not its speed: a budget no loaded test
    # machine can reach, so only a recursion error or a failed replacement fails it.
    roomy = dataclasses.replace(budget.limits(), evaluation_timeout_seconds=50.0)

    with budget.evaluation(roomy):
        assert str_replace(" ".join(keys), keys) == " ".join(keys.values())


@pytest.mark.timeout(60)
def test_a_long_text_with_many_keys_stops_at_the_time_budget() -> None:
    # A pass per key over most of a megabyte: seconds of work, refused at a hundredth
    # of one.
    keys = {f"k{i:05d}": "v" for i in range(20000)}
    text = "x" * 900_000 + " ".join(keys)

    with budget.evaluation(dataclasses.replace(budget.DEFAULT,
                                               evaluation_timeout_seconds=0.01)), \
            pytest.raises(EvaluationTooLong) as raised:
        evaluate("value:\n  str_replace: {template: {get_param: t}, params: {get_param: p}}\n",
                 Params(t=text, p=keys))

    assert raised.value.location is not None and raised.value.location.line == 2
    assert 'Evaluation of "str_replace" took too long' in str(raised.value)


def test_str_replace_within_the_budget_is_unchanged(small: None) -> None:
    assert evaluate("value: {str_replace: {template: 'ab ab', params: {a: b, b: c}}}") \
        == "bc bc"


def test_an_empty_placeholder_is_refused() -> None:
    with pytest.raises(StackValidationFailed, match="placeholders must not be empty"):
        str_replace("ab", {"": "x", "a": "b"})


# --- list_join and str_split ---------------------------------------------------------------


def test_list_join_counts_the_delimiter_between_every_item_before_joining(
        small: None) -> None:
    with pytest.raises(ValueTooLarge):
        evaluate("value: {list_join: [{get_param: d}, {get_param: l}]}",
                 Params(d="-" * 100, l=["a"] * 20))
    with pytest.raises(TooManyItems):
        evaluate("value: {list_join: [',', {get_param: l}]}", Params(l=["a"] * 51))


def test_str_split_into_more_items_than_the_budget_is_refused_but_an_index_is_not(
        small: None) -> None:
    with pytest.raises(TooManyItems):
        evaluate("value: {str_split: [',', {get_param: s}]}", Params(s="," * 60))
    assert evaluate("value: {str_split: [',', {get_param: s}, 3]}", Params(s="," * 60)) == ""
