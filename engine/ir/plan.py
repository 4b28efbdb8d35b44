"""Plans: which resource steps an operation runs, and which steps each one waits for.

A plan is the diff between the IR and the stored state. Create, adopt, resume and
snapshot run the dependency graph as written (Heat's snapshot runs forward, as resume
does); delete and suspend run it inverted (a resource goes only after everything that
requires it); check has no order at all.

An update (and the rollback to a previous template, and the restore of a snapshot, which
are updates too) gives each
resource of the new template one step: CREATE when it is new, UPDATE when it exists (the
step decides at run time, with live property values, between nothing, in-place and
replacement). Each existing resource also gets a CLEANUP step, run once every resource
that uses it has moved on, which deletes what a replacement left behind (nothing if it
was not replaced). Resources the new template drops are deleted once their old users
have been updated or deleted themselves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from engine.ir.graph import invert
from engine.ir.model import ResolvedStack
from engine.vocabulary import Action

StepKey = tuple[str, str]  # (resource name, step action)


@dataclasses.dataclass(frozen=True)
class PlannedStep:
    resource: str
    action: str
    requires: frozenset[StepKey]  # steps that must finish first

    @property
    def key(self) -> StepKey:
        return (self.resource, self.action)


@dataclasses.dataclass(frozen=True)
class Plan:
    action: str
    steps: tuple[PlannedStep, ...]


@dataclasses.dataclass(frozen=True)
class ExistingResource:
    """What the planner needs to know about a resource as it is stored."""

    name: str
    requires: frozenset[str]
    replaced: bool = False  # holds a physical resource an earlier update replaced


def plan_create(stack: ResolvedStack, action: str = Action.CREATE) -> Plan:
    """Every resource of the IR in dependency order (CREATE, or ADOPT of abandon data)."""
    steps = tuple(
        PlannedStep(name, action, frozenset((dep, action) for dep in node.requires))
        for name, node in sorted(stack.resources.items()))
    return Plan(action, steps)


def plan_delete(stored: Mapping[str, ExistingResource]) -> Plan:
    return plan_stored(stored, Action.DELETE)


def plan_stored(stored: Mapping[str, ExistingResource], action: str,
                step_action: str | None = None) -> Plan:
    """``action`` on every stored resource, ordered as the action needs. A rollback of a
    create is a delete under another name: ``step_action`` says what each step does."""
    each = step_action or action
    edges = {name: frozenset(r for r in res.requires if r in stored)
             for name, res in stored.items()}
    if each in (Action.DELETE, Action.SUSPEND):
        waits = invert(edges)
    elif each in (Action.RESUME, Action.SNAPSHOT):
        waits = edges
    elif each == Action.CHECK:
        waits = {}
    else:
        raise ValueError(f"no stored-resource plan for {each}")
    steps = [PlannedStep(name, each, frozenset((d, each) for d in waits.get(name, ())))
             for name in sorted(stored)]
    if each == Action.DELETE:
        # What an earlier, failed update replaced goes with the resource.
        steps += [PlannedStep(name, Action.CLEANUP,
                              frozenset((d, each) for d in waits.get(name, ())))
                  for name in sorted(stored) if stored[name].replaced]
    return Plan(action, tuple(steps))


def plan_update(target: ResolvedStack, stored: Mapping[str, ExistingResource],
                action: str = Action.UPDATE) -> Plan:
    """Move the stored resources to ``target`` (see the module documentation)."""
    new = target.resources

    def primary(name: str) -> StepKey:
        return (name, Action.UPDATE if name in stored else Action.CREATE)

    old_users = invert({name: frozenset(r for r in res.requires if r in stored)
                        for name, res in stored.items()})
    new_users = invert({name: frozenset(node.requires) for name, node in new.items()})

    def moved_off(name: str) -> frozenset[StepKey]:
        """Steps after which nothing uses the old ``name`` any more."""
        keys = {primary(user) for user in new_users.get(name, ())}
        keys |= {(user, Action.DELETE) if user not in new else primary(user)
                 for user in old_users.get(name, ())}
        return frozenset(keys)

    steps = [PlannedStep(name, primary(name)[1],
                         frozenset(primary(dep) for dep in node.requires))
             for name, node in sorted(new.items())]
    steps += [PlannedStep(name, Action.CLEANUP, moved_off(name) | {primary(name)})
              for name in sorted(stored) if name in new]
    for name in sorted(set(stored) - set(new)):
        steps.append(PlannedStep(name, Action.DELETE, moved_off(name)))
        if stored[name].replaced:
            steps.append(PlannedStep(name, Action.CLEANUP, moved_off(name)))
    return Plan(action, tuple(steps))
