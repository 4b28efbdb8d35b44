"""Dependency graphs: deterministic topological order and cycles reported as a path.

Both are the standard library's ``graphlib``, which recurses nowhere: a template may
chain thousands of resources (up to ``max_resources_per_stack``), far deeper than
Python's call stack.
"""

from __future__ import annotations

import contextlib
import graphlib
import heapq
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def find_cycle(requires: Mapping[str, Iterable[str]]) -> list[str] | None:
    """A cycle as ``[a, b, ..., a]`` (a requires b ...), or None. Deterministic: the
    depth-first walk starts from the nodes in name order and follows requirements in
    name order, so the same graph always reports the same cycle."""
    # graphlib's walk starts from the nodes in the order they were added and follows
    # each node's successors in the order they were added; given each node's
    # requirements as its successors, in name order, it walks the way described above.
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
    for node in sorted(requires):
        sorter.add(node)
    for node in sorted(requires):
        for dep in sorted(set(requires[node])):
            sorter.add(dep, node)
    try:
        sorter.prepare()
    except graphlib.CycleError as exc:
        cycle: list[str] = exc.args[1]
        return cycle
    return None


def topological_order(requires: Mapping[str, Iterable[str]],
                      key: Callable[[str], Any] | None = None) -> list[str]:
    """Every node after all that it requires; among the nodes free to go next, the one
    with the lowest ``key`` (the node itself by default), so ties are broken by name.
    Assumes no cycle: a node on one, or requiring one that is not a node, is left out."""
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
    for node, deps in requires.items():
        sorter.add(node, *deps)
    # On a cycle graphlib still hands out every node the cycle does not hold back.
    with contextlib.suppress(graphlib.CycleError):
        sorter.prepare()
    rank = key or (lambda node: node)
    # A requirement that is not a node is handed out as free but never marked done:
    # it stays out of the order, and so does whatever requires it.
    ready: list[tuple[Any, str]] = []

    def take_ready() -> None:
        for node in sorter.get_ready():
            if node in requires:
                heapq.heappush(ready, (rank(node), node))

    take_ready()
    order: list[str] = []
    while ready:
        node = heapq.heappop(ready)[1]
        order.append(node)
        sorter.done(node)
        take_ready()
    return order


def invert(requires: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    """``requires`` turned around: for each node, the nodes that require it."""
    users: dict[str, set[str]] = {node: set() for node in requires}
    for node, deps in requires.items():
        for dep in deps:
            users.setdefault(dep, set()).add(node)
    return {node: frozenset(found) for node, found in users.items()}
