"""Plans: which resource steps an operation runs, and which steps each one waits for.

A plan is the diff between the IR and the stored state. Create runs the dependency graph
as written; delete runs it inverted (a resource is deleted only after everything that
requires it is gone).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from engine.ir.graph import invert
from engine.ir.model import ResolvedStack

CREATE, DELETE = "CREATE", "DELETE"


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


def plan_create(stack: ResolvedStack) -> Plan:
    steps = tuple(
        PlannedStep(name, CREATE, node.requires) for name, node in sorted(stack.resources.items())
    )
    return Plan(CREATE, steps)


def plan_delete(stored: Mapping[str, ExistingResource]) -> Plan:
    edges = {name: frozenset(r for r in res.requires if r in stored)
             for name, res in stored.items()}
    users = invert(edges)
    steps = tuple(
        PlannedStep(name, DELETE, users.get(name, frozenset())) for name in sorted(stored)
    )
    return Plan(DELETE, steps)
