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


def chain(length: int) -> dict[str, set[str]]:
    """``r00000`` requires ``r00001`` ... : names sort in dependency order, so a walk from
    the first name goes the whole way down before it finishes anything."""
    return {f"r{i:05d}": {f"r{i + 1:05d}"} if i + 1 < length else set()
            for i in range(length)}


def test_a_chain_deeper_than_the_call_stack_has_no_cycle() -> None:
    graph = chain(20_000)

    assert find_cycle(graph) is None
    assert topological_order(graph) == sorted(graph, reverse=True)


def test_a_cycle_at_the_end_of_a_deep_chain_is_found() -> None:
    graph = chain(20_000)
    graph["r19999"] = {"r19998"}

    assert find_cycle(graph) == ["r19998", "r19999", "r19998"]


def test_topological_order_leaves_out_what_waits_on_a_missing_node() -> None:
    assert topological_order({"a": {"ghost"}, "b": set()}) == ["b"]
