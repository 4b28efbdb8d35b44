"""engine.db.stack_list on SQLite: the tenant's live top-level stacks, filters, tags,
order and pages."""

from __future__ import annotations

from typing import Any

import pytest

from engine.db import stack_list
from engine.db.session import Database
from engine.vocabulary import Status
from tests.unit.db.conftest import (
    add_stack,
    add_tenant,
    later,
)


def listed(db: Database, tenant_id: str | None, **options: Any) -> tuple[list[str], int]:
    arguments: dict[str, Any] = {"filters": {}, "show_deleted": False, "limit": None,
                                 "marker": None, "sort_keys": [], "sort_dir": None}
    with db.read() as session:
        found, total = stack_list.list_stacks(session, tenant_id, **{**arguments, **options})
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
    pytest.param(stack_list.TagFilter(all=["x", "y"]), ["a"], id="all"),
    pytest.param(stack_list.TagFilter(any=["z", "x"]), ["c", "b", "a"], id="any"),
    pytest.param(stack_list.TagFilter(not_all=["x", "y"]), ["d", "c", "b"], id="not-all"),
    pytest.param(stack_list.TagFilter(not_any=["x"]), ["d", "c"], id="not-any"),
    pytest.param(stack_list.TagFilter(any=["y"], not_any=["z"]), ["a"], id="together"),
])
def test_tag_filters(db: Database, tenant_id: str, some_stacks: dict[str, str],
                     tags: stack_list.TagFilter, names: list[str]) -> None:
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


def test_another_tenants_stack_is_no_marker(
        db: Database, tenant_id: str, some_stacks: dict[str, str]) -> None:
    # "other" sorts between the tenant's stacks by creation time: paging after it would
    # tell when it was made.
    assert listed(db, tenant_id, marker=some_stacks["other"]) == (["d", "c", "b", "a"], 4)
    assert listed(db, None, marker=some_stacks["other"])[0] == ["d", "c", "b", "a"]


def test_a_page_is_counted_only_when_asked(
        db: Database, tenant_id: str, some_stacks: dict[str, str]) -> None:
    assert listed(db, tenant_id, limit=1, count=False) == (["d"], None)
