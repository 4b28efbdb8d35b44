"""engine.db.stack_trees on SQLite: a stack's live children and descendants, and the
resources of the tree counted from any of its stacks."""

from __future__ import annotations

from engine.db import resource_rows, stack_trees
from engine.db.models import Stack
from engine.db.session import Database
from engine.vocabulary import Action
from tests.unit.db.conftest import (
    NOW,
    TEMPLATE,
    add_operation,
    add_resource,
    add_stack,
)


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
        child = stack_trees.live_child_stack(session, ids["root"], "a")
        assert child is not None and child.id == ids["a"]
        assert stack_trees.live_child_stack(session, ids["root"], "zzz") is None
        assert stack_trees.live_children(session, ids["root"]) == {
            "a": ("root-a", ids["a"]), "b": ("root-b", ids["b"])}
        assert stack_trees.descendants(session, ids["root"], 1) == {
            ids["a"]: "root-a", ids["b"]: "root-b", ids["old"]: "root-old"}
        assert stack_trees.descendants(session, ids["root"], 5) == {
            ids["a"]: "root-a", ids["b"]: "root-b", ids["old"]: "root-old",
            ids["a1"]: "root-a-1"}
        assert stack_trees.descendants(session, ids["a1"], 5) == {}


def test_a_stacks_lineage_runs_from_its_root_down_to_it(db: Database,
                                                        tenant_id: str) -> None:
    stacks = tree(db, tenant_id)
    with db.read() as session:
        found = {name: stack_trees.lineage(session, session.get_one(Stack, stacks[name].id))
                 for name in ("root", "a1")}
    assert found["root"] == [stack_trees.TreeMember(stacks["root"].id, "root", None)]
    assert found["a1"] == [stack_trees.TreeMember(stacks["root"].id, "root", None),
                           stack_trees.TreeMember(stacks["a"].id, "root-a", "a"),
                           stack_trees.TreeMember(stacks["a1"].id, "root-a-1", "x")]


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
        # The rollback of an update plans its target as the update did; a create's
        # rollback only deletes.
        add_operation(session, stacks["root"], Action.ROLLBACK,
                      payload={"kind": "update", "target": {"template": grown}})
        undone = add_stack(session, tenant_id, "root-c", owner_id=stacks["root"].id,
                           parent_resource="c", nested_depth=1)
        add_operation(session, undone, Action.ROLLBACK, payload={"kind": "create"})

    with db.transaction() as session:
        counted = stack_trees.tree_resources(session, stacks["a1"].id, lock=True)
        assert resource_rows.count_resources(session, stacks["root"].id) == 2

    assert counted.rows == 6, "the deleted child's are not the tree's"
    assert sorted(counted.unplanned, key=lambda pair: pair[1]) == [
        (TEMPLATE, 0), (grown, 1), (grown, 2)]
