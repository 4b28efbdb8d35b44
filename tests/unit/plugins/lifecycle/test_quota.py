"""The quota lifecycle plugin against a real SQLite file migrated with Kiln's own
migrations (the tests that take ``database`` run again on PostgreSQL:
tests/functional/plugins/lifecycle/test_quota_postgresql.py)."""

from __future__ import annotations

import dataclasses
import datetime
import pathlib
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from oslo_config import cfg

from engine.context import RequestContext
from engine.db import migration
from engine.db.session import Database
from engine.lifecycle.base import Denied, PluginServices
from engine.lifecycle.view import ResourceView, StackView, freeze
from plugins.lifecycle.quota import plugin as quota_plugin
from plugins.lifecycle.quota import store

NOW = datetime.datetime(2026, 11, 22, 14, 0, tzinfo=datetime.UTC)
# Migrate to this plugin's revision, not to head: later revisions are not its concern.
REVISION = "0014"  # 0003 made the table, 0014 added the trees


@pytest.fixture
def database(tmp_path: pathlib.Path) -> Iterator[Database]:
    sqlite = Database(f"sqlite:///{tmp_path}/quota.sqlite")
    migration.upgrade(sqlite, REVISION)
    yield sqlite
    sqlite.dispose()


def make_plugin(database: Database, tmp_path: pathlib.Path, **options: str
                ) -> quota_plugin.QuotaPlugin:
    """A configured plugin reading ``[lifecycle_quota]`` from a real config file."""
    config_file = tmp_path / f"kiln-{uuid.uuid4().hex[:6]}.conf"
    lines = ["[lifecycle_quota]"] + [f"{key} = {value}" for key, value in options.items()]
    config_file.write_text("\n".join(lines) + "\n")
    conf = cfg.ConfigOpts()
    conf(["--config-file", str(config_file)], project="kiln", default_config_files=[])
    plugin = quota_plugin.QuotaPlugin()
    plugin.configure(PluginServices(conf=conf, database=database, clock=lambda: NOW))
    return plugin


def make_stack(resources: int, *, tenant_id: str = "tenant-a", stack_id: str | None = None,
               action: str = "CREATE", dry_run: bool = False) -> StackView:
    views = {f"r{i}": ResourceView(name=f"r{i}", type="OS::Heat::None",
                                   properties=freeze({}), metadata=freeze({}), depends_on=())
             for i in range(resources)}
    return StackView(id=stack_id or str(uuid.uuid4()), name="s", tenant_id=tenant_id,
                     action=action, status=f"{action}_IN_PROGRESS", status_reason="",
                     template=freeze({}), parameters=freeze({}), environment=freeze({}),
                     resources=freeze(views), dry_run=dry_run)


def nested_in(parent: StackView, resource: str, resources: int, *,
              action: str = "CREATE", stack_id: str | None = None) -> StackView:
    """A stack nested in ``parent`` by its resource ``resource``, placed in the tree as
    the worker's views place it."""
    child = make_stack(resources, tenant_id=parent.tenant_id, stack_id=stack_id,
                       action=action)
    return dataclasses.replace(
        child, name=f"{parent.name}-{resource}", owner_id=parent.id,
        root_stack_id=parent.root_stack_id, nested_depth=parent.nested_depth + 1,
        path=(*parent.path, (resource, f"{parent.name}-{resource}")))


def resized(stack: StackView, resources: int, action: str) -> StackView:
    """The same stack with another resource count, as an update would build it."""
    return dataclasses.replace(make_stack(resources, tenant_id=stack.tenant_id,
                                          stack_id=stack.id, action=action),
                               name=stack.name, owner_id=stack.owner_id,
                               root_stack_id=stack.root_stack_id,
                               nested_depth=stack.nested_depth, path=stack.path)


def context(tenant_id: str = "tenant-a") -> RequestContext:
    return RequestContext(tenant_id=tenant_id, token_tenant_id=tenant_id, role="member")


def create(plugin: quota_plugin.QuotaPlugin, stack: StackView, *, fail: bool = False) -> None:
    """A whole create: pre-op, then post-op (also after a denial, as Kiln does)."""
    try:
        plugin.do_pre_op(context(stack.tenant_id), stack, action="CREATE")
    except Denied:
        plugin.do_post_op(context(stack.tenant_id), stack, action="CREATE",
                          is_stack_failure=True)
        raise
    plugin.do_post_op(context(stack.tenant_id), stack, action="CREATE", is_stack_failure=fail)


def usage(database: Database, tenant_id: str = "tenant-a") -> store.Usage:
    return store.QuotaStore(database, lambda: NOW).tenant(tenant_id)


def rows(database: Database) -> list[tuple[str, int, int, str]]:
    with database.read() as session:
        return [tuple(row) for row in session.execute(
            sa.select(store.USAGE.c.stack_id, store.USAGE.c.resources,
                      store.USAGE.c.pending_resources, store.USAGE.c.action)
            .order_by(store.USAGE.c.stack_id))]


def test_the_migration_creates_the_table_the_store_defines(database: Database) -> None:
    with database.engine.connect() as conn:
        diffs = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}),
                                 store.METADATA)
    ours = [diff for diff in diffs if store.USAGE.name in repr(diff)]
    assert ours == []


def test_the_trees_migration_gives_the_rows_before_it_their_root(
        tmp_path: pathlib.Path) -> None:
    # Both built-in plugins' rows, written before revision 0014 knew of trees.
    sqlite = Database(f"sqlite:///{tmp_path}/before.sqlite")
    migration.upgrade(sqlite, "0013")
    with sqlite.transaction() as session:
        # Rows of that revision's columns: today's models have columns it lacks.
        tenant_id = _insert_at_revision(session, "tenants", name="t")
        root = _insert_at_revision(session, "stacks", tenant_id=tenant_id, name="root")
        child = _insert_at_revision(session, "stacks", tenant_id=tenant_id, name="root-a",
                                    owner_id=root, nested_depth=1)
        grandchild = _insert_at_revision(session, "stacks", tenant_id=tenant_id,
                                         name="root-a-b", owner_id=child, nested_depth=2)
        ids = [root, child, grandchild, "gone"]  # a row whose stack is gone
        for stack_id in ids:
            session.execute(sa.text(
                "INSERT INTO lifecycle_quota_usage VALUES (:id, 't', 1, 0, 'CREATE', :now)"),
                {"id": stack_id, "now": NOW})
            session.execute(sa.text(
                "INSERT INTO lifecycle_placement_reservations (stack_id, resource_name, "
                "state, action, tenant_id, resource_type, rack, host, amounts, created_at) "
                "VALUES (:id, 'r', 'held', 'CREATE', 't', 'T', 'a', 'h', '{}', :now)"),
                {"id": stack_id, "now": NOW})
    migration.upgrade(sqlite, "0014")
    try:
        with sqlite.read() as session:
            for table in ("lifecycle_quota_usage", "lifecycle_placement_reservations"):
                roots = dict(session.execute(sa.text(
                    f"SELECT stack_id, root_stack_id FROM {table}")).all())
                assert roots == {root: root, child: root, grandchild: root,
                                 "gone": "gone"}
    finally:
        sqlite.dispose()


def _insert_at_revision(session: Any, table_name: str, **values: Any) -> str:
    """A row of ``table_name`` as the database has it now (reflected), with a new id: the
    given ``values``, and an empty value of its type for every other required column."""
    table = sa.Table(table_name, sa.MetaData(), autoload_with=session.connection())
    row_id = str(uuid.uuid4())
    row: dict[str, Any] = {"id": row_id, **values}
    for column in table.c:
        if column.name in row or column.nullable or column.server_default is not None:
            continue
        python_type = column.type.python_type if not isinstance(
            column.type, sa.types.NullType) else str
        row[column.name] = (NOW if python_type is datetime.datetime
                            else 0 if python_type in (int, bool, float) else "")
    session.execute(table.insert().values(**row))
    return row_id


def test_the_stack_limit_denies_naming_tenant_and_counts(database: Database,
                                                         tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_stacks_per_tenant="2")
    create(plugin, make_stack(1))
    create(plugin, make_stack(1))
    with pytest.raises(Denied) as denied:
        create(plugin, make_stack(1))
    assert str(denied.value) == "stack quota exceeded: tenant tenant-a has 2 stacks of 2 allowed"
    assert usage(database) == store.Usage(stacks=2, resources=2)
    create(plugin, make_stack(1, tenant_id="tenant-b"))  # other tenants are not affected


def test_the_resource_limit_denies_naming_tenant_and_counts(database: Database,
                                                            tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_resources_per_tenant="10")
    create(plugin, make_stack(6))
    with pytest.raises(Denied) as denied:
        create(plugin, make_stack(5))
    assert str(denied.value) == ("resource quota exceeded: tenant tenant-a has 6 resources "
                                 "of 10 allowed, this stack needs 5 more")
    create(plugin, make_stack(4))  # exactly at the limit is allowed
    assert usage(database) == store.Usage(stacks=2, resources=10)


def test_the_defaults_are_heats_512_stacks_and_no_resource_limit(
        database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    create(plugin, make_stack(5000))
    description = plugin.describe_stack(rows(database)[0][0])
    assert description["tenant_limits"] == {"stacks": 512, "resources": -1,
                                            "resources_per_stack": -1}


def test_a_failed_create_keeps_counting_what_it_left_behind(database: Database,
                                                             tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_stacks_per_tenant="2",
                         max_resources_per_tenant="10")
    stack = make_stack(5)
    plugin.do_pre_op(context(), stack, action="CREATE")
    built = dict(stack.resources)
    built["r0"] = dataclasses.replace(built["r0"], status="CREATE_COMPLETE",
                                      physical_resource_id="p-0")
    built["r1"] = dataclasses.replace(built["r1"], status="CREATE_FAILED",
                                      physical_resource_id="p-1")
    built["r2"] = dataclasses.replace(built["r2"], status="CREATE_FAILED")
    after = dataclasses.replace(stack, status="CREATE_FAILED", resources=freeze(built))
    plugin.do_post_op(context(), after, action="CREATE", is_stack_failure=True)
    assert usage(database) == store.Usage(stacks=1, resources=2)
    plugin.do_post_op(context(), after, action="DELETE", is_stack_failure=False)
    assert rows(database) == []


def test_a_failed_create_that_made_nothing_releases_its_reservation(
        database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_stacks_per_tenant="1",
                         max_resources_per_tenant="5")
    stack = make_stack(5)
    plugin.do_pre_op(context(), stack, action="CREATE")
    assert usage(database) == store.Usage(stacks=1, resources=5)
    with pytest.raises(Denied):  # the reservation holds while the create runs
        plugin.do_pre_op(context(), make_stack(1), action="CREATE")
    plugin.do_post_op(context(), stack, action="CREATE", is_stack_failure=True)
    assert rows(database) == []
    create(plugin, make_stack(5))


def test_a_denied_create_changes_nothing(database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_resources_per_tenant="3")
    kept = make_stack(2)
    create(plugin, kept)
    with pytest.raises(Denied):
        create(plugin, make_stack(2))  # pre-op denies, post-op(failure) follows
    assert rows(database) == [(kept.id, 2, 0, "CREATE")]


def test_repeated_calls_are_idempotent(database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_stacks_per_tenant="1",
                         max_resources_per_tenant="4")
    stack = make_stack(4)
    # A worker died after the pre-op and before its record: the next worker calls again.
    plugin.do_pre_op(context(), stack, action="CREATE")
    plugin.do_pre_op(context(), stack, action="CREATE")
    assert rows(database) == [(stack.id, 4, 0, "CREATE")]
    for _ in range(2):
        plugin.do_post_op(context(), stack, action="CREATE")
    assert usage(database) == store.Usage(stacks=1, resources=4)
    for _ in range(2):
        plugin.do_post_op(context(), stack, action="DELETE")
    assert rows(database) == []


def test_a_delete_releases_and_a_failed_delete_keeps(database: Database,
                                                     tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_stacks_per_tenant="1")
    stack = make_stack(3)
    create(plugin, stack)
    deleting = make_stack(3, stack_id=stack.id, action="DELETE")
    assert plugin.do_pre_op(context(), deleting, action="DELETE") is None
    plugin.do_post_op(context(), deleting, action="DELETE", is_stack_failure=True)
    assert usage(database) == store.Usage(stacks=1, resources=3)
    with pytest.raises(Denied):
        create(plugin, make_stack(1))
    plugin.do_pre_op(context(), deleting, action="DELETE")
    plugin.do_post_op(context(), deleting, action="DELETE")
    assert rows(database) == []
    create(plugin, make_stack(1))


def test_abandon_releases_and_adopt_reserves(database: Database,
                                             tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_stacks_per_tenant="1")
    stack = make_stack(2)
    create(plugin, stack)
    abandoning = make_stack(2, stack_id=stack.id, action="ABANDON")
    plugin.do_pre_op(context(), abandoning, action="ABANDON")
    plugin.do_post_op(context(), abandoning, action="ABANDON")
    assert rows(database) == []
    adopted = make_stack(2, action="ADOPT")
    plugin.do_pre_op(context(), adopted, action="ADOPT")
    plugin.do_post_op(context(), adopted, action="ADOPT")
    assert rows(database) == [(adopted.id, 2, 0, "ADOPT")]
    with pytest.raises(Denied, match="has 1 stacks of 1 allowed"):
        plugin.do_pre_op(context(), make_stack(1, action="ADOPT"), action="ADOPT")


def test_an_update_holds_the_larger_size_then_settles(database: Database,
                                                      tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_resources_per_tenant="10")
    stack = make_stack(3)
    create(plugin, stack)
    stored, grown = resized(stack, 3, "UPDATE"), resized(stack, 7, "UPDATE")
    plugin.do_pre_op(context(), stored, grown, action="UPDATE")
    assert rows(database) == [(stack.id, 3, 4, "UPDATE")]
    assert usage(database).resources == 7
    with pytest.raises(Denied, match="has 7 resources of 10 allowed, this stack needs 4 more"):
        plugin.do_pre_op(context(), make_stack(4), action="CREATE")
    plugin.do_post_op(context(), stored, grown, action="UPDATE")
    assert rows(database) == [(stack.id, 7, 0, "UPDATE")]

    # A failed update counts the stored stack again.
    stored, shrunk = resized(stack, 7, "UPDATE"), resized(stack, 2, "UPDATE")
    plugin.do_pre_op(context(), stored, shrunk, action="UPDATE")
    assert rows(database) == [(stack.id, 7, 0, "UPDATE")]
    plugin.do_post_op(context(), stored, shrunk, action="UPDATE", is_stack_failure=True)
    assert rows(database) == [(stack.id, 7, 0, "UPDATE")]


def test_an_update_that_grows_past_the_limit_is_denied_and_one_that_shrinks_is_not(
        database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_resources_per_tenant="10")
    other, stack = make_stack(4), make_stack(5)
    create(plugin, other)
    create(plugin, stack)
    stored, grown = resized(stack, 5, "UPDATE"), resized(stack, 7, "UPDATE")
    with pytest.raises(Denied) as denied:
        plugin.do_pre_op(context(), stored, grown, action="UPDATE")
    assert str(denied.value) == ("resource quota exceeded: tenant tenant-a has 9 resources "
                                 "of 10 allowed, this stack needs 2 more")
    plugin.do_post_op(context(), stored, grown, action="UPDATE", is_stack_failure=True)
    assert usage(database).resources == 9

    # The operator lowers the limit below the usage: shrinking must stay possible.
    lowered = make_plugin(database, tmp_path, max_resources_per_tenant="3")
    shrunk = resized(stack, 4, "UPDATE")
    lowered.do_pre_op(context(), stored, shrunk, action="UPDATE")
    lowered.do_post_op(context(), stored, shrunk, action="UPDATE")
    assert usage(database).resources == 8


def test_a_rollback_leaves_the_count_of_the_stack_it_leaves(database: Database,
                                                            tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path)
    stack = make_stack(3)
    create(plugin, stack)
    stored, grown = resized(stack, 3, "ROLLBACK"), resized(stack, 6, "ROLLBACK")
    plugin.do_pre_op(context(), stored, grown, action="ROLLBACK")
    plugin.do_post_op(context(), stored, grown, action="ROLLBACK", is_stack_failure=True)
    assert rows(database) == [(stack.id, 6, 0, "ROLLBACK")]  # either set may still exist
    plugin.do_post_op(context(), stored, grown, action="ROLLBACK")
    assert rows(database) == [(stack.id, 3, 0, "ROLLBACK")]  # the stored stack again

    # The rollback of a create (no current_stack) gives the slot back, as the failed
    # create's own post-op does.
    created = make_stack(2)
    plugin.do_pre_op(context(), created, action="CREATE")
    plugin.do_post_op(context(), resized(created, 2, "ROLLBACK"), action="ROLLBACK")
    assert [row[0] for row in rows(database)] == [stack.id]


@pytest.mark.parametrize("action", ["SUSPEND", "RESUME", "CHECK", "CANCEL"])
def test_other_actions_neither_decide_nor_write(database: Database, tmp_path: pathlib.Path,
                                                action: str) -> None:
    plugin = make_plugin(database, tmp_path, max_stacks_per_tenant="0",
                         max_resources_per_tenant="0")
    stack = make_stack(3, action=action)
    assert plugin.do_pre_op(context(), stack, action=action) is None
    plugin.do_post_op(context(), stack, action=action)
    plugin.do_post_op(context(), stack, action=action, is_stack_failure=True)
    assert rows(database) == []


def test_tenant_overrides_replace_the_defaults(database: Database,
                                               tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_stacks_per_tenant="1",
                         max_resources_per_tenant="2",
                         tenant_overrides="big:-1/-1, small:0/5")
    for _ in range(3):
        create(plugin, make_stack(100, tenant_id="big"))
    with pytest.raises(Denied, match="tenant small has 0 stacks of 0 allowed"):
        create(plugin, make_stack(1, tenant_id="small"))
    create(plugin, make_stack(2, tenant_id="normal"))
    with pytest.raises(Denied, match="tenant normal has 1 stacks of 1 allowed"):
        create(plugin, make_stack(1, tenant_id="normal"))
    assert usage(database, "big") == store.Usage(stacks=3, resources=300)


# --- trees of nested stacks ----------------------------------------------------------------


def test_a_nested_tree_is_one_stack_and_its_resources_count_together(
        database: Database, tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_stacks_per_tenant="1",
                         max_resources_per_tenant="20", max_resources_per_stack="7")
    root = make_stack(3)  # one of the three owns the child: it counts as Heat counts it
    create(plugin, root)
    child = nested_in(root, "group", 2)
    create(plugin, child)  # no second stack: the tree is one
    grandchild = nested_in(child, "0", 2)
    create(plugin, grandchild)
    assert usage(database) == store.Usage(stacks=1, resources=7)

    # Splitting the stack further does not pass the per-stack limit...
    with pytest.raises(Denied) as denied:
        create(plugin, nested_in(child, "1", 1))
    assert str(denied.value) == ("stack resource quota exceeded: stack s and the stacks "
                                 "nested in it have 7 resources of 7 allowed per stack, "
                                 "this nested stack needs 1 more")
    # ... nor does an update of a nested stack that grows it.
    with pytest.raises(Denied, match="have 7 resources of 7 allowed per stack, this nested "
                       "stack needs 2 more"):
        plugin.do_pre_op(context(), resized(grandchild, 2, "UPDATE"),
                         resized(grandchild, 4, "UPDATE"), action="UPDATE")
    # The tenant's stack limit counts top-level stacks only.
    with pytest.raises(Denied, match="tenant tenant-a has 1 stacks of 1 allowed"):
        create(plugin, make_stack(1))

    # What a nested stack gives back is the tree's again.
    deleting = resized(grandchild, 2, "DELETE")
    plugin.do_pre_op(context(), deleting, action="DELETE")
    plugin.do_post_op(context(), deleting, action="DELETE")
    create(plugin, nested_in(child, "1", 2))
    assert plugin.describe_stack(child.id)["tree_usage"] == {"resources": 7}
    assert plugin.describe_stack(child.id)["root_stack_id"] == root.id


def test_each_tree_has_its_own_per_stack_limit(database: Database,
                                               tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_resources_per_stack="4",
                         tenant_overrides="tenant-b:10/100/6")
    first, second = make_stack(3), make_stack(3)
    create(plugin, first)
    create(plugin, second)
    create(plugin, nested_in(first, "x", 1))
    with pytest.raises(Denied, match="stack s and the stacks nested in it have 3 resources "
                       "of 4 allowed per stack, this nested stack needs 2 more"):
        create(plugin, nested_in(second, "x", 2))
    with pytest.raises(Denied, match=r"this stack needs 5 more"):
        create(plugin, make_stack(5))  # a top-level stack alone, too
    other = make_stack(4, tenant_id="tenant-b")  # the override's own per-stack limit
    create(plugin, other)
    create(plugin, nested_in(other, "x", 2))
    assert usage(database, "tenant-b") == store.Usage(stacks=1, resources=6)


def test_a_dry_run_of_a_nested_stack_counts_its_tree(database: Database,
                                                     tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_resources_per_stack="5")
    root = make_stack(3)
    create(plugin, root)
    fits = dataclasses.replace(nested_in(root, "a", 2), dry_run=True)
    assert plugin.do_pre_op(context(), fits, action="CREATE") is None
    with pytest.raises(Denied, match="have 3 resources of 5 allowed per stack"):
        plugin.do_pre_op(context(), dataclasses.replace(nested_in(root, "a", 3),
                                                        dry_run=True), action="CREATE")
    assert [row[0] for row in rows(database)] == [root.id]


def test_a_dry_run_decides_and_writes_nothing(database: Database,
                                              tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_stacks_per_tenant="2",
                         max_resources_per_tenant="10")
    kept = make_stack(8)
    create(plugin, kept)
    assert plugin.do_pre_op(context(), make_stack(2, dry_run=True), action="CREATE") is None
    with pytest.raises(Denied, match="has 8 resources of 10 allowed, this stack needs 3 more"):
        plugin.do_pre_op(context(), make_stack(3, dry_run=True), action="CREATE")
    preview = make_stack(12, stack_id=kept.id, action="UPDATE", dry_run=True)
    with pytest.raises(Denied, match="this stack needs 4 more"):
        plugin.do_pre_op(context(), resized(kept, 8, "UPDATE"), preview, action="UPDATE")
    dry = make_stack(1, dry_run=True)
    plugin.do_pre_op(context(), dry, action="CREATE")
    plugin.do_post_op(context(), dry, action="CREATE", is_stack_failure=True)
    assert rows(database) == [(kept.id, 8, 0, "CREATE")]
    assert quota_plugin.QuotaPlugin.supports_dry_run


def test_describe_stack_shows_the_row_and_the_tenant_limits(database: Database,
                                                            tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, tenant_overrides="tenant-a:4/40")
    first, second = make_stack(3), make_stack(5)
    create(plugin, first)
    plugin.do_pre_op(context(), second, action="CREATE")
    assert plugin.describe_stack(second.id) == {
        "tenant_id": "tenant-a",
        "resources": 5,
        "pending_resources": 0,
        "action": "CREATE",
        "updated_at": "2026-11-22T14:00:00+00:00",
        "root_stack_id": second.id,
        "tenant_limits": {"stacks": 4, "resources": 40, "resources_per_stack": -1},
        "tenant_usage": {"stacks": 2, "resources": 8},
        "tree_usage": {"resources": 5},
    }
    assert plugin.describe_stack(str(uuid.uuid4())) is None
    assert plugin.get_ordinal() == 20


@pytest.mark.parametrize(("value", "problem"), [
    ("t1:10", "t1: '10' is not <stacks>/<resources>[/<resources per stack>]"),
    ("t1:10/", "t1: '10/' is not <stacks>/<resources>"),
    ("t1:/10", "t1: '/10' is not <stacks>/<resources>"),
    ("t1:a/b", "t1: 'a/b' is not <stacks>/<resources>"),
    ("t1:-2/5", "t1: '-2/5' is not <stacks>/<resources>"),
    ("t1:1/2/", "t1: '1/2/' is not <stacks>/<resources>"),
    ("t1:1/2/3/4", "t1: '1/2/3/4' is not <stacks>/<resources>"),
    ("t1:1/2/-3", "t1: '1/2/-3' is not <stacks>/<resources>"),
    ("t1:+1/2", "t1: '+1/2' is not <stacks>/<resources>"),
    ("t1:1 / 2", "t1: '1 / 2' is not <stacks>/<resources>"),
    ("t1:1/2,t1:3/4", "Duplicate key t1"),
    ("t1", "NAME:VALUE"),
    (":1/2", "Key name should not be empty"),
])
def test_bad_overrides_stop_configure_naming_the_option(tmp_path: pathlib.Path, value: str,
                                                        problem: str) -> None:
    database = Database(f"sqlite:///{tmp_path}/unused.sqlite")
    with pytest.raises(ValueError, match="tenant_overrides") as error:
        make_plugin(database, tmp_path, tenant_overrides=value)
    assert "[lifecycle_quota] tenant_overrides" in str(error.value)
    assert problem in str(error.value)


@pytest.mark.parametrize(("option", "value"), [
    ("max_stacks_per_tenant", "-2"),
    ("max_resources_per_tenant", "many"),
    ("max_resources_per_stack", "-5"),
])
def test_bad_limits_stop_configure_naming_the_option(tmp_path: pathlib.Path, option: str,
                                                     value: str) -> None:
    database = Database(f"sqlite:///{tmp_path}/unused.sqlite")
    with pytest.raises(ValueError, match=rf"\[lifecycle_quota\] {option}: "):
        make_plugin(database, tmp_path, **{option: value})


def test_list_opts_names_the_group() -> None:
    [(group, opts)] = quota_plugin.list_opts()
    assert group == "lifecycle_quota"
    assert [opt.name for opt in opts] == ["max_stacks_per_tenant", "max_resources_per_tenant",
                                          "max_resources_per_stack", "tenant_overrides"]


def race(plugin: quota_plugin.QuotaPlugin, stacks: list[StackView]) -> list[bool]:
    """Run the pre-ops at once; True for each one that was allowed."""
    barrier = threading.Barrier(len(stacks))
    results: list[bool | BaseException] = [False] * len(stacks)

    def run(index: int) -> None:
        barrier.wait()
        try:
            plugin.do_pre_op(context(stacks[index].tenant_id), stacks[index], action="CREATE")
            results[index] = True
        except Denied:
            results[index] = False
        except BaseException as exc:  # noqa: BLE001 -- reported by the assertion below
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(stacks))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert all(isinstance(result, bool) for result in results), results
    return [result is True for result in results]


def test_two_creates_racing_for_the_last_slot_one_wins(database: Database,
                                                       tmp_path: pathlib.Path) -> None:
    plugin = make_plugin(database, tmp_path, max_stacks_per_tenant="1")
    # A tenant with no rows yet is the case row locks (SELECT ... FOR UPDATE) get wrong.
    for round_number in range(10):
        tenant_id = f"racer-{round_number}"
        results = race(plugin, [make_stack(1, tenant_id=tenant_id) for _ in range(2)])
        assert sorted(results) == [False, True]
        assert usage(database, tenant_id) == store.Usage(stacks=1, resources=1)

