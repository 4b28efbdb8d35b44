"""The placement lifecycle plugin: the pure placement function, the inventory file, and the
plugin against a real SQLite file migrated with Kiln's own migrations (the tests that take
``database`` run again on PostgreSQL:
tests/functional/plugins/lifecycle/test_placement_postgresql.py)."""

from __future__ import annotations

import dataclasses
import datetime
import pathlib
import textwrap
import threading
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from oslo_config import cfg

from engine.context import RequestContext
from engine.db import migration
from engine.db.session import Database
from engine.lifecycle.base import Denied, PluginServices, Warn
from engine.lifecycle.view import ResourceView, StackView, Unresolved, freeze
from plugins.lifecycle.placement import store
from plugins.lifecycle.placement.algorithm import (
    Demand,
    GroupMember,
    Host,
    Placement,
    Rack,
    Unplaceable,
    place,
    spread_short,
)
from plugins.lifecycle.placement.inventory import InventoryError, load_inventory
from plugins.lifecycle.placement.plugin import GROUP, OPTS, PlacementPlugin, list_opts

NOW = datetime.datetime(2026, 11, 22, 15, 0, tzinfo=datetime.UTC)
# Migrate to this plugin's revision, not to head: later revisions are not its concern.
REVISION = "0014"  # 0004 made the table, 0014 added the trees
EXAMPLE = pathlib.Path(__file__).resolve().parents[4] / "etc" / "kiln" / (
    "placement-inventory.yaml.example")

SERVER, VOLUME, TEST = "OS::Nova::Server", "OS::Cinder::Volume", "OS::Heat::TestResource"
UNITS = ("slots", "disk_gb")


# --- the placement function ----------------------------------------------------------------


def rack(name: str, **hosts: Mapping[str, int]) -> Rack:
    return Rack(name=name, hosts=tuple(Host(name=host, capacity=capacity)
                                       for host, capacity in hosts.items()))


def demand(name: str, slots: int = 0, disk_gb: int = 0, **hints: Any) -> Demand:
    amounts = {unit: amount for unit, amount in (("slots", slots), ("disk_gb", disk_gb))
               if amount}
    kind = VOLUME if disk_gb and not slots else SERVER
    same = hints.pop("same_rack_as", ())
    return Demand(name=name, type=kind, amounts=amounts,
                  same_rack_as=(same,) if isinstance(same, str) else tuple(same), **hints)


def where(placements: tuple[Placement, ...]) -> dict[str, str]:
    return {placement.resource: f"{placement.rack}/{placement.host}"
            for placement in placements}


TWO_RACKS = (rack("r1", h1={"slots": 4, "disk_gb": 100}, h2={"slots": 2}),
             rack("r2", h3={"slots": 4, "disk_gb": 1000}))


def test_racks_fill_in_order_and_hosts_by_best_fit() -> None:
    placements = place(TWO_RACKS, UNITS, {}, [demand("a", slots=2), demand("b", slots=1)])
    # Both fit r1; h2 (2 slots) is the tighter fit for the larger, h2 is then full.
    assert where(placements) == {"a": "r1/h2", "b": "r1/h1"}
    assert placements[0] == Placement(resource="a", type=SERVER, rack="r1", host="h2",
                                      amounts={"slots": 2})


def test_existing_usage_is_respected() -> None:
    used = {("r1", "h1"): {"slots": 4}, ("r1", "h2"): {"slots": 1}}
    assert where(place(TWO_RACKS, UNITS, used, [demand("a", slots=2)])) == {"a": "r2/h3"}


def test_same_rack_as_is_transitive_and_puts_the_set_where_all_fit() -> None:
    placements = place(TWO_RACKS, UNITS, {}, [
        demand("server", slots=1), demand("db", disk_gb=500, same_rack_as="server"),
        demand("cache", slots=1, same_rack_as="db")])
    # Only r2 has 500 disk_gb, so the whole set goes there although r1 comes first.
    assert where(placements) == {"cache": "r2/h3", "db": "r2/h3", "server": "r2/h3"}


def test_a_spread_group_reaches_its_rack_count() -> None:
    racks = (rack("r1", h1={"slots": 8}), rack("r2", h2={"slots": 8}),
             rack("r3", h3={"slots": 8}))
    demands = [demand(f"web{i}", slots=1, spread_group="web", spread_racks=3)
               for i in range(4)]
    placements = place(racks, UNITS, {}, demands)
    assert where(placements) == {"web0": "r1/h1", "web1": "r2/h2", "web2": "r3/h3",
                                 "web3": "r1/h1"}


def test_backtracking_finds_what_first_fit_misses() -> None:
    racks = (rack("r1", h1={"slots": 2, "disk_gb": 10}), rack("r2", h2={"slots": 2}))
    # 'a' is placed first (larger) and takes r1's slots; 'b' fits only r1 (it needs
    # disk), so the search moves 'a' to r2.
    placements = place(racks, UNITS, {}, [demand("a", slots=2),
                                          demand("b", slots=1, disk_gb=1)])
    assert where(placements) == {"a": "r2/h2", "b": "r1/h1"}


def test_the_same_inputs_give_the_same_placements() -> None:
    demands = [demand(f"s{i}", slots=i % 2 + 1, spread_group="g", spread_racks=2)
               for i in range(6)]
    first = place(TWO_RACKS, UNITS, {}, demands)
    assert place(TWO_RACKS, UNITS, {}, list(reversed(demands))) == first


def test_fixed_placements_stay_and_pull_their_affinity_set() -> None:
    used = {("r2", "h3"): {"slots": 1}}
    placements = place(TWO_RACKS, UNITS, used,
                       [demand("old", slots=1), demand("new", slots=1, same_rack_as="old")],
                       fixed={"old": ("r2", "h3")})
    assert where(placements) == {"new": "r2/h3", "old": "r2/h3"}


@pytest.mark.parametrize(("racks", "used", "demands", "fixed", "reason"), [
    pytest.param(
        TWO_RACKS, {}, [demand("db", disk_gb=5000)], {},
        "cannot place 'db' (OS::Cinder::Volume, 5000 disk_gb): no host has room "
        "(most free on one host: r1 100 disk_gb; r2 1000 disk_gb)", id="too-big"),
    pytest.param(
        TWO_RACKS, {("r2", "h3"): {"slots": 4}},
        [demand("server1", slots=1), demand("db", disk_gb=500, same_rack_as="server1")], {},
        "cannot place 'db' (OS::Cinder::Volume, 500 disk_gb) on the rack of 'server1': no "
        "host has room (most free on one host: r1 100 disk_gb; r2 0 slots for 'server1')",
        id="affinity"),
    pytest.param(
        TWO_RACKS, {("r2", "h3"): {"disk_gb": 900}},
        [demand("server1", slots=1), demand("db", disk_gb=500, same_rack_as="server1")],
        {"server1": ("r2", "h3")},
        "cannot place 'db' (OS::Cinder::Volume, 500 disk_gb) on the rack of 'server1' (r2): "
        "no host has room (most free on one host: r2 100 disk_gb)", id="pinned"),
    pytest.param(
        (rack("r1", h1={"slots": 2}), rack("r2", h2={"slots": 1})), {},
        [demand("big", slots=2), demand("w1", slots=1, spread_group="g", spread_racks=2),
         demand("w2", slots=1, spread_group="g")], {},
        "cannot spread group 'g' over 2 racks: no rack other than r2 has room for 'w2' "
        "(OS::Nova::Server, 1 slots) (most free on one host: r1 0 slots)", id="spread-full"),
    pytest.param(
        TWO_RACKS, {}, [demand("a", slots=1, spread_group="g", spread_racks=3),
                        demand("b", slots=1, spread_group="g"),
                        demand("c", slots=1, spread_group="g")], {},
        "spread group 'g' asks for 3 racks; the inventory has 2", id="too-few-racks"),
    pytest.param(
        TWO_RACKS, {}, [demand("a", slots=1, spread_group="g", spread_racks=2),
                        demand("b", slots=1, spread_group="g", spread_racks=3)], {},
        "spread group 'g' is given different spread_racks (2 and 3)", id="conflict"),
    pytest.param(
        TWO_RACKS, {}, [demand("a", slots=1, spread_group="g")], {},
        "spread group 'g' needs spread_racks on at least one of its members", id="no-count"),
])
def test_an_unsatisfiable_stack_is_explained(
        racks: tuple[Rack, ...], used: Mapping[tuple[str, str], Mapping[str, int]],
        demands: list[Demand], fixed: Mapping[str, tuple[str, str]], reason: str) -> None:
    with pytest.raises(Unplaceable) as failure:
        place(racks, UNITS, used, demands, fixed)
    assert str(failure.value) == reason


def test_a_group_with_fewer_members_than_racks_uses_all_it_can_and_says_so() -> None:
    # More members may come with another stack of the tree, so it is no refusal.
    racks = (*TWO_RACKS, rack("r3", h9={"slots": 8}))
    alone = [demand("a", slots=1, spread_group="g", spread_racks=3)]
    bound = [demand("a", slots=1, spread_group="g", spread_racks=3),
             demand("b", slots=1, spread_group="g", same_rack_as="a"),
             demand("c", slots=1, spread_group="g")]
    placed_alone, placed_bound = place(racks, UNITS, {}, alone), place(racks, UNITS, {}, bound)
    assert where(placed_bound) == {"a": "r1/h2", "b": "r1/h2", "c": "r2/h3"}
    assert spread_short(placed_alone, alone) == {"g": (1, 3)}
    assert spread_short(placed_bound, bound) == {"g": (2, 3)}


def test_a_group_counts_the_racks_its_members_elsewhere_in_the_tree_hold() -> None:
    racks = (*TWO_RACKS, rack("r3", h9={"slots": 8}))
    elsewhere = [GroupMember("web", "r1", spread_racks=3)]
    demands = [demand("w1", slots=1, spread_group="web"),
               demand("w2", slots=1, spread_group="web")]
    placements = place(racks, UNITS, {}, demands, elsewhere=elsewhere)
    assert where(placements) == {"w1": "r2/h3", "w2": "r3/h9"}  # r1 already has one
    assert spread_short(placements, demands, elsewhere) == {}
    # Once the group has its racks, a new member goes where first fit puts it.
    done = [*elsewhere, GroupMember("web", "r2", 3), GroupMember("web", "r3", 3)]
    assert where(place(racks, UNITS, {}, demands[:1], elsewhere=done)) == {"w1": "r1/h2"}
    with pytest.raises(Unplaceable, match=r"spread group 'web' is given different "
                       r"spread_racks \(3 and 2\)"):
        place(racks, UNITS, {}, [demand("w1", slots=1, spread_group="web", spread_racks=2)],
              elsewhere=elsewhere)


def test_affinity_between_resources_pinned_to_different_racks_is_refused() -> None:
    with pytest.raises(Unplaceable, match=r"same_rack_as joins resources that already sit "
                       r"on different racks \('a' is on r1, 'b' is on r2\)"):
        place(TWO_RACKS, UNITS, {}, [demand("a", slots=1), demand("b", slots=1,
                                                                  same_rack_as="a")],
              fixed={"a": ("r1", "h1"), "b": ("r2", "h3")})


def test_a_hopeless_search_stops_at_its_limit_with_the_first_reason() -> None:
    racks = tuple(rack(f"r{i:02}", **{f"h{i:02}": {"slots": 1}}) for i in range(12))
    demands = [demand(f"d{i:02}", slots=1) for i in range(13)]
    # 12! orders to try without the limit; with it, the first dead end is the answer.
    with pytest.raises(Unplaceable, match=r"^cannot place 'd12' \(OS::Nova::Server, 1 "
                       r"slots\): no host has room \(most free on one host: r00 0 slots; "
                       r"r01 0 slots; r02 0 slots; r03 0 slots; 8 more\)$"):
        place(racks, UNITS, {}, demands)



def test_the_limit_bounds_the_backtracking() -> None:
    racks = (rack("r1", h1={"slots": 2, "disk_gb": 10}), rack("r2", h2={"slots": 2}))
    demands = [demand("a", slots=2), demand("b", slots=1, disk_gb=1)]
    with pytest.raises(Unplaceable, match=r"^cannot place 'b'"):
        place(racks, UNITS, {}, demands, limit=1)
    # Two attempts after the dead end: 'a' on r2, then 'b' on r1.
    assert where(place(racks, UNITS, {}, demands, limit=2)) == {"a": "r2/h2", "b": "r1/h1"}


def test_a_large_stack_is_placed_without_recursion() -> None:
    racks = tuple(rack(f"r{i}", **{f"h{i}-{j}": {"slots": 64} for j in range(8)})
                  for i in range(8))
    demands = [demand(f"s{i:04}", slots=1, spread_group="all", spread_racks=8)
               for i in range(3000)]
    placements = place(racks, UNITS, {}, demands)
    assert len({placement.rack for placement in placements}) == 8
    assert len(placements) == 3000

# --- the inventory file --------------------------------------------------------------------

INVENTORY = """\
units: [slots, disk_gb]
racks:
  rack-a:
    hosts:
      a1: {slots: 4, disk_gb: 100}
      a2: {slots: 4}
  rack-b:
    hosts:
      b1: {slots: 4, disk_gb: 500}
  rack-c:
    hosts:
      c1: {slots: 2}
types:
  OS::Nova::Server:
    by_property: flavor
    costs:
      small: {slots: 1}
      large: {slots: 4}
  OS::Cinder::Volume:
    cost: {disk_gb: {property: size}}
  OS::Heat::TestResource:
    cost: {slots: 1}
"""


def write(tmp_path: pathlib.Path, text: str) -> str:
    path = tmp_path / f"inventory-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_the_example_inventory_loads() -> None:
    inventory = load_inventory(str(EXAMPLE))
    assert inventory.units == ("slots", "disk_gb")
    assert [rack.name for rack in inventory.racks] == ["rack-a", "rack-b", "rack-c"]
    assert set(inventory.types) == {SERVER, VOLUME, TEST, "OS::Heat::None"}
    server = resource("web", SERVER, {"flavor": "m1.large"})
    assert inventory.types[SERVER].amounts(server) == {"slots": 4, "disk_gb": 80}
    assert inventory.types["OS::Heat::None"].amounts(resource("n", "OS::Heat::None")) == {}


@pytest.mark.parametrize(("text", "problem"), [
    ("units: [slots\n", "is not valid YAML: while parsing a flow sequence"),
    ("- 1\n", "must be a mapping with the keys units, racks, types"),
    ("units: [slots]\nracks: {}\n", "types: is missing"),
    ("units: [slots]\nracks: {}\ntypes: {}\nflavors: {}\n",
     "flavors: unknown key (known: units, racks, types)"),
    ("units: []\nracks: {}\ntypes: {}\n", "units: must be a non-empty list of unit names"),
    ("units: [slots, slots]\nracks: {}\ntypes: {}\n", "units[1]: 'slots' is listed twice"),
    ("units: [slots]\nracks: {}\ntypes: {}\n",
     "racks: must be a non-empty mapping of rack names to racks"),
    ("units: [slots]\nracks: {r1: {h1: {slots: 1}}}\ntypes: {}\n",
     "racks.r1: must be a mapping with the one key 'hosts'"),
    ("units: [slots]\nracks: {r1: {hosts: {h1: {slots: -1}}}}\ntypes: {}\n",
     "racks.r1.hosts.h1.slots: must be a whole number, 0 or more, not -1"),
    ("units: [slots]\nracks: {r1: {hosts: {h1: {slots: true}}}}\ntypes: {}\n",
     "racks.r1.hosts.h1.slots: must be a whole number, 0 or more, not True"),
    ("units: [slots]\nracks: {r1: {hosts: {h1: {gpus: 1}}}}\ntypes: {}\n",
     "racks.r1.hosts.h1.gpus: unknown unit 'gpus' (units: slots)"),
    ("units: [slots]\nracks: {r1: {hosts: {h1: }}}\ntypes: {}\n",
     "racks.r1.hosts.h1: must be a mapping of unit to a whole number"),
    ("units: [slots]\nracks: {r1: {hosts: {h1: {slots: 1}}}, r2: {hosts: {h1: {slots: 1}}}}"
     "\ntypes: {}\n",
     "racks.r2.hosts.h1: host 'h1' is also in rack 'r1'; host names must be unique"),
    ("units: [slots]\nracks: {r1: {hosts: {h1: {slots: 1}}}}\ntypes: {}\n",
     "types: must be a non-empty mapping of resource types to costs"),
    ("units: [slots]\nracks: {r1: {hosts: {h1: {slots: 1}}}}\n"
     "types: {T: {cost: {slots: 1}, by_property: flavor}}\n",
     "types.T: must have either 'cost', or 'by_property' and 'costs' (found: by_property, "
     "cost)"),
    ("units: [slots]\nracks: {r1: {hosts: {h1: {slots: 1}}}}\n"
     "types: {T: {cost: {slots: {prop: size}}}}\n",
     "types.T.cost.slots: must be a whole number or {property: NAME} (with an optional "
     "default: N)"),
    ("units: [slots]\nracks: {r1: {hosts: {h1: {slots: 1}}}}\n"
     "types: {T: {by_property: flavor, costs: {small: {cpus: 1}}}}\n",
     "types.T.costs.small.cpus: unknown unit 'cpus' (units: slots)"),
])
def test_a_bad_inventory_names_the_file_and_the_key(tmp_path: pathlib.Path, text: str,
                                                    problem: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InventoryError) as error:
        load_inventory(path)
    assert str(error.value).startswith(f"{path}: {problem}")


def test_a_missing_inventory_names_the_file(tmp_path: pathlib.Path) -> None:
    with pytest.raises(InventoryError, match=r"nowhere\.yaml: cannot be read: .*No such file"):
        load_inventory(str(tmp_path / "nowhere.yaml"))


# --- the plugin against a real database ----------------------------------------------------


@pytest.fixture
def database(tmp_path: pathlib.Path) -> Iterator[Database]:
    sqlite = Database(f"sqlite:///{tmp_path}/placement.sqlite")
    migration.upgrade(sqlite, REVISION)
    yield sqlite
    sqlite.dispose()


def make_plugin(database: Database, tmp_path: pathlib.Path,
                inventory: str | None = INVENTORY) -> PlacementPlugin:
    """A configured plugin reading ``[lifecycle_placement]`` from a real config file."""
    config_file = tmp_path / f"kiln-{uuid.uuid4().hex[:6]}.conf"
    path = write(tmp_path, inventory) if inventory is not None else ""
    config_file.write_text(f"[lifecycle_placement]\ninventory_file = {path}\n")
    conf = cfg.ConfigOpts()
    conf(["--config-file", str(config_file)], project="kiln", default_config_files=[])
    plugin = PlacementPlugin()
    plugin.configure(PluginServices(conf=conf, database=database, clock=lambda: NOW))
    return plugin


def resource(name: str, kind: str, properties: Mapping[str, Any] | None = None,
             placement: Any = None) -> ResourceView:
    metadata = {} if placement is None else {"placement": placement}
    return ResourceView(name=name, type=kind, properties=freeze(dict(properties or {})),
                        metadata=freeze(metadata), depends_on=())


def server(name: str, flavor: str = "small", placement: Any = None) -> ResourceView:
    return resource(name, SERVER, {"flavor": flavor}, placement)


def volume(name: str, size: Any, placement: Any = None) -> ResourceView:
    return resource(name, VOLUME, {"size": size}, placement)


def make_stack(*resources: ResourceView, stack_id: str | None = None,
               action: str = "CREATE", dry_run: bool = False) -> StackView:
    return StackView(id=stack_id or str(uuid.uuid4()), name="s", tenant_id="tenant-a",
                     action=action, status=f"{action}_IN_PROGRESS", status_reason="",
                     template=freeze({}), parameters=freeze({}), environment=freeze({}),
                     resources=freeze({view.name: view for view in resources}),
                     dry_run=dry_run)


CONTEXT = RequestContext(tenant_id="tenant-a", token_tenant_id="tenant-a", role="member")


def run(plugin: PlacementPlugin, stack: StackView, action: str = "CREATE", *,
        current: StackView | None = None, fail: bool = False) -> Warn | None:
    """A whole operation: pre-op, then post-op (also after a denial, as Kiln does)."""
    try:
        verdict = plugin.do_pre_op(CONTEXT, stack, current, action)
    except Denied:
        plugin.do_post_op(CONTEXT, stack, current, action, is_stack_failure=True)
        raise
    plugin.do_post_op(CONTEXT, stack, current, action, is_stack_failure=fail)
    return verdict


def placed(plugin: PlacementPlugin, stack: StackView) -> dict[str, str]:
    return {row["resource"]: f"{row['rack']}/{row['host']}"
            for row in plugin.describe_stack(stack.id) if row["state"] == store.HELD}


def row_count(database: Database) -> int:
    with database.read() as session:
        return int(session.execute(
            sa.select(sa.func.count()).select_from(store.RESERVATIONS)).scalar_one())


def test_the_migration_creates_the_table_the_store_defines(database: Database) -> None:
    with database.engine.connect() as conn:
        diffs = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}),
                                 store.METADATA)
    assert [diff for diff in diffs if store.RESERVATIONS.name in repr(diff)] == []


def test_list_opts_names_the_group() -> None:
    assert list_opts() == [(GROUP, OPTS)]


def test_create_reserves_and_describes(database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    stack = make_stack(server("web", "large"), volume("data", 50),
                       resource("cfg", "OS::Heat::Value", {"value": 1}))
    assert run(plugin, stack) is None
    assert plugin.describe_stack(stack.id) == [
        {"resource": "data", "type": VOLUME, "rack": "rack-a", "host": "a1",
         "amounts": {"disk_gb": 50}, "state": "held"},
        {"resource": "web", "type": SERVER, "rack": "rack-a", "host": "a2",
         "amounts": {"slots": 4}, "state": "held"},
    ]
    with database.read() as session:
        row = session.execute(sa.select(store.RESERVATIONS)).first()
    assert row is not None
    assert (row.tenant_id, row.action) == ("tenant-a", "CREATE")
    assert row.created_at.replace(tzinfo=datetime.UTC) == NOW


def test_same_rack_as_keeps_a_server_with_its_volume(database: Database,
                                                     tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    stack = make_stack(server("db", placement={"same_rack_as": "data"}), volume("data", 400))
    run(plugin, stack)
    assert placed(plugin, stack) == {"data": "rack-b/b1", "db": "rack-b/b1"}


def test_a_spread_group_uses_distinct_racks(database: Database,
                                            tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    hints = {"spread_group": "web", "spread_racks": 3}
    stack = make_stack(*(server(f"web{i}", placement=hints) for i in range(3)))
    run(plugin, stack)
    assert placed(plugin, stack) == {"web0": "rack-a/a2", "web1": "rack-b/b1",
                                     "web2": "rack-c/c1"}


def test_capacity_is_shared_between_stacks(database: Database,
                                           tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    first = make_stack(*(server(f"big{i}", "large") for i in range(3)))
    run(plugin, first)
    assert sorted(placed(plugin, first).values()) == ["rack-a/a1", "rack-a/a2", "rack-b/b1"]
    second = make_stack(server("huge", "large"))
    with pytest.raises(Denied) as denied:
        run(plugin, second)
    assert str(denied.value) == (
        "cannot place 'huge' (OS::Nova::Server, 4 slots): no host has room (most free on "
        "one host: rack-a 0 slots; rack-b 0 slots; rack-c 2 slots)")
    assert plugin.describe_stack(second.id) == []
    run(plugin, first, "DELETE")
    run(plugin, second)
    # Best fit: a2 has no disk to keep free, a1 has.
    assert placed(plugin, second) == {"huge": "rack-a/a2"}


def test_an_unsatisfiable_affinity_is_denied_with_the_reason(
        database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    # Fills every slot of rack-a and rack-b.
    run(plugin, make_stack(*(server(f"filler{i}", "large") for i in range(3))))
    stack = make_stack(server("server1", placement={"same_rack_as": ["db"]}),
                       volume("db", 500))
    with pytest.raises(Denied) as denied:
        run(plugin, stack)
    assert str(denied.value) == (
        "cannot place 'db' (OS::Cinder::Volume, 500 disk_gb) on the rack of 'server1': no "
        "host has room (most free on one host: rack-a 100 disk_gb; rack-b 0 slots for "
        "'server1'; rack-c 0 disk_gb)")


@pytest.mark.parametrize(("resources", "reason"), [
    pytest.param([server("a", placement={"near": "b"})],
                 "unknown placement hint 'near' on 'a' (known: same_rack_as, spread_group, "
                 "spread_racks)", id="unknown-hint"),
    pytest.param([server("a", placement=["b"])],
                 "metadata 'placement' of 'a' must be a mapping of hints (same_rack_as, "
                 "spread_group, spread_racks)", id="not-a-mapping"),
    pytest.param([server("a", placement={"same_rack_as": "ghost"})],
                 "'a' names 'ghost' in same_rack_as, which is not a resource of this stack",
                 id="unknown-name"),
    pytest.param([server("a", placement={"same_rack_as": "v"}),
                  resource("v", "OS::Heat::Value")],
                 "'a' names 'v' in same_rack_as, but OS::Heat::Value is not a placed type",
                 id="unplaced-name"),
    pytest.param([server("a", placement={"spread_racks": 2})],
                 "placement hint spread_racks of 'a' needs a spread_group", id="no-group"),
    pytest.param([server("a", placement={"spread_group": "g", "spread_racks": 0})],
                 "placement hint spread_racks of 'a' must be a whole number, 1 or more",
                 id="zero-racks"),
    pytest.param([server("a", "xlarge")],
                 "cannot work out what 'a' (OS::Nova::Server) needs: flavor 'xlarge' has no "
                 "cost in the placement inventory", id="unknown-flavor"),
    pytest.param([volume("v", Unresolved("get_attr", ("x", "size")))],
                 "cannot work out what 'v' (OS::Cinder::Volume) needs: property 'size' is "
                 "only known at run time", id="unresolved"),
    pytest.param([volume("v", "ten")],
                 "cannot work out what 'v' (OS::Cinder::Volume) needs: property 'size' must "
                 "be a whole number of disk_gb, not 'ten'", id="not-a-number"),
    pytest.param([resource("v", VOLUME)],
                 "cannot work out what 'v' (OS::Cinder::Volume) needs: property 'size' is "
                 "not set", id="unset"),
])
def test_bad_hints_and_costs_are_denied(database: Database, tmp_path: pathlib.Path,
                                        resources: list[ResourceView], reason: str) -> None:
    plugin = make_plugin(database, tmp_path)
    with pytest.raises(Denied) as denied:
        run(plugin, make_stack(*resources))
    assert str(denied.value) == reason
    assert row_count(database) == 0


def test_hints_on_unplaced_resources_warn(database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    stack = make_stack(server("a"), resource("v", "OS::Heat::Value", {"value": 1},
                                             {"same_rack_as": "a"}))
    assert run(plugin, stack) == Warn(
        "placement hints ignored on 'v': their types are not placed")
    assert placed(plugin, stack) == {"a": "rack-a/a2"}


def test_a_numeric_string_size_is_accepted(database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    stack = make_stack(volume("v", "300"))
    run(plugin, stack)
    assert plugin.describe_stack(stack.id)[0]["amounts"] == {"disk_gb": 300}


def test_a_failed_create_releases(database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    stack = make_stack(server("a"), volume("v", 10))
    run(plugin, stack, fail=True)
    assert plugin.describe_stack(stack.id) == []
    assert row_count(database) == 0


def test_a_failed_create_keeps_what_it_made(database: Database,
                                            tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    planned = make_stack(server("made"), server("half"), server("never"))
    plugin.do_pre_op(CONTEXT, planned, None, "CREATE")
    # As the worker sees it afterwards: one created, one failed after the cloud named it.
    ended = make_stack(
        dataclasses.replace(server("made"), status="CREATE_COMPLETE",
                            physical_resource_id="p1"),
        dataclasses.replace(server("half"), status="CREATE_FAILED",
                            physical_resource_id="p2"),
        dataclasses.replace(server("never"), status="CREATE_FAILED"),
        stack_id=planned.id)
    plugin.do_post_op(CONTEXT, ended, None, "CREATE", is_stack_failure=True)
    assert set(placed(plugin, planned)) == {"made", "half"}
    run(plugin, ended, "DELETE")
    assert row_count(database) == 0


def test_delete_releases_on_success_only(database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    stack = make_stack(server("a"))
    run(plugin, stack)
    run(plugin, stack, "DELETE", fail=True)  # resources may still exist
    assert placed(plugin, stack) == {"a": "rack-a/a2"}
    run(plugin, stack, "SUSPEND")
    run(plugin, stack, "ABANDON", fail=True)
    assert placed(plugin, stack) == {"a": "rack-a/a2"}
    run(plugin, stack, "DELETE")
    assert row_count(database) == 0
    run(plugin, stack, "DELETE")  # repeated after a crash: nothing left to do


def test_abandon_releases(database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    stack = make_stack(server("a"))
    run(plugin, stack, "ADOPT")
    assert placed(plugin, stack) == {"a": "rack-a/a2"}
    run(plugin, stack, "ABANDON")
    assert row_count(database) == 0


def test_a_repeated_pre_op_keeps_the_first_placements(database: Database,
                                                      tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    stack = make_stack(server("a"), volume("v", 10))
    plugin.do_pre_op(CONTEXT, stack, None, "CREATE")
    first = plugin.describe_stack(stack.id)
    run(plugin, make_stack(server("other", "large")))  # changes what a fresh decision would see
    plugin.do_pre_op(CONTEXT, stack, None, "CREATE")
    assert plugin.describe_stack(stack.id) == first
    plugin.do_post_op(CONTEXT, stack, None, "CREATE", is_stack_failure=False)
    plugin.do_post_op(CONTEXT, stack, None, "CREATE", is_stack_failure=False)
    assert plugin.describe_stack(stack.id) == first
    assert row_count(database) == 3


def test_a_dry_run_decides_and_writes_nothing(database: Database,
                                              tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    assert PlacementPlugin.supports_dry_run
    preview = make_stack(server("a"), volume("v", 10), dry_run=True)
    assert plugin.do_pre_op(CONTEXT, preview, None, "CREATE") is None
    plugin.do_post_op(CONTEXT, preview, None, "CREATE", is_stack_failure=False)
    with pytest.raises(Denied, match="cannot place 'v'"):
        plugin.do_pre_op(CONTEXT, make_stack(volume("v", 10_000), dry_run=True), None,
                         "CREATE")
    assert row_count(database) == 0


def nested_in(parent: StackView, resource_name: str, *resources: ResourceView) -> StackView:
    """A stack nested in ``parent`` by its resource ``resource_name``, placed in the tree
    as the worker's views place it."""
    name = f"{parent.name}-{resource_name}"
    return dataclasses.replace(
        make_stack(*resources), name=name, owner_id=parent.id,
        root_stack_id=parent.root_stack_id, nested_depth=parent.nested_depth + 1,
        path=(*parent.path, (resource_name, name)))


def test_a_spread_group_spans_the_stacks_of_a_tree(database: Database,
                                                   tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    ha = {"spread_group": "ha"}
    root = make_stack(server("db", placement={**ha, "spread_racks": 3}),
                      resource("members", "OS::Heat::ResourceGroup", {"count": 2}))
    warned = run(plugin, root)
    assert warned == Warn("spread group 'ha' asks for 3 racks but its members so far can "
                          "use only 1")
    # The group's members in the nested stack go where the tree's group is not yet...
    child = nested_in(root, "members", server("0", placement=ha), server("1", placement=ha))
    assert run(plugin, child) is None
    # ... and once it has its racks, where first fit puts them, two levels down too.
    grandchild = nested_in(child, "0", server("x", placement=ha))
    assert run(plugin, grandchild) is None
    assert (placed(plugin, root), placed(plugin, child), placed(plugin, grandchild)) == (
        {"db": "rack-a/a2"}, {"0": "rack-b/b1", "1": "rack-c/c1"}, {"x": "rack-a/a2"})

    # Another tree's group of the same name is its own; the capacity is shared.
    other = make_stack(server("lone", "large", placement={**ha, "spread_racks": 2}))
    assert run(plugin, other) == Warn("spread group 'ha' asks for 2 racks but its members "
                                      "so far can use only 1")
    assert placed(plugin, other) == {"lone": "rack-a/a1"}

    # A nested stack that goes away gives its hosts back.
    run(plugin, dataclasses.replace(grandchild, action="DELETE"), "DELETE")
    assert placed(plugin, grandchild) == {}
    with database.read() as session:
        roots = {row.stack_id: row.root_stack_id
                 for row in session.execute(sa.select(store.RESERVATIONS))}
    assert roots == {root.id: root.id, child.id: root.id, other.id: other.id}

    # An update that keeps a resource on its host takes its new group along.
    moved = dataclasses.replace(root, resources=freeze({"db": server(
        "db", placement={"spread_group": "solo", "spread_racks": 1})}), action="UPDATE")
    run(plugin, dataclasses.replace(root, action="UPDATE"), "UPDATE", current=moved)
    with database.read() as session:
        labels = session.execute(sa.select(
            store.RESERVATIONS.c.resource_name, store.RESERVATIONS.c.spread_group,
            store.RESERVATIONS.c.spread_racks).where(
            store.RESERVATIONS.c.stack_id == root.id)).all()
    assert [tuple(label) for label in labels] == [("db", "solo", 1)]
    assert placed(plugin, root) == {"db": "rack-a/a2"}


def test_an_update_keeps_unchanged_resources_and_commits_on_success(
        database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    old = make_stack(server("keep"), server("grow"), server("drop"))
    run(plugin, old)
    before = placed(plugin, old)
    new = make_stack(server("keep"), server("grow", "large"), server("add"),
                     stack_id=old.id, action="UPDATE")
    plugin.do_pre_op(CONTEXT, old, new, "UPDATE")
    states = {(row["resource"], row["state"]) for row in plugin.describe_stack(old.id)}
    # During the update the old 'grow' and 'drop' still exist and still count.
    assert states == {("keep", "held"), ("grow", "held"), ("drop", "held"),
                      ("grow", "pending"), ("add", "pending")}
    plugin.do_pre_op(CONTEXT, old, new, "UPDATE")  # repeated: nothing more reserved
    assert len(plugin.describe_stack(old.id)) == 5
    plugin.do_post_op(CONTEXT, old, new, "UPDATE", is_stack_failure=False)
    after = placed(plugin, old)
    assert set(after) == {"keep", "grow", "add"}
    assert after["keep"] == before["keep"]
    assert {row["resource"]: row["amounts"] for row in plugin.describe_stack(old.id)}[
        "grow"] == {"slots": 4}
    plugin.do_post_op(CONTEXT, old, new, "UPDATE", is_stack_failure=False)  # repeated
    assert placed(plugin, old) == after


def test_a_failed_update_restores_the_old_placements(database: Database,
                                                     tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    old = make_stack(server("a"), server("b"))
    run(plugin, old)
    before = plugin.describe_stack(old.id)
    new = make_stack(server("a", "large"), server("c"), stack_id=old.id, action="UPDATE")
    run(plugin, old, "UPDATE", current=new, fail=True)
    assert plugin.describe_stack(old.id) == before


def test_an_update_that_does_not_fit_is_denied_and_changes_nothing(
        database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    old = make_stack(volume("v", 100))
    run(plugin, old)
    before = plugin.describe_stack(old.id)
    new = make_stack(volume("v", 600), stack_id=old.id, action="UPDATE")
    with pytest.raises(Denied, match=r"^cannot place 'v' \(OS::Cinder::Volume, 600 disk_gb\)"):
        run(plugin, old, "UPDATE", current=new)
    assert plugin.describe_stack(old.id) == before


def test_a_rollback_after_a_failed_update_supersedes_its_pending_rows(
        database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    old = make_stack(server("a"))
    run(plugin, old)
    before = plugin.describe_stack(old.id)
    new = make_stack(server("a"), server("b", "large"), stack_id=old.id, action="UPDATE")
    plugin.do_pre_op(CONTEXT, old, new, "UPDATE")
    back = make_stack(server("a"), stack_id=old.id, action="ROLLBACK")
    run(plugin, new, "ROLLBACK", current=back)
    plugin.do_post_op(CONTEXT, old, new, "UPDATE", is_stack_failure=True)
    assert plugin.describe_stack(old.id) == before


def test_an_empty_inventory_file_turns_the_plugin_off(database: Database,
                                                      tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, inventory=None)
    stack = make_stack(volume("v", 10_000))
    assert run(plugin, stack) is None
    assert plugin.describe_stack(stack.id) is None
    assert row_count(database) == 0


def test_a_bad_inventory_stops_configure(database: Database, tmp_path: pathlib.Path) -> None:
    with pytest.raises(InventoryError, match=r"\.yaml: units: is missing"):
        make_plugin(database, tmp_path, inventory="racks: {}\ntypes: {}\n")


def test_concurrent_creates_never_overbook(database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, inventory=INVENTORY.replace(
        "a1: {slots: 4, disk_gb: 100}", "a1: {slots: 4, disk_gb: 600}"))
    # 1100 disk_gb in all; each stack wants 400, so at most two of four fit.
    stacks = [make_stack(volume("v", 400)) for _ in range(4)]
    outcomes: list[bool] = []
    barrier = threading.Barrier(len(stacks))

    def create(stack: StackView) -> None:
        barrier.wait()
        try:
            plugin.do_pre_op(CONTEXT, stack, None, "CREATE")
            outcomes.append(True)
        except Denied:
            outcomes.append(False)

    threads = [threading.Thread(target=create, args=(stack,)) for stack in stacks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes) == [False, False, True, True]
    assert row_count(database) == 2

