"""Dependency graphs: deterministic topological order and cycles reported as a path."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def find_cycle(requires: Mapping[str, Iterable[str]]) -> list[str] | None:
    """A cycle as ``[a, b, ..., a]`` (a requires b ...), or None. Deterministic."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(requires.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(requires):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def topological_order(requires: Mapping[str, Iterable[str]]) -> list[str]:
    """Every node after all that it requires; ties broken by name. Assumes no cycle."""
    remaining = {node: set(deps) for node, deps in requires.items()}
    order: list[str] = []
    ready = sorted(node for node, deps in remaining.items() if not deps)
    users = invert(requires)
    while ready:
        node = ready.pop(0)
        order.append(node)
        for user in sorted(users.get(node, ())):
            remaining[user].discard(node)
            if not remaining[user]:
                ready.append(user)
        ready.sort()
    return order


def invert(requires: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    """``requires`` turned around: for each node, the nodes that require it."""
    users: dict[str, set[str]] = {node: set() for node in requires}
    for node, deps in requires.items():
        for dep in deps:
            users.setdefault(dep, set()).add(node)
    return {node: frozenset(found) for node, found in users.items()}
