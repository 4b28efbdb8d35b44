"""engine.db.resource_rows on SQLite: resource reads, the rows a plan adds and writes
by id, the rows an update forgets, and a replacement's physical id recorded on what it
replaced."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event

from engine.db import resource_rows
from engine.db.models import Resource
from engine.db.session import Database
from engine.errors import EntityNotFound
from engine.vocabulary import Action, Status
from tests.unit.db.conftest import (
    add_resource,
    add_stack,
    later,
)


def test_resource_reads(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        for name in ("b", "a", "c"):
            add_resource(session, stack, name)
        add_resource(session, add_stack(session, tenant_id), "a")

    with db.read() as session:
        assert [r.name for r in resource_rows.list_resources(session, stack.id)] == ["a", "b", "c"]
        assert sorted(r.name for r in resource_rows.list_resources_named(
            session, stack.id, ["c", "a", "zzz"])) == ["a", "c"]
        assert resource_rows.list_resources_named(session, stack.id, []) == []
        assert resource_rows.get_resource(session, stack, "b").stack_id == stack.id
        with pytest.raises(EntityNotFound):
            resource_rows.get_stack_resource(session, stack.id, "zzz")


def test_an_update_forgets_the_resources_it_deleted(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        add_resource(session, stack, "deleted", action=Action.DELETE, status=Status.COMPLETE)
        add_resource(session, stack, "failed", action=Action.DELETE, status=Status.FAILED)
        add_resource(session, stack, "kept")

    with db.transaction() as session:
        resource_rows.drop_deleted_resources(session, stack.id)
    with db.read() as session:
        assert [r.name for r in resource_rows.list_resources(session, stack.id)] == [
            "failed", "kept"]

    with db.transaction() as session:
        resource_rows.delete_resources(session, stack.id)
    with db.read() as session:
        assert resource_rows.list_resources(session, stack.id) == []


def test_a_replacements_physical_id_is_recorded_on_what_it_replaced(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        replacing = add_resource(session, stack, "r", replaced={
            "type": "T", "physical_id": None, "properties": {}, "data": {}, "generation": 0})
        plain = add_resource(session, stack, "plain")

    with db.transaction() as session:
        resource_rows.record_replaced_physical_id(session, replacing.id, "old-id", {"k": 1})
        resource_rows.record_replaced_physical_id(session, plain.id, "x", {})
        resource_rows.record_replaced_physical_id(session, 999999, "x", {})

    with db.read() as session:
        assert session.get_one(Resource, replacing.id).replaced == {
            "type": "T", "physical_id": "old-id", "properties": {}, "data": {"k": 1},
            "generation": 0}
        assert session.get_one(Resource, plain.id).replaced is None


def test_a_plans_rows_are_added_and_read_as_outlines(db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        add_resource(session, stack, "old", requires=["x"], replaced={
            "type": "T", "physical_id": None, "properties": {}, "data": {}, "generation": 0})
    with db.transaction() as session:
        resource_rows.add_resources(session, stack.id, [
            resource_rows.NewResource("b", "T::B", ["a"]),
            resource_rows.NewResource("a", "T::A", [])], later(1))

    with db.read() as session:
        outlines = resource_rows.list_outlines(session, stack.id)
        assert [(o.name, o.type, o.requires, o.replaced) for o in outlines] == [
            ("a", "T::A", [], False), ("b", "T::B", ["a"], False),
            ("old", "OS::Heat::None", ["x"], True)]
        assert [o.name for o in resource_rows.list_outlines(session, stack.id, ["b"])] == ["b"]
        b = resource_rows.get_stack_resource(session, stack.id, "b")
        assert (b.action, b.status, b.status_reason, b.physical_id, b.properties, b.data,
                b.created_at, b.updated_at, b.generation, b.deletion_policy) == (
            Action.INIT, Status.COMPLETE, "", None, None, {}, later(1), later(1), 0, "Delete")


def test_requires_and_other_columns_are_written_by_row_id(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        a, b, c = (add_resource(session, stack, name).id for name in "abc")

    with db.transaction() as session:
        resource_rows.set_requires(session, {a: ["b", "c"], b: []})
        resource_rows.write_rows(session, [{"id": a, "data": {"k": 1}},
                                           {"id": c, "data": {}, "drift": {}}])

    with db.read() as session:
        rows = {row.name: row for row in resource_rows.list_resources(session, stack.id)}
        assert [(rows[n].requires, rows[n].data, rows[n].drift) for n in "abc"] == [
            (["b", "c"], {"k": 1}, None), ([], {}, None), ([], {}, {})]


def test_rows_referenced_by_many_steps_are_read_once_a_transaction(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        root, leaf = add_resource(session, stack, "root"), add_resource(session, stack, "leaf")
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement.split()[0])

    with db.transaction() as session:
        changed = session.get_one(Resource, leaf.id)
        changed.status_reason = "changed"
        event.listen(db.engine, "before_cursor_execute", record)
        try:
            first = resource_rows.list_resources_read_once(session, stack.id, ["root", "zzz"])
            again = resource_rows.list_resources_read_once(session, stack.id, ["root"])
        finally:
            event.remove(db.engine, "before_cursor_execute", record)

    # One read, and the change not flushed by it (written at the commit).
    assert sent == ["SELECT"]
    assert [row.id for row in first] == [root.id] and again[0] is first[0]
    with db.read() as session:
        assert session.get_one(Resource, leaf.id).status_reason == "changed"
