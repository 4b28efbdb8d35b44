"""engine.ir.graph: deterministic order, cycles as a path, inversion."""

from __future__ import annotations

import itertools

from engine.ir.graph import find_cycle, invert, topological_order

DIAMOND = {"app": {"db", "net"}, "db": {"net"}, "net": set(), "lb": {"app"}}


def test_no_cycle() -> None:
    assert find_cycle(DIAMOND) is None
    assert find_cycle({}) is None


def test_two_node_cycle_is_a_path_back_to_its_start() -> None:
    assert find_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]


def test_self_dependency() -> None:
    assert find_cycle({"a": {"a"}, "b": set()}) == ["a", "a"]


def test_cycle_found_behind_a_tail() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"d"}, "d": {"b"}}

    assert find_cycle(graph) == ["b", "c", "d", "b"]


def test_cycle_report_does_not_depend_on_insertion_order() -> None:
    edges = [("z", {"y"}), ("y", {"x"}), ("x", {"z"}), ("w", set())]

    found = {tuple(find_cycle(dict(order)) or ()) for order in itertools.permutations(edges)}

    assert found == {("x", "z", "y", "x")}


def test_requirements_outside_the_graph_are_no_cycle() -> None:
    assert find_cycle({"a": {"ghost"}}) is None


def test_topological_order_puts_requirements_first() -> None:
    order = topological_order(DIAMOND)

    assert order == ["net", "db", "app", "lb"]


def test_ties_are_broken_by_name() -> None:
    graph = {"c": set(), "a": set(), "b": {"c"}, "d": {"a"}}

    assert topological_order(graph) == ["a", "c", "b", "d"]


def test_topological_order_does_not_depend_on_insertion_order() -> None:
    orders = {tuple(topological_order(dict(items)))
              for items in itertools.permutations(DIAMOND.items())}

    assert orders == {("net", "db", "app", "lb")}


def test_invert() -> None:
    assert invert(DIAMOND) == {
        "app": frozenset({"lb"}),
        "db": frozenset({"app"}),
        "net": frozenset({"app", "db"}),
        "lb": frozenset(),
    }


def test_invert_includes_requirements_that_are_not_keys() -> None:
    assert invert({"a": {"ghost"}}) == {"a": frozenset(), "ghost": frozenset({"a"})}
