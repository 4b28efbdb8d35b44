"""Dependency graphs: deterministic topological order and cycles reported as a path.

Nothing here recurses: a template may chain thousands of resources (up to
``max_resources_per_stack``), far deeper than Python's call stack, so both walks keep
their own stack or heap.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping

_ON_PATH, _DONE = 1, 2


def find_cycle(requires: Mapping[str, Iterable[str]]) -> list[str] | None:
    """A cycle as ``[a, b, ..., a]`` (a requires b ...), or None. Deterministic: the
    depth-first walk starts from the nodes in name order and follows requirements in
    name order, so the same graph always reports the same cycle."""
    state: dict[str, int] = {}
    for start in sorted(requires):
        if start in state:
            continue
        path = [start]
        state[start] = _ON_PATH
        # One iterator per node on the path: where its walk through its requirements is.
        pending: list[Iterator[str]] = [iter(sorted(requires.get(start, ())))]
        while pending:
            nxt = next(pending[-1], None)
            if nxt is None:
                state[path.pop()] = _DONE
                pending.pop()
            elif state.get(nxt) == _ON_PATH:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = _ON_PATH
                path.append(nxt)
                pending.append(iter(sorted(requires.get(nxt, ()))))
    return None


def topological_order(requires: Mapping[str, Iterable[str]]) -> list[str]:
    """Every node after all that it requires; ties broken by name. Assumes no cycle:
    a node on one, or requiring one that is not a node, is left out."""
    remaining = {node: set(deps) for node, deps in requires.items()}
    users = invert(requires)
    ready = [node for node, deps in remaining.items() if not deps]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        node = heapq.heappop(ready)
        order.append(node)
        for user in users.get(node, ()):
            remaining[user].discard(node)
            if not remaining[user]:
                heapq.heappush(ready, user)
    return order


def invert(requires: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    """``requires`` turned around: for each node, the nodes that require it."""
    users: dict[str, set[str]] = {node: set() for node in requires}
    for node, deps in requires.items():
        for dep in deps:
            users.setdefault(dep, set()).add(node)
    return {node: frozenset(found) for node, found in users.items()}
