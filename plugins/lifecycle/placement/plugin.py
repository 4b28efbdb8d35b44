"""The ``placement`` lifecycle plugin: place a whole stack on the operator's racks and hosts.

Before a create, adopt or update touches any resource, every resource of a placed type is
given a rack and a host from the inventory file, honouring the stack's ``same_rack_as`` and
``spread_group`` hints and what other stacks already hold; a stack that cannot be placed
is denied with the reason. The placements are reserved in the plugin's own table and
released when the stack goes away. See ``specs/lifecycle-placement.rst``.

A nested stack is placed by its own operation's pre-op, like any stack, against every
reservation (its tree's included); a spread group is the tree's, so the members other
stacks of the tree hold count towards its racks.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Mapping
from typing import Any

from oslo_config import cfg

from engine.context import RequestContext
from engine.lifecycle.base import Denied, LifecyclePlugin, PluginServices, Transactions, Warn
from engine.lifecycle.view import StackView
from engine.vocabulary import UPDATE_LIKE, Action
from plugins.lifecycle.placement import store
from plugins.lifecycle.placement.algorithm import (
    Demand,
    GroupMember,
    HostKey,
    Placement,
    Unplaceable,
    place,
    spread_short,
)
from plugins.lifecycle.placement.hints import (
    StackDemands,
    StackError,
    placed_names,
    stack_demands,
)
from plugins.lifecycle.placement.inventory import Inventory, load_inventory

GROUP = "lifecycle_placement"

OPTS = [
    cfg.StrOpt(
        "inventory_file", default="",
        help="YAML file describing the racks and hosts to place stacks on and the resource "
             "types to place (see etc/kiln/placement-inventory.yaml.example). Empty: the "
             "placement plugin does nothing."),
]

#: Actions whose pre-op places the stack from nothing.
CREATING = (Action.CREATE, Action.ADOPT)
#: Actions whose success means the stack's resources are gone.
RELEASING = (Action.DELETE, Action.ABANDON)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    return [(GROUP, list(OPTS))]


class PlacementPlugin(LifecyclePlugin):
    """Places each stack's resources on racks and hosts, and reserves the capacity."""

    supports_dry_run = True

    def __init__(self) -> None:
        self._inventory: Inventory | None = None
        self._database: Transactions | None = None
        self._clock: Callable[[], datetime.datetime] | None = None

    def configure(self, services: PluginServices) -> None:
        services.conf.register_opts(OPTS, group=GROUP)
        path = services.conf[GROUP].inventory_file
        if not path:
            return
        self._inventory = load_inventory(path)
        self._database = services.database
        self._clock = services.clock

    def get_ordinal(self) -> int:
        return 50

    # --- pre-op --------------------------------------------------------------------------

    def do_pre_op(self, cnxt: RequestContext, stack: StackView,
                  current_stack: StackView | None = None,
                  action: str | None = None) -> Warn | None:
        if self._inventory is None or self._database is None:
            return None
        action = action or stack.action
        if action in CREATING:
            target = stack
        elif action in UPDATE_LIKE and current_stack is not None:
            target = current_stack
        else:
            return None
        try:
            wanted = stack_demands(target, self._inventory.types)
        except StackError as exc:
            raise Denied(str(exc)) from None
        if stack.dry_run or target.dry_run:
            with self._database.read() as session:
                plan = self._plan(session, stack, action, wanted.demands)
            return _warning(wanted, plan.short)
        with self._database.transaction() as session:
            store.lock(session)
            existing = store.of_stack(session, stack.id)
            if action in CREATING and existing:
                return _warning(wanted)  # a repeated call: the first one reserved
            if action in UPDATE_LIKE:
                if any(row.state == store.PENDING and row.action == action
                       for row in existing):
                    return _warning(wanted)  # a repeated call: the first one reserved
                # Pending rows of another action belong to an update this one supersedes
                # (a rollback after a failed update whose post-op has not run yet).
                store.release_pending(session, stack.id)
            plan = self._plan(session, stack, action, wanted.demands)
            state = store.HELD if action in CREATING else store.PENDING
            demands = {demand.name: demand for demand in wanted.demands}
            assert self._clock is not None
            store.insert(session, [
                store.Reservation(
                    stack_id=stack.id, resource_name=placement.resource, state=state,
                    action=action, tenant_id=stack.tenant_id,
                    resource_type=placement.type, rack=placement.rack, host=placement.host,
                    amounts=placement.amounts, root_stack_id=stack.root_stack_id,
                    spread_group=demands[placement.resource].spread_group,
                    spread_racks=demands[placement.resource].spread_racks)
                for placement in plan.placements if placement.resource not in plan.kept],
                self._clock())
        return _warning(wanted, plan.short)

    def _plan(self, session: Any, stack: StackView, action: str,
              demands: tuple[Demand, ...]) -> _Plan:
        """Place ``demands`` against the current reservations and the spread groups'
        members that the stack's tree holds elsewhere; on an update, resources that keep
        their type and amounts keep their host. Raises Denied."""
        inventory = self._inventory
        assert inventory is not None
        fixed: dict[str, HostKey] = {}
        if action in UPDATE_LIKE:
            held = {row.resource_name: row for row in store.of_stack(session, stack.id)
                    if row.state == store.HELD}
            hosts = inventory.hosts()
            for demand in demands:
                row = held.get(demand.name)
                if (row is not None and row.resource_type == demand.type
                        and dict(row.amounts) == dict(demand.amounts)
                        and (row.rack, row.host) in hosts):
                    fixed[demand.name] = (row.rack, row.host)
        elsewhere = _members_elsewhere(session, stack, demands)
        try:
            placements = place(inventory.racks, inventory.units, store.usage(session),
                               demands, fixed, elsewhere=elsewhere)
        except Unplaceable as exc:
            raise Denied(str(exc)) from None
        return _Plan(placements, frozenset(fixed),
                      spread_short(placements, demands, elsewhere))

    # --- post-op -------------------------------------------------------------------------

    def do_post_op(self, cnxt: RequestContext, stack: StackView,
                   current_stack: StackView | None = None, action: str | None = None,
                   is_stack_failure: bool = False) -> None:
        if (self._inventory is None or self._database is None or stack.dry_run
                or (current_stack is not None and current_stack.dry_run)):
            return  # a dry run reserved nothing
        action = action or stack.action
        if action in CREATING and is_stack_failure:
            # What the failed create made is really on its host until the stack is
            # deleted; only what never came to exist (all of it, after a denial) is freed.
            with self._database.transaction() as session:
                store.release_stack(session, stack.id, keep=frozenset(
                    name for name, resource in stack.resources.items() if resource.exists))
        elif action in UPDATE_LIKE and current_stack is not None:
            with self._database.transaction() as session:
                if is_stack_failure:
                    store.release_pending(session, stack.id, action)
                else:
                    keep = placed_names(current_stack, self._inventory.types)
                    store.commit_pending(session, stack.id, action, keep)
                    store.label_groups(session, stack.id, _groups(current_stack,
                                                                  self._inventory.types))
        elif (action in RELEASING or action == Action.ROLLBACK) and not is_stack_failure:
            # A ROLLBACK without current_stack undoes a create: the resources are gone.
            with self._database.transaction() as session:
                store.release_stack(session, stack.id)

    # --- inspection ----------------------------------------------------------------------

    def placement_of(self, stack_id: str, resource_name: str) -> Mapping[str, Any] | None:
        if self._inventory is None or self._database is None:
            return None  # places nothing: no read per resource
        with self._database.read() as session:
            rows = store.of_stack(session, stack_id, resource_name)
        # An update's new placement (pending) is the one its create or update acts on.
        row = min(rows, key=lambda r: r.state != store.PENDING, default=None)
        return None if row is None else {"rack": row.rack, "host": row.host}

    def describe_stack(self, stack_id: str) -> Any:
        if self._database is None:
            return None
        with self._database.read() as session:
            rows = store.of_stack(session, stack_id)
        return [_describe(row) for row in rows]


def _describe(row: store.Reservation) -> Mapping[str, Any]:
    return {"resource": row.resource_name, "type": row.resource_type, "rack": row.rack,
            "host": row.host, "amounts": dict(row.amounts), "state": row.state}


def _members_elsewhere(session: Any, stack: StackView, demands: tuple[Demand, ...]
                       ) -> tuple[GroupMember, ...]:
    """The members of this stack's spread groups that other stacks of its tree hold."""
    groups = {demand.spread_group for demand in demands if demand.spread_group is not None}
    if not groups:
        return ()
    return tuple(GroupMember(group=row.spread_group, rack=row.rack,
                             spread_racks=row.spread_racks)
                 for row in store.tree_groups(session, stack.root_stack_id, stack.id)
                 if row.spread_group in groups)


def _groups(stack: StackView, types: Mapping[str, Any]
            ) -> dict[str, tuple[str | None, int | None]]:
    """Each placed resource's spread group and rack count, as its hints now say (a
    resource an update kept on its host may have changed group)."""
    try:
        demands = stack_demands(stack, types).demands
    except StackError:
        return {}  # the pre-op read them; a stack that changed since keeps its labels
    return {demand.name: (demand.spread_group, demand.spread_racks) for demand in demands}


@dataclasses.dataclass(frozen=True)
class _Plan:
    placements: tuple[Placement, ...]
    kept: frozenset[str]  # resources an update leaves on their host
    short: Mapping[str, tuple[int, int]]  # spread_short's groups


def _warning(wanted: StackDemands, short: Mapping[str, tuple[int, int]] | None = None
             ) -> Warn | None:
    messages = []
    if wanted.ignored_hints:
        names = ", ".join(f"'{name}'" for name in wanted.ignored_hints)
        messages.append(f"placement hints ignored on {names}: their types are not placed")
    for group, (used, asked) in (short or {}).items():
        # Not a denial: another stack of the tree (a group's member, a provider
        # template) may bring the members that spread it further.
        messages.append(f"spread group '{group}' asks for {asked} racks but its members "
                        f"so far can use only {used}")
    return Warn("; ".join(messages)) if messages else None
