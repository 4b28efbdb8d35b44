"""engine.db.queries on SQLite: tenants and tokens, stack lookups, the stack list's
filters, order and pages, the trees of nested stacks, resource and event reads."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from engine.db import queries
from engine.db.models import Event, Operation, Resource, Stack, Token
from engine.db.session import Database
from engine.errors import ActionInProgress, Conflict, EntityNotFound, StackExists
from engine.vocabulary import Action, OperationState, Status
from tests.unit.db.conftest import (
    NOW,
    TEMPLATE,
    add_operation,
    add_resource,
    add_stack,
    add_tenant,
    later,
)

# --- tenants and tokens ---------------------------------------------------------------------


def test_tenants_are_found_by_id_or_name_and_listed_by_name(db: Database) -> None:
    with db.transaction() as session:
        beta = queries.add_tenant(session, "beta", NOW)
        alpha = queries.add_tenant(session, "alpha", NOW)

    with db.read() as session:
        assert queries.find_tenant(session, beta.id) is not None
        assert queries.get_tenant(session, "beta").id == beta.id
        assert queries.find_tenant(session, "gamma") is None
        with pytest.raises(EntityNotFound):
            queries.get_tenant(session, "gamma")
        assert [t.id for t in queries.list_tenants(session)] == [alpha.id, beta.id]


def test_a_tenant_name_is_taken_once(db: Database) -> None:
    with db.transaction() as session:
        queries.add_tenant(session, "t", NOW)
    with pytest.raises(Conflict, match="A tenant named t already exists."), \
            db.transaction() as session:
        queries.add_tenant(session, "t", NOW)


def test_a_revoked_token_is_not_live_and_use_is_recorded(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        first = queries.add_token(session, tenant_id, "member", "hash-1", NOW)
        second = queries.add_token(session, tenant_id, "admin", "hash-2", later(1))
        session.get_one(Token, second.id).revoked_at = later(2)

    with db.transaction() as session:
        queries.touch_token(session, first.id, later(3))
    with db.read() as session:
        live = queries.find_live_token(session, "hash-1")
        assert live is not None and (live.role, live.last_used_at) == ("member", later(3))
        assert queries.find_live_token(session, "hash-2") is None
        assert [t.id for t in queries.list_tokens(session, tenant_id)] == [first.id, second.id]


# --- stack lookups --------------------------------------------------------------------------


def test_stacks_are_found_by_id_deleted_or_not_and_by_name_live_only(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        other = add_tenant(session).id
        gone = add_stack(session, tenant_id, "s", deleted_at=NOW)
        live = add_stack(session, tenant_id, "s", created_at=later(1))

    with db.read() as session:
        found = queries.find_stack_by_id(session, tenant_id, gone.id)
        assert found is not None and found.deleted_at == NOW
        assert queries.find_stack_by_id(session, other, gone.id) is None
        by_name = queries.find_live_stack_by_name(session, tenant_id, "s")
        assert by_name is not None and by_name.id == live.id
        assert queries.get_stack(session, tenant_id, "s", live.id).id == live.id
        with pytest.raises(EntityNotFound):
            queries.get_stack(session, tenant_id, "other-name", live.id)
        assert queries.load_stack(session, live.id).template == TEMPLATE
        with pytest.raises(EntityNotFound):
            queries.load_stack(session, "no-such-id")


def test_live_stacks_are_counted_without_nested_or_deleted_ones(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        top = add_stack(session, tenant_id)
        add_stack(session, tenant_id, owner_id=top.id, parent_resource="r")
        add_stack(session, tenant_id, deleted_at=NOW)
        add_stack(session, add_tenant(session).id)

    with db.read() as session:
        assert queries.count_live_stacks(session, tenant_id) == 1


def test_a_stack_is_busy_while_an_operation_is_unfinished(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        add_operation(session, stack, state=OperationState.COMPLETE, finished_at=NOW)
    with db.read() as session:
        assert not queries.is_busy(session, stack.id)
        assert queries.unfinished_operation(session, stack.id) is None

    with db.transaction() as session:
        running = add_operation(session, stack, state=OperationState.RUNNING)
    with db.read() as session:
        assert queries.is_busy(session, stack.id)
        found = queries.unfinished_operation(session, stack.id)
        assert found is not None and found.id == running.id
    with db.transaction() as session:
        locked, operation = queries.lock_stack(session, tenant_id, stack.name, stack.id)
        assert (locked.id, operation and operation.id) == (stack.id, running.id)


def test_a_new_stack_comes_with_its_operation_and_its_first_event(
        db: Database, tenant_id: str) -> None:
    db.work.wait(0)
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, "s", action=Action.CREATE,
                          status=Status.IN_PROGRESS, status_reason="Stack CREATE started")
    with db.transaction() as session:
        taken = Stack(**{column: getattr(stack, column) for column in (
            "tenant_id", "name", "action", "status", "template", "parameters", "environment",
            "files", "tags", "created_at")}, id="another-id")
        with pytest.raises(StackExists):
            queries.add_stack_with_operation(session, taken, Operation(), NOW)

    fresh = Stack(id="fresh-id", tenant_id=tenant_id, name="fresh", action=Action.CREATE,
                  status=Status.IN_PROGRESS, status_reason="Stack CREATE started",
                  template=TEMPLATE, parameters={}, environment={}, files={}, tags=[],
                  created_at=NOW)
    with db.transaction() as session:
        queries.add_stack_with_operation(session, fresh, Operation(
            id="op-id", stack_id="fresh-id", action=Action.CREATE,
            state=OperationState.PENDING, created_at=NOW, deadline_at=later(60)), NOW)

    assert db.work.wait(0)
    with db.read() as session:
        [event] = session.scalars(select(Event).where(Event.stack_id == "fresh-id"))
        assert queries.unfinished_operation(session, "fresh-id") is not None
    assert (event.resource_name, event.physical_resource_id, event.resource_type,
            event.action, event.status, event.reason) == (
        "fresh", "fresh-id", queries.STACK_TYPE, Action.CREATE, Status.IN_PROGRESS,
        "Stack CREATE started")


def test_a_second_unfinished_operation_is_action_in_progress(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, "busy", action=Action.UPDATE,
                          status=Status.IN_PROGRESS)
        add_operation(session, stack, action=Action.UPDATE)

    with db.transaction() as session:
        stack = session.get_one(Stack, stack.id)
        with pytest.raises(ActionInProgress, match="busy"):
            queries.add_operation(session, stack, Operation(
                id="second", stack_id=stack.id, action=Action.DELETE,
                state=OperationState.PENDING, created_at=NOW, deadline_at=later(60)))
        # The savepoint rolled back alone: the transaction goes on.
        assert queries.is_busy(session, stack.id)


# --- nested stacks --------------------------------------------------------------------------


def tree(db: Database, tenant_id: str) -> dict[str, Stack]:
    """root -> (a -> a1, b), and a deleted child of root."""
    with db.transaction() as session:
        root = add_stack(session, tenant_id, "root")
        a = add_stack(session, tenant_id, "root-a", owner_id=root.id, parent_resource="a",
                      nested_depth=1)
        b = add_stack(session, tenant_id, "root-b", owner_id=root.id, parent_resource="b",
                      nested_depth=1)
        a1 = add_stack(session, tenant_id, "root-a-1", owner_id=a.id, parent_resource="x",
                       nested_depth=2)
        old = add_stack(session, tenant_id, "root-old", owner_id=root.id,
                        parent_resource="a", nested_depth=1, deleted_at=NOW)
        return {"root": root, "a": a, "b": b, "a1": a1, "old": old}


def test_live_children_and_descendants(db: Database, tenant_id: str) -> None:
    stacks = tree(db, tenant_id)
    ids = {name: stack.id for name, stack in stacks.items()}

    with db.read() as session:
        child = queries.live_child_stack(session, ids["root"], "a")
        assert child is not None and child.id == ids["a"]
        assert queries.live_child_stack(session, ids["root"], "zzz") is None
        assert queries.live_children(session, ids["root"]) == {
            "a": ("root-a", ids["a"]), "b": ("root-b", ids["b"])}
        assert queries.descendants(session, ids["root"], 1) == {
            ids["a"]: "root-a", ids["b"]: "root-b", ids["old"]: "root-old"}
        assert queries.descendants(session, ids["root"], 5) == {
            ids["a"]: "root-a", ids["b"]: "root-b", ids["old"]: "root-old",
            ids["a1"]: "root-a-1"}
        assert queries.descendants(session, ids["a1"], 5) == {}


def test_the_resources_of_a_tree_are_counted_from_any_of_its_stacks(
        db: Database, tenant_id: str) -> None:
    stacks = tree(db, tenant_id)
    grown = {**TEMPLATE, "resources": {"x": {"type": "OS::Heat::None"}}}
    with db.transaction() as session:
        for name, count in (("root", 2), ("a", 1), ("a1", 3), ("old", 5)):
            for i in range(count):
                add_resource(session, stacks[name], f"r{i}")
        add_operation(session, stacks["b"], Action.CREATE)  # not planned yet
        add_operation(session, stacks["a"], Action.UPDATE,
                      payload={"target": {"template": grown, "parameters": {}}})
        add_operation(session, stacks["a1"], Action.UPDATE, payload={"planned": True})

    with db.transaction() as session:
        counted = queries.tree_resources(session, stacks["a1"].id, lock=True)
        assert queries.count_resources(session, stacks["root"].id) == 2

    assert counted.rows == 6, "the deleted child's are not the tree's"
    assert sorted(counted.unplanned, key=lambda pair: pair[1]) == [(TEMPLATE, 0), (grown, 1)]


# --- the stack list -------------------------------------------------------------------------


def listed(db: Database, tenant_id: str | None, **options: Any) -> tuple[list[str], int]:
    arguments: dict[str, Any] = {"filters": {}, "show_deleted": False, "limit": None,
                                 "marker": None, "sort_keys": [], "sort_dir": None}
    with db.read() as session:
        found, total = queries.list_stacks(session, tenant_id, **{**arguments, **options})
    return [stack.name for stack in found], total


@pytest.fixture
def some_stacks(db: Database, tenant_id: str) -> dict[str, str]:
    """Four live top-level stacks, oldest first: a, b, c, d; a nested one, a deleted one
    and one of another tenant. Their ids, by name."""
    with db.transaction() as session:
        made = {
            "a": add_stack(session, tenant_id, "a", created_at=later(1), tags=["x", "y"],
                           updated_at=later(20)),
            "b": add_stack(session, tenant_id, "b", created_at=later(2), tags=["x"],
                           status=Status.FAILED),
            "c": add_stack(session, tenant_id, "c", created_at=later(3), tags=["y", "z"],
                           updated_at=later(10)),
            "d": add_stack(session, tenant_id, "d", created_at=later(4)),
            "gone": add_stack(session, tenant_id, "gone", created_at=later(5),
                              deleted_at=later(6)),
            "other": add_stack(session, add_tenant(session).id, "other", created_at=later(7)),
        }
        made["child"] = add_stack(session, tenant_id, "child", created_at=later(8),
                                  owner_id=made["a"].id, parent_resource="r")
        return {name: stack.id for name, stack in made.items()}


def test_the_list_is_the_tenants_live_top_level_stacks_newest_first(
        db: Database, tenant_id: str, some_stacks: dict[str, str]) -> None:
    assert listed(db, tenant_id) == (["d", "c", "b", "a"], 4)
    assert listed(db, tenant_id, show_deleted=True) == (["gone", "d", "c", "b", "a"], 5)
    assert listed(db, tenant_id, show_nested=True) == (["child", "d", "c", "b", "a"], 5)
    assert listed(db, None)[1] == 5, "every tenant's"


def test_filters_match_any_of_their_values(
        db: Database, tenant_id: str, some_stacks: dict[str, str]) -> None:
    assert listed(db, tenant_id, filters={"status": [Status.FAILED]}) == (["b"], 1)
    assert listed(db, tenant_id, filters={"name": ["a", "c", "nope"]}) == (["c", "a"], 2)
    assert listed(db, tenant_id, filters={"name": ["a", "b"], "status": [Status.COMPLETE]}
                  ) == (["a"], 1)
    assert listed(db, tenant_id, filters={"parent": [some_stacks["a"]]}) == (["child"], 1), \
        "asking for a parent's children shows nested stacks"


@pytest.mark.parametrize(("tags", "names"), [
    pytest.param(queries.TagFilter(all=["x", "y"]), ["a"], id="all"),
    pytest.param(queries.TagFilter(any=["z", "x"]), ["c", "b", "a"], id="any"),
    pytest.param(queries.TagFilter(not_all=["x", "y"]), ["d", "c", "b"], id="not-all"),
    pytest.param(queries.TagFilter(not_any=["x"]), ["d", "c"], id="not-any"),
    pytest.param(queries.TagFilter(any=["y"], not_any=["z"]), ["a"], id="together"),
])
def test_tag_filters(db: Database, tenant_id: str, some_stacks: dict[str, str],
                     tags: queries.TagFilter, names: list[str]) -> None:
    assert listed(db, tenant_id, tags=tags) == (names, len(names))


def test_sort_keys_and_directions(
        db: Database, tenant_id: str, some_stacks: dict[str, str]) -> None:
    assert listed(db, tenant_id, sort_keys=["stack_name"])[0] == ["a", "b", "c", "d"]
    assert listed(db, tenant_id, sort_keys=["stack_name"], sort_dir="desc")[0] == [
        "d", "c", "b", "a"]
    assert listed(db, tenant_id, sort_dir="asc")[0] == ["a", "b", "c", "d"]
    assert listed(db, tenant_id, sort_keys=["no_such_key"])[0] == ["d", "c", "b", "a"]
    # Never updated sorts first when ascending (b and d, then by id).
    by_update = listed(db, tenant_id, sort_keys=["updated_time"])[0]
    assert sorted(by_update[:2]) == ["b", "d"] and by_update[2:] == ["c", "a"]


def test_pages_follow_a_marker_and_count_every_match(
        db: Database, tenant_id: str, some_stacks: dict[str, str]) -> None:
    assert listed(db, tenant_id, limit=2) == (["d", "c"], 4)
    assert listed(db, tenant_id, limit=2, marker=some_stacks["c"]) == (["b", "a"], 4)
    assert listed(db, tenant_id, sort_keys=["updated_time"], marker=some_stacks["c"])[0] == [
        "a"]
    assert listed(db, tenant_id, marker="no-such-stack") == (["d", "c", "b", "a"], 4)


# --- resources ------------------------------------------------------------------------------


def test_resource_reads(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        for name in ("b", "a", "c"):
            add_resource(session, stack, name)
        add_resource(session, add_stack(session, tenant_id), "a")

    with db.read() as session:
        assert [r.name for r in queries.list_resources(session, stack.id)] == ["a", "b", "c"]
        assert sorted(r.name for r in queries.list_resources_named(
            session, stack.id, ["c", "a", "zzz"])) == ["a", "c"]
        assert queries.list_resources_named(session, stack.id, []) == []
        assert queries.get_resource(session, stack, "b").stack_id == stack.id
        with pytest.raises(EntityNotFound):
            queries.get_stack_resource(session, stack.id, "zzz")


def test_an_update_forgets_the_resources_it_deleted(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        add_resource(session, stack, "deleted", action=Action.DELETE, status=Status.COMPLETE)
        add_resource(session, stack, "failed", action=Action.DELETE, status=Status.FAILED)
        add_resource(session, stack, "kept")

    with db.transaction() as session:
        queries.drop_deleted_resources(session, stack.id)
    with db.read() as session:
        assert [r.name for r in queries.list_resources(session, stack.id)] == ["failed", "kept"]

    with db.transaction() as session:
        queries.delete_resources(session, stack.id)
    with db.read() as session:
        assert queries.list_resources(session, stack.id) == []


def test_a_replacements_physical_id_is_recorded_on_what_it_replaced(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        replacing = add_resource(session, stack, "r", replaced={
            "type": "T", "physical_id": None, "properties": {}, "data": {}, "generation": 0})
        plain = add_resource(session, stack, "plain")

    with db.transaction() as session:
        queries.record_replaced_physical_id(session, replacing.id, "old-id", {"k": 1})
        queries.record_replaced_physical_id(session, plain.id, "x", {})
        queries.record_replaced_physical_id(session, 999999, "x", {})

    with db.read() as session:
        assert session.get_one(Resource, replacing.id).replaced == {
            "type": "T", "physical_id": "old-id", "properties": {}, "data": {"k": 1},
            "generation": 0}
        assert session.get_one(Resource, plain.id).replaced is None


# --- events ---------------------------------------------------------------------------------


def add_events(db: Database, stack: Stack, *rows: tuple[str, str, str]) -> list[str]:
    """(resource name, action, status) each: the events' ids, in order."""
    with db.transaction() as session:
        return [queries.add_event(session, stack_id=stack.id, resource_name=name,
                                  physical_resource_id="", resource_type=f"T::{name}",
                                  action=action, status=status, reason="", now=NOW).id
                for name, action, status in rows]


def test_an_event_keeps_255_characters_of_its_reason_and_marks_plugin_calls(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        queries.add_event(session, stack_id=stack.id, resource_name="r",
                          physical_resource_id="", resource_type="T", action=Action.CREATE,
                          status=Status.FAILED, reason="x" * 300, now=NOW)
        queries.add_event(session, stack_id=stack.id, resource_name=stack.name,
                          physical_resource_id=stack.id, resource_type=queries.STACK_TYPE,
                          action=Action.CREATE, status=Status.IN_PROGRESS, reason="",
                          now=NOW, lifecycle={"plugin": "quota"})

    with db.read() as session:
        first, call = session.scalars(select(Event).order_by(Event.seq))
        assert (first.reason, first.lifecycle) == ("x" * 255, None)
        assert [e.id for e in queries.list_lifecycle_events(session, stack.id)] == [call.id]


def test_events_are_filtered_ordered_and_paged(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack, child = add_stack(session, tenant_id), add_stack(session, tenant_id)
    ids = add_events(db, stack, ("b", Action.CREATE, Status.IN_PROGRESS),
                     ("a", Action.CREATE, Status.IN_PROGRESS),
                     ("b", Action.CREATE, Status.COMPLETE))
    [nested] = add_events(db, child, ("n", Action.CREATE, Status.COMPLETE))

    def events(stack_ids: list[str] | None = None, **options: Any) -> list[str]:
        arguments: dict[str, Any] = {"resource_name": None, "filters": {}, "limit": None,
                                     "marker": None, "ascending": True}
        with db.read() as session:
            return [event.id for event in queries.list_events(
                session, stack_ids or [stack.id], **{**arguments, **options})]

    assert events() == ids
    assert events(ascending=False) == ids[::-1]
    assert events([stack.id, child.id]) == [*ids, nested]
    assert events(resource_name="b") == [ids[0], ids[2]]
    assert events(filters={"resource_status": [Status.COMPLETE]}) == [ids[2]]
    assert events(sort_keys=["resource_type"]) == [ids[1], ids[0], ids[2]]
    assert events(limit=1, marker=ids[0]) == [ids[1]]
    assert events(marker=nested) == ids, "a marker of another stack's event is ignored"
    with db.read() as session:
        found = queries.find_event(session, stack.id, ids[1])
        assert found is not None and found.resource_name == "a"
        assert queries.find_event(session, child.id, ids[1]) is None
