"""Where a stack's resources go: a deterministic, pure function of its inputs.

:func:`place` takes the inventory's racks, what other reservations already use, and the
stack's placed resources with their hints, and returns one :class:`Placement` per resource
or raises :class:`Unplaceable` with a reason a tenant can act on. No I/O, no clock, no
randomness: the same inputs always give the same answer, so a repeated pre-op decides as
the first one did and tests can state exact placements.

The stack is placed as a whole, not resource by resource:

1. **Affinity sets.** ``same_rack_as`` links are joined with union-find; each set must end
   up on one rack.
2. **Rack choice, set by set.** Sets pinned by kept placements go first, then the others,
   largest first (first-fit decreasing, size being the sum over units of the share of the
   inventory's total capacity). A set tries the racks in inventory order, except that racks
   not yet used by a spread group the set belongs to, while that group still needs more
   racks, are tried first. A rack is refused when the set does not fit on its hosts, or when
   taking it would leave a spread group unable to reach its rack count with the sets left.
   A group's racks include those its members placed by other stacks of the tree hold
   (:class:`GroupMember`), and its rack count is ``spread_racks``, or as many racks as its
   members can reach when they are fewer (more may come with other stacks of the tree).
3. **Backtracking.** A set that fits no rack sends the search back to try the previous set's
   next rack, up to :data:`SEARCH_LIMIT` further attempts. The reason reported on failure
   is the first dead end met, which is where a plain greedy pass would have stopped.
4. **Hosts within a rack: best fit.** A set's members, largest first, each go to the host
   that it leaves with the least free capacity (summed as shares of each host's own
   capacity), ties to the earlier host. Big holes stay open for big resources. Hosts are not
   backtracked over.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction

#: Rack attempts (one set tried on one rack) after the first dead end before the search
#: gives up. The first, greedy, pass is not counted: it is at most sets x racks.
SEARCH_LIMIT = 10_000
#: Racks listed in a failure reason before "and N more", to keep reasons short.
MAX_RACKS_IN_REASON = 4

Amounts = Mapping[str, int]
HostKey = tuple[str, str]  # (rack, host)


@dataclasses.dataclass(frozen=True)
class Host:
    name: str
    capacity: Amounts  # unit -> capacity; a unit not listed is 0


@dataclasses.dataclass(frozen=True)
class Rack:
    name: str
    hosts: tuple[Host, ...]


@dataclasses.dataclass(frozen=True)
class Demand:
    """One placed resource of the stack and its hints."""

    name: str
    type: str
    amounts: Amounts
    same_rack_as: tuple[str, ...] = ()
    spread_group: str | None = None
    spread_racks: int | None = None


@dataclasses.dataclass(frozen=True)
class GroupMember:
    """A member of a spread group placed by another stack of the same tree: it stays on
    its rack (its capacity is in ``used``) and counts towards the group's racks."""

    group: str
    rack: str
    spread_racks: int | None = None


@dataclasses.dataclass(frozen=True)
class Placement:
    resource: str
    type: str
    rack: str
    host: str
    amounts: Amounts


class Unplaceable(Exception):  # noqa: N818 -- a verdict, like Denied
    """The stack cannot be placed; the message says which resource and why."""


def format_amounts(amounts: Amounts, units: Sequence[str]) -> str:
    """``"4 slots, 80 disk_gb"``, in the inventory's unit order; ``"nothing"`` if empty."""
    parts = [f"{amounts[unit]} {unit}" for unit in units if amounts.get(unit)]
    return ", ".join(parts) if parts else "nothing"


def place(racks: Sequence[Rack], units: Sequence[str], used: Mapping[HostKey, Amounts],
          demands: Sequence[Demand], fixed: Mapping[str, HostKey] | None = None, *,
          limit: int = SEARCH_LIMIT, elsewhere: Sequence[GroupMember] = ()
          ) -> tuple[Placement, ...]:
    """Place every demand, or raise :class:`Unplaceable`.

    ``used`` is what existing reservations take on each host (other stacks, and on update
    this stack's current ones). ``fixed`` pins demands to the host they already hold; such
    a demand is already counted in ``used`` and takes nothing more. ``elsewhere`` are the
    spread groups' members that other stacks of the tree hold. ``limit`` bounds the
    search (rack attempts). The result is sorted by resource name.
    """
    return _Search(racks, units, used, demands, dict(fixed or {}), limit, elsewhere).run()


def spread_short(placements: Sequence[Placement], demands: Sequence[Demand],
                 elsewhere: Sequence[GroupMember] = ()) -> dict[str, tuple[int, int]]:
    """The spread groups that ``placements`` leave on fewer racks than they ask for:
    group -> (racks used, racks asked), counting the members held ``elsewhere``. Such a
    group had fewer members (or same_rack_as sets) than racks asked."""
    asked: dict[str, int] = {}
    racks: dict[str, set[str]] = defaultdict(set)
    for member in elsewhere:
        if member.spread_racks is not None:
            asked[member.group] = member.spread_racks
        racks[member.group].add(member.rack)
    by_name = {placement.resource: placement for placement in placements}
    groups = set()
    for demand in demands:
        if demand.spread_group is None:
            continue
        groups.add(demand.spread_group)
        if demand.spread_racks is not None:
            asked[demand.spread_group] = demand.spread_racks
        racks[demand.spread_group].add(by_name[demand.name].rack)
    return {group: (len(racks[group]), asked[group]) for group in sorted(groups)
            if len(racks[group]) < asked[group]}


class _Search:
    def __init__(self, racks: Sequence[Rack], units: Sequence[str],
                 used: Mapping[HostKey, Amounts], demands: Sequence[Demand],
                 fixed: dict[str, HostKey], limit: int,
                 elsewhere: Sequence[GroupMember] = ()) -> None:
        self.racks = tuple(racks)
        self.limit = limit
        self.elsewhere = tuple(elsewhere)
        self.units = tuple(units)
        self.demands = {demand.name: demand for demand in demands}
        if len(self.demands) != len(demands):
            raise ValueError("demands must have distinct names")
        self.fixed = fixed
        self.free: dict[HostKey, dict[str, int]] = {
            (rack.name, host.name): {
                unit: host.capacity.get(unit, 0) - used.get((rack.name, host.name), {}).get(
                    unit, 0) for unit in self.units}
            for rack in self.racks for host in rack.hosts}
        totals = {unit: sum(host.capacity.get(unit, 0) for rack in self.racks
                            for host in rack.hosts) for unit in self.units}
        self.size = {name: sum((Fraction(demand.amounts.get(unit, 0), totals[unit])
                                for unit in self.units if totals[unit]), Fraction(0))
                     for name, demand in self.demands.items()}
        self.attempts = 0
        self.first_failure: str | None = None
        self.assigned: dict[str, HostKey] = {}
        # Per group, how many of its sets (and members elsewhere) each rack holds. The
        # members elsewhere are counted from the start and never taken back.
        self.group_racks: dict[str, dict[str, int]] = defaultdict(dict)
        for member in self.elsewhere:
            counts = self.group_racks[member.group]
            counts[member.rack] = counts.get(member.rack, 0) + 1

    # --- set-up ------------------------------------------------------------------------

    def run(self) -> tuple[Placement, ...]:
        for name, key in self.fixed.items():
            if name not in self.demands or key not in self.free:
                raise ValueError(f"fixed placement {name!r} on {key!r}: no such demand or host")
        self.sets = self._affinity_sets()
        self.spread = self._spread_groups()
        self._check_fixed()
        self.order = self._order()
        # How many sets of each spread group are still unplaced after position i.
        self.remaining: list[dict[str, int]] = [{} for _ in self.order]
        later: dict[str, int] = defaultdict(int)
        for index in reversed(range(len(self.order))):
            self.remaining[index] = dict(later)
            for group in self._groups_of(self.order[index]):
                later[group] += 1
        if not self._search():
            raise Unplaceable(self.first_failure or "no placement found within "
                              f"{self.limit} attempts")
        return tuple(
            Placement(resource=name, type=self.demands[name].type, rack=key[0], host=key[1],
                      amounts=dict(self.demands[name].amounts))
            for name, key in sorted(self.assigned.items()))

    def _affinity_sets(self) -> list[tuple[str, ...]]:
        parent = {name: name for name in self.demands}

        def root(name: str) -> str:
            while parent[name] != name:
                parent[name] = parent[parent[name]]
                name = parent[name]
            return name

        for demand in self.demands.values():
            for other in demand.same_rack_as:
                if other not in self.demands:
                    raise Unplaceable(f"'{demand.name}' asks to share a rack with '{other}', "
                                      "which is not a placed resource of this stack")
                a, b = root(demand.name), root(other)
                if a != b:
                    parent[max(a, b)] = min(a, b)
        members: dict[str, list[str]] = defaultdict(list)
        for name in sorted(self.demands):
            members[root(name)].append(name)
        return [tuple(names) for names in members.values()]

    def _spread_groups(self) -> dict[str, int]:
        """The rack count each spread group of the stack must reach: its ``spread_racks``,
        or the racks its members can reach at most (those it holds elsewhere in the tree,
        and one per set of its members here) when that is fewer."""
        wanted: dict[str, int] = {}
        members: dict[str, list[str]] = defaultdict(list)
        for member in self.elsewhere:
            if member.spread_racks is not None:
                wanted.setdefault(member.group, member.spread_racks)
        for name in sorted(self.demands):
            demand = self.demands[name]
            if demand.spread_group is None:
                continue
            group = demand.spread_group
            members[group].append(name)
            if demand.spread_racks is None:
                continue
            if group in wanted and wanted[group] != demand.spread_racks:
                raise Unplaceable(f"spread group '{group}' is given different spread_racks "
                                  f"({wanted[group]} and {demand.spread_racks})")
            wanted[group] = demand.spread_racks
        counts: dict[str, int] = {}
        for group in sorted(members):
            names = members[group]
            if group not in wanted:
                raise Unplaceable(f"spread group '{group}' needs spread_racks on at least "
                                  "one of its members")
            count = wanted[group]
            if count > len(self.racks):
                raise Unplaceable(f"spread group '{group}' asks for {count} racks; the "
                                  f"inventory has {len(self.racks)}")
            sets = sum(1 for group_set in self.sets if set(group_set) & set(names))
            counts[group] = min(count, len(self.group_racks[group]) + sets)
        return counts
    def _check_fixed(self) -> None:
        for members in self.sets:
            pinned = sorted({self.fixed[name][0] for name in members if name in self.fixed})
            if len(pinned) > 1:
                holders = [f"'{name}' is on {self.fixed[name][0]}" for name in members
                           if name in self.fixed]
                raise Unplaceable("same_rack_as joins resources that already sit on "
                                  f"different racks ({', '.join(holders)})")

    def _order(self) -> list[tuple[str, ...]]:
        pinned = [members for members in self.sets
                  if any(name in self.fixed for name in members)]
        free = [members for members in self.sets
                if not any(name in self.fixed for name in members)]
        free.sort(key=lambda members: (-sum(self.size[name] for name in members), members[0]))
        return pinned + free

    def _groups_of(self, members: tuple[str, ...]) -> set[str]:
        return {group for name in members
                if (group := self.demands[name].spread_group) is not None}

    # --- search ------------------------------------------------------------------------

    def _search(self) -> bool:
        """Depth-first over the sets in order, each trying its candidate racks in turn;
        iterative, as a stack may hold more sets than Python allows recursive calls."""
        frames: list[_Frame] = []
        backtracking = False
        while True:
            if not backtracking:
                if len(frames) == len(self.order):
                    return True
                members = self.order[len(frames)]
                groups = self._groups_of(members)
                frames.append(_Frame(members, groups,
                                     iter(self._candidates(members, groups))))
            index = len(frames) - 1
            frame = frames[index]
            if frame.rack is not None:  # back from a dead end further on: undo, try on
                self._apply(frame.members, frame.chosen, frame.rack, frame.groups, -1)
                frame.rack = None
            for rack in frame.candidates:
                if self.first_failure is not None:  # backtracking: bounded
                    if self.attempts >= self.limit:
                        return False
                    self.attempts += 1
                short = self._spread_short(rack, frame.groups, index)
                if short is not None:
                    frame.reasons[rack.name] = _Refusal(spread_group=short)
                    continue
                packed = self._pack(frame.members, rack)
                if isinstance(packed, _Refusal):
                    frame.reasons[rack.name] = packed
                    continue
                self._apply(frame.members, packed, rack, frame.groups, +1)
                frame.rack, frame.chosen = rack, packed
                break
            backtracking = frame.rack is None
            if backtracking:  # no rack left for this set: a dead end
                if self.first_failure is None and frame.reasons:
                    self.first_failure = self._explain(frame.members, frame.reasons)
                frames.pop()
                if not frames:
                    return False

    def _candidates(self, members: tuple[str, ...], groups: set[str]) -> list[Rack]:
        pinned = {self.fixed[name][0] for name in members if name in self.fixed}
        if pinned:
            return [rack for rack in self.racks if rack.name in pinned]

        def opens(rack: Rack) -> int:
            return sum(1 for group in groups
                       if len(self.group_racks[group]) < self.spread[group]
                       and rack.name not in self.group_racks[group])

        ranked = sorted(enumerate(self.racks), key=lambda item: (-opens(item[1]), item[0]))
        return [rack for _, rack in ranked]

    def _spread_short(self, rack: Rack, groups: set[str], index: int) -> str | None:
        """The first spread group that could no longer reach its rack count if this set
        took ``rack``, or None."""
        for group in sorted(groups):
            reached = len(self.group_racks[group]) + (rack.name not in self.group_racks[group])
            if reached + self.remaining[index].get(group, 0) < self.spread[group]:
                return group
        return None

    def _pack(self, members: tuple[str, ...], rack: Rack) -> dict[str, str] | _Refusal:
        """Best-fit the set's unpinned members onto the rack's hosts: name -> host."""
        free = {host.name: dict(self.free[(rack.name, host.name)]) for host in rack.hosts}
        chosen: dict[str, str] = {}
        movable = sorted((name for name in members if name not in self.fixed),
                         key=lambda name: (-self.size[name], name))
        for name in movable:
            amounts = self.demands[name].amounts
            best: tuple[Fraction, int, str] | None = None
            for position, host in enumerate(rack.hosts):
                left = {unit: free[host.name][unit] - amounts.get(unit, 0)
                        for unit in self.units}
                if any(left[unit] < 0 for unit in self.units if amounts.get(unit, 0)):
                    continue
                score = sum((Fraction(max(left[unit], 0), host.capacity[unit])
                             for unit in self.units if host.capacity.get(unit)), Fraction(0))
                if best is None or (score, position) < best[:2]:
                    best = (score, position, host.name)
            if best is None:
                most = tuple((unit, max((free[host.name][unit] for host in rack.hosts),
                                        default=0))
                             for unit in self.units if amounts.get(unit, 0))
                return _Refusal(member=name, packed=len(chosen), most_free=most)
            chosen[name] = best[2]
            for unit in self.units:
                free[best[2]][unit] -= amounts.get(unit, 0)
        return chosen

    def _apply(self, members: tuple[str, ...], chosen: dict[str, str], rack: Rack,
               groups: set[str], sign: int) -> None:
        """Take (sign +1) or give back (-1) the set's place on ``rack``."""
        for name, host in chosen.items():
            for unit in self.units:
                self.free[(rack.name, host)][unit] -= sign * self.demands[name].amounts.get(
                    unit, 0)
        for name in members:
            if sign > 0:
                self.assigned[name] = self.fixed.get(name) or (rack.name, chosen[name])
            else:
                del self.assigned[name]
        for group in groups:
            counts = self.group_racks[group]
            counts[rack.name] = counts.get(rack.name, 0) + sign
            if counts[rack.name] == 0:
                del counts[rack.name]

    # --- reasons -----------------------------------------------------------------------

    def _explain(self, members: tuple[str, ...], reasons: dict[str, _Refusal]) -> str:
        pinned = sorted({self.fixed[name][0] for name in members if name in self.fixed})
        capacity = {rack: refusal for rack, refusal in reasons.items()
                    if refusal.member is not None}
        spread = sorted({refusal.spread_group for refusal in reasons.values()
                         if refusal.spread_group is not None})
        if spread and not pinned:
            group = spread[0]
            taken = sorted(self.group_racks[group])
            if capacity:
                blamed = self._blame(capacity)
                return (f"cannot spread group '{group}' over {self.spread[group]} racks: "
                        f"no rack other than {', '.join(taken)} has room for "
                        f"{self._describe(blamed, members)} "
                        f"(most free on one host: {self._most_free(capacity, blamed)})")
            return (f"cannot spread group '{group}' over {self.spread[group]} racks: its "
                    f"members fit only on {', '.join(taken)}")
        if spread:
            group = spread[0]
            return (f"cannot spread group '{group}' over {self.spread[group]} racks: "
                    f"{_names(sorted(members))} must stay on rack {pinned[0]}")
        blamed = self._blame(capacity)
        # A pinned set fails only on a member that has partners: the text reads
        # "... on the rack of 'x' (rack-a): ...".
        where = f" ({pinned[0]})" if pinned else ""
        return (f"cannot place {self._describe(blamed, members)}{where}: no host has room "
                f"(most free on one host: {self._most_free(capacity, blamed)})")

    def _blame(self, capacity: dict[str, _Refusal]) -> str:
        """The member worth naming: refused on the most racks, then the largest."""
        counts: dict[str, int] = defaultdict(int)
        for refusal in capacity.values():
            assert refusal.member is not None
            counts[refusal.member] += 1
        return min(counts, key=lambda name: (-counts[name], -self.size[name], name))

    def _describe(self, name: str, members: tuple[str, ...]) -> str:
        demand = self.demands[name]
        text = f"'{name}' ({demand.type}, {format_amounts(demand.amounts, self.units)})"
        if len(members) == 1:
            return text
        partner = self._partner(name, members)
        return f"{text} on the rack of '{partner}'"

    def _partner(self, name: str, members: tuple[str, ...]) -> str:
        """Prefer a resource ``name`` links to directly, then one linking to it."""
        demand = self.demands[name]
        direct = sorted(other for other in demand.same_rack_as if other != name)
        if direct:
            return direct[0]
        linking = sorted(other for other in members
                         if name in self.demands[other].same_rack_as)
        if linking:
            return linking[0]
        return next(other for other in members if other != name)

    def _most_free(self, capacity: dict[str, _Refusal], blamed: str) -> str:
        """Per refused rack, what its best host had left, in the units the refused
        resource needs, once the set's other members had been packed; the refused
        resource is named where it is not the blamed one."""
        parts = []
        for rack in self.racks:
            refusal = capacity.get(rack.name)
            if refusal is not None:
                most = ", ".join(f"{amount} {unit}" for unit, amount in refusal.most_free)
                other = f" for '{refusal.member}'" if refusal.member != blamed else ""
                parts.append(f"{rack.name} {most or 'nothing'}{other}")
        if len(parts) > MAX_RACKS_IN_REASON:
            more = len(parts) - MAX_RACKS_IN_REASON
            parts = [*parts[:MAX_RACKS_IN_REASON], f"{more} more"]
        return "; ".join(parts)


@dataclasses.dataclass
class _Frame:
    """One set's place in the search: the racks left to try and where it went."""

    members: tuple[str, ...]
    groups: set[str]
    candidates: Iterator[Rack]
    reasons: dict[str, _Refusal] = dataclasses.field(default_factory=dict)
    rack: Rack | None = None
    chosen: dict[str, str] = dataclasses.field(default_factory=dict)  # member -> host


@dataclasses.dataclass(frozen=True)
class _Refusal:
    """Why one set did not go on one rack."""

    member: str | None = None  # the member no host had room for
    packed: int = 0  # members packed before it: how far the set got
    spread_group: str | None = None  # the spread group taking the rack would strand
    most_free: tuple[tuple[str, int], ...] = ()  # (unit, most free on one host) at refusal


def _names(names: Sequence[str]) -> str:
    return ", ".join(f"'{name}'" for name in names)
