"""A ResourceGroup's update policy: the batches Heat's rules give (pure), and the rollout
that works through them one child operation at a time, pausing between batches and
carrying on from its saved data on a new instance (as a worker taking over does)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from engine.resources.nested import NestedState
from plugins.resources.group_rollout import batch_members, batches
from plugins.resources.resource_group import ROLLOUT, ResourceGroup
from tests.unit.plugins.resources.conftest import Build, FakeRuntime


@pytest.mark.parametrize(("target", "current", "size", "floor", "plan"), [
    (3, 3, 1, 0, [(3, 1), (3, 1), (3, 1)]),
    (3, 3, 2, 0, [(3, 2), (3, 1)]),
    (3, 0, 2, 0, [(2, 2), (3, 1)]),                       # batch_create
    (3, 3, 2, 3, [(5, 2), (5, 2), (4, 1), (3, 0)]),       # min_in_service adds first
    (4, 2, 1, 0, [(3, 1), (4, 1), (4, 1), (4, 1)]),       # growing while replacing
    (1, 3, 1, 0, [(1, 1)]),                               # shrinking
    (2, 2, 5, 0, [(2, 2)]),
])
def test_batches(target: int, current: int, size: int, floor: int,
                 plan: list[tuple[int, int]]) -> None:
    assert batches(target, current, size, floor) == plan


def new(name: str) -> dict[str, Any]:
    return {"type": "T", "properties": {"v": f"new-{name}"}}


def old(*names: str) -> dict[str, Mapping[str, Any]]:
    return {n: {"type": "T", "properties": {"v": f"old-{n}"}} for n in names}


def test_a_batch_replaces_the_highest_index_first() -> None:
    members = batch_members(["0", "1", "2"], 3, old("0", "1", "2"), 3, 1, new)

    assert members == {**old("0", "1"), "2": new("2")}
    again = batch_members(["0", "1", "2"], 3, members, 3, 1, new)
    assert again == {**old("0"), "1": new("1"), "2": new("2")}


def test_a_batch_adds_fresh_names_and_drops_members_beyond_the_names() -> None:
    grown = batch_members(["0", "1", "2", "3"], 3, old("0", "1", "2"), 4, 1, new)
    assert grown == {**old("0", "1", "2"), "3": new("3")}

    shrunk = batch_members(["0"], 1, old("0", "1", "2"), 1, 1, new)
    assert shrunk == {"0": new("0")}


class Children:
    """Child stacks in memory: each operation stays busy until the test finishes it."""

    def __init__(self) -> None:
        self.stacks: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, list[str]]] = []

    def create(self, name: str, template: Any, parameters: Mapping[str, Any], *,
               template_file: str = "template", timeout_mins: int | None = None) -> str:
        self.stacks["child"] = {"template": template, "action": "CREATE", "busy": True}
        self.calls.append(("CREATE", sorted(template["resources"])))
        return "child"

    def update(self, stack_id: str, template: Any, parameters: Mapping[str, Any], *,
               template_file: str = "template", timeout_mins: int | None = None) -> None:
        self.stacks[stack_id] = {"template": template, "action": "UPDATE", "busy": True}
        self.calls.append(("UPDATE", sorted(template["resources"])))

    def finish(self) -> None:
        self.stacks["child"]["busy"] = False

    def state(self, stack_id: str) -> NestedState:
        child = self.stacks[stack_id]
        return NestedState(child["action"], "IN_PROGRESS" if child["busy"] else "COMPLETE",
                           "", {})

    def resource_definitions(self, stack_id: str) -> Mapping[str, Any]:
        return dict(self.stacks[stack_id]["template"]["resources"])


DEF = {"type": "OS::Heat::Value", "properties": {"value": "v-%index%"}}


@pytest.fixture
def children(runtime: FakeRuntime) -> Children:
    runtime.nested = Children()  # type: ignore[attr-defined]
    return runtime.nested  # type: ignore[attr-defined,no-any-return]


def test_batch_create_pauses_between_batches(build: Build, runtime: FakeRuntime,
                                             children: Children) -> None:
    group = build(ResourceGroup, {"count": 5, "resource_def": DEF},
                  update_policy={"batch_create": {"max_batch_size": 2, "pause_time": 10}})

    token = group.handle_create()

    assert token == ROLLOUT
    assert children.calls == [("CREATE", ["0", "1"])]
    assert not group.check_create_complete(token)  # the child is still busy
    children.finish()
    assert not group.check_create_complete(token)  # batch done: the pause starts
    runtime.advance(9.9)
    assert not group.check_create_complete(token)
    assert len(children.calls) == 1
    runtime.advance(0.1)
    assert not group.check_create_complete(token)
    assert children.calls[-1] == ("UPDATE", ["0", "1", "2", "3"])
    children.finish()
    group.check_create_complete(token)
    runtime.advance(10)
    group.check_create_complete(token)
    assert children.calls[-1] == ("UPDATE", ["0", "1", "2", "3", "4"])
    children.finish()
    assert group.check_create_complete(token)
    assert "rollout" not in group.data


def test_a_new_instance_carries_on_from_the_saved_progress(
        build: Build, runtime: FakeRuntime, children: Children) -> None:
    raw = {"count": 3, "resource_def": DEF}
    first = build(ResourceGroup, raw,
                  update_policy={"batch_create": {"max_batch_size": 1}})
    token = first.handle_create()
    children.finish()
    first.check_create_complete(token)  # batch two starts
    saved = dict(first.data)

    # Another worker: a fresh instance from the stored physical id, data and token.
    second = build(ResourceGroup, raw, physical_id="child", data=saved,
                   update_policy={"batch_create": {"max_batch_size": 1}})
    children.finish()
    assert not second.check_create_complete(token)
    children.finish()
    assert second.check_create_complete(token)
    assert children.calls == [("CREATE", ["0"]), ("UPDATE", ["0", "1"]),
                              ("UPDATE", ["0", "1", "2"])]


def test_rolling_update_only_when_the_definition_changes(
        build: Build, children: Children) -> None:
    policy = {"rolling_update": {"max_batch_size": 1}}
    group = build(ResourceGroup, {"count": 2, "resource_def": DEF}, update_policy=policy)
    group.handle_create()
    children.finish()
    assert group.check_create_complete("CREATE")

    grown = build(ResourceGroup, {"count": 3, "resource_def": DEF}, physical_id="child",
                  data=dict(group.data), update_policy=policy)
    assert grown.handle_update({"count": 3}) == "UPDATE"  # one child update, as without

    changed = {"type": "OS::Heat::Value", "properties": {"value": "w-%index%"}}
    rolled = build(ResourceGroup, {"count": 3, "resource_def": changed},
                   physical_id="child", data=dict(group.data), update_policy=policy)
    children.finish()
    assert rolled.handle_update({"resource_def": changed}) == ROLLOUT
    resources = children.stacks["child"]["template"]["resources"]
    assert resources["2"]["properties"]["value"] == "w-2"  # highest index first
    assert resources["0"]["properties"]["value"] == "v-0"
