"""From a stack view to the algorithm's input: each placed resource's cost and hints.

Hints are read from a resource's ``metadata``, under the key ``placement``::

    metadata:
      placement:
        same_rack_as: [vol1]     # a name or a list of names of placed resources
        spread_group: web        # spread groups are per stack
        spread_racks: 2          # the group must use at least this many racks

Anything wrong with a placed resource's hints or cost raises :class:`StackError` with a
message for the tenant; hints on a resource whose type is not placed are ignored, and
reported so the pre-op can warn.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from engine.lifecycle.view import ResourceView, StackView, Unresolved
from plugins.lifecycle.placement.algorithm import Demand
from plugins.lifecycle.placement.inventory import CostError, TypeCost

METADATA_KEY = "placement"
HINT_KEYS = ("same_rack_as", "spread_group", "spread_racks")


class StackError(ValueError):
    """The stack's placed resources cannot be read; the message names the resource."""


@dataclasses.dataclass(frozen=True)
class StackDemands:
    demands: tuple[Demand, ...]  # sorted by name
    ignored_hints: tuple[str, ...]  # unplaced resources that carry hints, sorted


def placed_names(stack: StackView, types: Mapping[str, TypeCost]) -> frozenset[str]:
    """The names of the stack's resources whose type the inventory places."""
    return frozenset(name for name, resource in stack.resources.items()
                     if resource.type in types)


def stack_demands(stack: StackView, types: Mapping[str, TypeCost]) -> StackDemands:
    """Every placed resource of ``stack`` as a :class:`Demand`; raises :class:`StackError`."""
    demands = []
    ignored = []
    for name in sorted(stack.resources):
        resource = stack.resources[name]
        cost = types.get(resource.type)
        if cost is None:
            if resource.metadata.get(METADATA_KEY) is not None:
                ignored.append(name)
            continue
        try:
            amounts = cost.amounts(resource)
        except CostError as exc:
            raise StackError(f"cannot work out what '{name}' ({resource.type}) needs: "
                             f"{exc}") from exc
        hints = _hints(resource)
        for other in hints.get("same_rack_as", ()):
            if other == name:
                continue
            if other not in stack.resources:
                raise StackError(f"'{name}' names '{other}' in same_rack_as, which is not a "
                                 "resource of this stack")
            if stack.resources[other].type not in types:
                raise StackError(f"'{name}' names '{other}' in same_rack_as, but "
                                 f"{stack.resources[other].type} is not a placed type")
        demands.append(Demand(
            name=name, type=resource.type, amounts=amounts,
            same_rack_as=tuple(other for other in hints.get("same_rack_as", ())
                               if other != name),
            spread_group=hints.get("spread_group"), spread_racks=hints.get("spread_racks")))
    return StackDemands(demands=tuple(demands), ignored_hints=tuple(ignored))


def _hints(resource: ResourceView) -> dict[str, Any]:
    name = resource.name
    raw = resource.metadata.get(METADATA_KEY)
    if raw is None:
        return {}
    if isinstance(raw, Unresolved) or not isinstance(raw, Mapping):
        raise StackError(f"metadata '{METADATA_KEY}' of '{name}' must be a mapping of hints "
                         f"({', '.join(HINT_KEYS)})")
    for key in raw:
        if key not in HINT_KEYS:
            raise StackError(f"unknown placement hint '{key}' on '{name}' (known: "
                             f"{', '.join(HINT_KEYS)})")
    hints: dict[str, Any] = {}
    if "same_rack_as" in raw:
        value = raw["same_rack_as"]
        names = (value,) if isinstance(value, str) else value
        if not isinstance(names, tuple | list) or not names or not all(
                isinstance(other, str) and other for other in names):
            raise StackError(f"placement hint same_rack_as of '{name}' must be a resource "
                             "name or a list of them")
        hints["same_rack_as"] = tuple(dict.fromkeys(names))
    if "spread_group" in raw:
        group = raw["spread_group"]
        if not isinstance(group, str) or not group:
            raise StackError(f"placement hint spread_group of '{name}' must be a non-empty "
                             "string")
        hints["spread_group"] = group
    if "spread_racks" in raw:
        count = raw["spread_racks"]
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise StackError(f"placement hint spread_racks of '{name}' must be a whole "
                             "number, 1 or more")
        if "spread_group" not in hints:
            raise StackError(f"placement hint spread_racks of '{name}' needs a "
                             "spread_group")
        hints["spread_racks"] = count
    return hints
