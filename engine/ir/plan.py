"""Plans: which resource steps an operation runs, and which steps each one waits for.

A plan is the diff between the IR and the stored state. Create, adopt and resume run the
dependency graph as written; delete and suspend run it inverted (a resource goes only
after everything that requires it); check has no order at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from engine.ir.graph import invert
from engine.ir.model import ResolvedStack

CREATE, DELETE, SUSPEND, RESUME, CHECK, ADOPT = (
    "CREATE", "DELETE", "SUSPEND", "RESUME", "CHECK", "ADOPT")


@dataclasses.dataclass(frozen=True)
class PlannedStep:
    resource: str
    action: str
    requires: frozenset[str]  # names of resources whose steps must finish first


@dataclasses.dataclass(frozen=True)
class Plan:
    action: str
    steps: tuple[PlannedStep, ...]


@dataclasses.dataclass(frozen=True)
class ExistingResource:
    """What the planner needs to know about a resource as it is stored."""

    name: str
    requires: frozenset[str]


def plan_create(stack: ResolvedStack, action: str = CREATE) -> Plan:
    """Every resource of the IR in dependency order (CREATE, or ADOPT of abandon data)."""
    steps = tuple(
        PlannedStep(name, action, node.requires) for name, node in sorted(stack.resources.items())
    )
    return Plan(action, steps)


def plan_delete(stored: Mapping[str, ExistingResource]) -> Plan:
    return plan_stored(stored, DELETE)


def plan_stored(stored: Mapping[str, ExistingResource], action: str) -> Plan:
    """``action`` on every stored resource, ordered as the action needs."""
    edges = {name: frozenset(r for r in res.requires if r in stored)
             for name, res in stored.items()}
    if action in (DELETE, SUSPEND):
        waits = invert(edges)
    elif action == RESUME:
        waits = edges
    elif action == CHECK:
        waits = {}
    else:
        raise ValueError(f"no stored-resource plan for {action}")
    steps = tuple(PlannedStep(name, action, waits.get(name, frozenset()))
                  for name in sorted(stored))
    return Plan(action, steps)
