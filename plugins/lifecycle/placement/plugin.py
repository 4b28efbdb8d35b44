"""The ``placement`` lifecycle plugin: place a whole stack on the operator's racks and hosts.

Before a create, adopt or update touches any resource, every resource of a placed type is
given a rack and a host from the inventory file, honouring the stack's ``same_rack_as`` and
``spread_group`` hints and what other stacks already hold; a stack that cannot be placed
is denied with the reason. The placements are reserved in the plugin's own table and
released when the stack goes away. See ``specs/lifecycle-placement.rst``.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any

from oslo_config import cfg

from engine.context import RequestContext
from engine.lifecycle.base import Denied, LifecyclePlugin, PluginServices, Transactions, Warn
from engine.lifecycle.view import StackView
from engine.vocabulary import Action
from plugins.lifecycle.placement import store
from plugins.lifecycle.placement.algorithm import Demand, HostKey, Placement, Unplaceable, place
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
#: Actions that take the stack to a new definition (``current_stack``), keeping what it can.
UPDATING = (Action.UPDATE, Action.ROLLBACK)
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
        elif action in UPDATING and current_stack is not None:
            target = current_stack
        else:
            return None
        try:
            wanted = stack_demands(target, self._inventory.types)
        except StackError as exc:
            raise Denied(str(exc)) from None
        warning = _warning(wanted)
        if stack.dry_run or target.dry_run:
            with self._database.read() as session:
                self._plan(session, stack.id, action, wanted.demands)
            return warning
        with self._database.transaction() as session:
            store.lock(session)
            existing = store.of_stack(session, stack.id)
            if action in CREATING and existing:
                return warning  # a repeated call: the first one reserved
            if action in UPDATING:
                if any(row.state == store.PENDING and row.action == action
                       for row in existing):
                    return warning  # a repeated call: the first one reserved
                # Pending rows of another action belong to an update this one supersedes
                # (a rollback after a failed update whose post-op has not run yet).
                store.release_pending(session, stack.id)
            placements, kept = self._plan(session, stack.id, action, wanted.demands)
            state = store.HELD if action in CREATING else store.PENDING
            assert self._clock is not None
            store.insert(session, [
                store.Reservation(
                    stack_id=stack.id, resource_name=placement.resource, state=state,
                    action=action, tenant_id=stack.tenant_id,
                    resource_type=placement.type, rack=placement.rack, host=placement.host,
                    amounts=placement.amounts)
                for placement in placements if placement.resource not in kept],
                self._clock())
        return warning

    def _plan(self, session: Any, stack_id: str, action: str, demands: tuple[Demand, ...],
              ) -> tuple[tuple[Placement, ...], frozenset[str]]:
        """Place ``demands`` against the current reservations; on an update, resources
        that keep their type and amounts keep their host. Returns the placements and the
        names of the kept ones. Raises Denied."""
        inventory = self._inventory
        assert inventory is not None
        fixed: dict[str, HostKey] = {}
        if action in UPDATING:
            held = {row.resource_name: row for row in store.of_stack(session, stack_id)
                    if row.state == store.HELD}
            hosts = inventory.hosts()
            for demand in demands:
                row = held.get(demand.name)
                if (row is not None and row.resource_type == demand.type
                        and dict(row.amounts) == dict(demand.amounts)
                        and (row.rack, row.host) in hosts):
                    fixed[demand.name] = (row.rack, row.host)
        try:
            placements = place(inventory.racks, inventory.units, store.usage(session),
                               demands, fixed)
        except Unplaceable as exc:
            raise Denied(str(exc)) from None
        return placements, frozenset(fixed)

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
        elif action in UPDATING and current_stack is not None:
            with self._database.transaction() as session:
                if is_stack_failure:
                    store.release_pending(session, stack.id, action)
                else:
                    keep = placed_names(current_stack, self._inventory.types)
                    store.commit_pending(session, stack.id, action, keep)
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


def _warning(wanted: StackDemands) -> Warn | None:
    if not wanted.ignored_hints:
        return None
    names = ", ".join(f"'{name}'" for name in wanted.ignored_hints)
    return Warn(f"placement hints ignored on {names}: their types are not placed")
