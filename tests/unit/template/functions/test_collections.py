"""engine.template.functions.collections within the evaluation budget: ``repeat`` counts
its combinations before making any and meters its copies, ``list_concat``,
``list_concat_unique``, ``filter``, ``map_merge`` and ``map_replace`` count what they
make, and the comparing ones are linear."""

from __future__ import annotations

import pytest

from engine.errors import TooManyItems, ValueTooLarge
from tests.unit.template.functions.conftest import Params, evaluate


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


def test_map_merge_and_map_replace_stay_within_the_budget(small: None) -> None:
    keys = {f"k{i}": "v" for i in range(30)}
    with pytest.raises(TooManyItems):
        evaluate("value: {map_merge: [{get_param: a}, {get_param: b}]}",
                 Params(a=keys, b={f"o{i}": 1 for i in range(30)}))
    # One long replacement value for every key's value is many copies once stored.
    with pytest.raises(ValueTooLarge):
        evaluate("value: {map_replace: [{get_param: m}, {values: {v: {get_param: long}}}]}",
                 Params(m=keys, long="w" * 100))
