"""The batches of a group's ``batch_create`` and ``rolling_update`` policies, as Heat
computes them: pure functions of sizes and member definitions.

A rollout is a list of batches ``(capacity, new)``: the group's size while the batch runs
and how many members get the new definition in it (new members first, then existing
ones). ``min_in_service`` can make a batch's capacity larger than the target, so members
are added before old ones go; the last batch always has the target size with every
member on the new definition.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any


def batches(target: int, current: int, batch_size: int, min_in_service: int
            ) -> list[tuple[int, int]]:
    """Every batch that takes a group of ``current`` members (none yet up to date) to
    ``target`` members on the new definition."""
    plan: list[tuple[int, int]] = []
    updated = 0
    while not (updated >= current == target):
        capacity, new = _next_batch(target, current, updated, batch_size, min_in_service)
        plan.append((capacity, new))
        # Members created above both sizes are removed again later: they do not count.
        updated += new - max(capacity - max(current, target), 0)
        current = capacity
    return plan


def _next_batch(target: int, current: int, updated: int, batch_size: int,
                min_in_service: int) -> tuple[int, int]:
    floor = min(min_in_service, target, current)
    new = min(batch_size, max(target - updated, 0))
    return new + max(min(current, target - new), floor), new


def batch_members(
    names: Sequence[str],
    target: int,
    existing: Mapping[str, Mapping[str, Any]],
    capacity: int,
    new: int,
    definition: Callable[[str], Mapping[str, Any]],
) -> dict[str, Mapping[str, Any]]:
    """The members one batch leaves the group with: ``capacity`` of them, at most
    ``new`` on the new definition (``definition(name)``) and the rest as they are.

    ``names`` are the first ``capacity`` member names in index order; ``existing`` the
    members now (name -> definition). Members outside ``names``
    go first, then the highest indices are replaced first; names not yet used are added
    for the members the group is short of."""

    def priority(name: str) -> int:
        if name not in names:
            return 0
        index = names.index(name)
        return target - index if index < target else capacity

    ordered = sorted(existing, key=priority)[-capacity:] if capacity else []
    fresh: Iterator[str] = (n for n in names if n not in existing)
    to_replace = new - (capacity - len(ordered))
    members: dict[str, Mapping[str, Any]] = {}
    for name in ordered:
        wanted = definition(name)
        if existing[name] != wanted and to_replace > 0:
            to_replace -= 1
            members[name] = wanted
        else:
            members[name] = existing[name]
    while len(members) < capacity:
        name = next(fresh)
        members[name] = definition(name)
    return members
