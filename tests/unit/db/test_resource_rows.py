"""engine.db.resource_rows on SQLite: resource reads, the rows an update forgets, and a
replacement's physical id recorded on what it replaced."""

from __future__ import annotations

import pytest

from engine.db import resource_rows
from engine.db.models import Resource
from engine.db.session import Database
from engine.errors import EntityNotFound
from engine.vocabulary import Action, Status
from tests.unit.db.conftest import (
    add_resource,
    add_stack,
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
