"""engine.worker.planned_changes: the planned change of each resource in the views a
real operation's pre-ops receive (create, update by PUT and PATCH, delete, rollback,
adopt, abandon), decided as the operation decides it, hidden values masked; and the plan's
actions with each resource's outcome in the post-ops' views (``lifecycle_calls``). A real
SQLite file, the real stack services and worker, and a plugin that records what it was
given."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest
from sqlalchemy import select

from engine.context import RequestContext
from engine.db.models import Operation
from engine.lifecycle.planned import NOT_KNOWN
from engine.lifecycle.view import StackView, thaw
from engine.resources.base import Resource
from engine.resources.registry import ResourceTypeRegistry
from engine.schema import INTEGER, Attribute, Property
from engine.services.stack_actions import StackActions
from engine.template.parameters import MASK
from engine.vocabulary import Change
from tests.stack_api import StackApi
from tests.unit.worker.running import run, worker_for
from tests.unit.worker.test_lifecycle_calls import Entry, Recording, loaded

BEFORE = """\
heat_template_version: 2018-08-31
parameters:
  password: {type: string, hidden: true, default: hunter2}
resources:
  kept: {type: OS::Heat::None}
  changed:
    type: OS::Heat::TestResource
    properties: {value: {get_param: password}}
  swapped:
    type: OS::Heat::TestResource
    properties: {value: one, update_replace: true}
  dropped: {type: OS::Heat::None}
"""
# "changed" is updated in place (its hidden value changes), "swapped" is replaced,
# "dropped" deleted, "added" created from what the replacement will only know later.
AFTER = (BEFORE.replace("value: one", "value: two")
         .replace("dropped: {type: OS::Heat::None}", """added:
    type: OS::Heat::TestResource
    properties: {value: {get_attr: [swapped, output]}}"""))


def changes(view: StackView) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each resource's planned action and differences, as plain data."""
    return {name: (change.action, thaw(change.properties))
            for name, change in view.changes.items()}


def pre_op(plugin: Recording, action: str | None = None) -> StackView:
    [seen] = [seen.stack for seen in plugin.seen
              if seen.phase == "pre" and action in (None, seen.action)]
    return seen


def post_op(plugin: Recording, action: str | None = None) -> StackView:
    [seen] = [seen.stack for seen in plugin.seen
              if seen.phase == "post" and action in (None, seen.action)]
    return seen


def actions(view: StackView) -> dict[str, Change]:
    return {name: change.action for name, change in view.changes.items()}


def outcomes(view: StackView) -> dict[str, tuple[str, str]]:
    return {name: (outcome.action, outcome.status) for name, outcome in view.outcomes.items()}


@pytest.fixture
def watch() -> Recording:
    log: list[Entry] = []
    return Recording("watch", log)


@pytest.fixture
def web(stacks: StackApi, ctx: RequestContext, watch: Recording) -> str:
    """The id of "web", created from BEFORE with ``watch`` installed."""
    record = stacks.create(ctx, {"stack_name": "web", "template": BEFORE})
    run(worker_for(stacks, [loaded(watch)]))
    return record.id


def test_a_create_plans_every_resource_created_with_its_properties_masked(
        web: str, watch: Recording) -> None:
    planned = changes(pre_op(watch))

    assert {name: action for name, (action, _) in planned.items()} == dict.fromkeys(
        ["changed", "dropped", "kept", "swapped"], Change.CREATE)
    assert planned["changed"][1]["value"] == {"old": None, "new": MASK}
    assert planned["swapped"][1]["value"] == {"old": None, "new": "one"}
    assert planned["kept"][1] == {}
    assert pre_op(watch).outcomes == {}
    # The post-op sees the plan's actions (no properties) and what became of each.
    after = post_op(watch)
    assert after.changes_known and actions(after) == actions(pre_op(watch))
    assert all(change.properties == {} for change in after.changes.values())
    assert outcomes(after) == dict.fromkeys(
        ["changed", "dropped", "kept", "swapped"], ("CREATE", "COMPLETE"))


@pytest.mark.parametrize("patch", [False, True])
def test_an_update_plans_each_resource_as_its_step_will_decide_it(
        patch: bool, web: str, stacks: StackApi, ctx: RequestContext) -> None:
    plugin = Recording("watch", [])
    body = {"template": AFTER, "parameters": {"password": "swordfish"}}
    stacks.update(ctx, "web", web, body, patch=patch)
    run(worker_for(stacks, [loaded(plugin)]))

    view = pre_op(plugin)
    planned = changes(view)
    assert {name: action for name, (action, _) in planned.items()} == {
        "added": Change.CREATE, "changed": Change.UPDATE, "dropped": Change.DELETE,
        "kept": Change.NONE, "swapped": Change.REPLACE}
    # Both hidden values masked, the stored one and the new one.
    assert planned["changed"][1] == {"value": {"old": MASK, "new": MASK}}
    assert planned["swapped"][1] == {"value": {"old": "one", "new": "two"}}
    assert planned["kept"][1] == {} and planned["dropped"][1] == {}
    # Known only once "swapped" is replaced.
    assert view.changes["added"].properties["value"].new == NOT_KNOWN
    assert planned["added"][1]["value"] == {"old": None, "new": str(NOT_KNOWN)}
    assert "hunter2" not in repr(view.changes) and "swordfish" not in repr(view.changes)
    # Kept with the operation for the post-ops: the actions, no property value.
    with stacks.kiln.db.read() as session:
        [kept] = [operation.lifecycle["planned"] for operation in session.scalars(
            select(Operation).where(Operation.stack_id == web,
                                    Operation.action == "UPDATE"))]
    assert kept == {"added": {"action": "CREATE"}, "changed": {"action": "UPDATE"},
                    "dropped": {"action": "DELETE"}, "kept": {"action": "NONE"},
                    "swapped": {"action": "REPLACE"}}
    assert actions(post_op(plugin)) == actions(view)


def test_a_delete_plans_every_stored_resource_deleted(
        web: str, stacks: StackApi, ctx: RequestContext) -> None:
    plugin = Recording("watch", [])
    stacks.delete(ctx, "web", web)
    run(worker_for(stacks, [loaded(plugin)]))

    planned = changes(pre_op(plugin))
    assert {name: action for name, (action, _) in planned.items()} == dict.fromkeys(
        ["changed", "dropped", "kept", "swapped"], Change.DELETE)
    assert planned["changed"][1]["value"] == {"old": MASK, "new": None}
    assert planned["swapped"][1]["value"] == {"old": "one", "new": None}
    # Their rows are gone: each planned DELETE is reported done.
    after = post_op(plugin)
    assert actions(after) == dict.fromkeys(["changed", "dropped", "kept", "swapped"],
                                           Change.DELETE)
    assert outcomes(after) == dict.fromkeys(["changed", "dropped", "kept", "swapped"],
                                            ("DELETE", "COMPLETE"))


# "broken" fails its create, its failure reason naming it; the hidden value is its name.
HALF_BROKEN = """\
heat_template_version: 2018-08-31
parameters:
  password: {type: string, hidden: true, default: broken}
resources:
  fine: {type: OS::Heat::None}
  broken:
    type: OS::Heat::TestResource
    properties: {fail: true}
    depends_on: fine
"""


def test_a_failed_create_shows_the_post_op_the_failed_resource_reason_masked(
        stacks: StackApi, ctx: RequestContext, watch: Recording) -> None:
    stacks.create(ctx, {"stack_name": "half", "template": HALF_BROKEN})
    run(worker_for(stacks, [loaded(watch)]))

    after = post_op(watch)
    assert actions(after) == {"broken": Change.CREATE, "fine": Change.CREATE}
    assert outcomes(after) == {"broken": ("CREATE", "FAILED"), "fine": ("CREATE", "COMPLETE")}
    assert after.outcomes["broken"].status_reason == (
        f"ValueError: resources.{MASK}: Test Resource failed {MASK}")
    assert thaw(after.outcomes)["fine"] == {
        "action": "CREATE", "status": "COMPLETE", "status_reason": "state changed"}


def test_the_rollback_of_a_create_plans_every_stored_resource_deleted(
        stacks: StackApi, ctx: RequestContext, watch: Recording) -> None:
    stacks.create(ctx, {"stack_name": "half", "template": HALF_BROKEN,
                        "disable_rollback": False})
    run(worker_for(stacks, [loaded(watch)]))

    assert actions(pre_op(watch, "ROLLBACK")) == {"broken": Change.DELETE,
                                                  "fine": Change.DELETE}
    assert outcomes(post_op(watch, "ROLLBACK")) == {"broken": ("DELETE", "COMPLETE"),
                                                    "fine": ("DELETE", "COMPLETE")}


GROWN = """\
heat_template_version: 2018-08-31
resources:
  kept: {type: OS::Heat::None}
  grown:
    type: OS::Heat::TestResource
    properties: {value: one}
"""
# "grown" is updated in place first, then "added" fails its create.
GROWN_BROKEN = GROWN.replace("value: one", "value: two") + """\
  added:
    type: OS::Heat::TestResource
    properties: {fail: true}
    depends_on: grown
"""


def test_the_rollback_of_an_update_plans_the_update_back(
        stacks: StackApi, ctx: RequestContext, watch: Recording) -> None:
    stack_id = stacks.create(ctx, {"stack_name": "grown", "template": GROWN,
                                   "disable_rollback": False}).id
    run(worker_for(stacks))
    stacks.update(ctx, "grown", stack_id, {"template": GROWN_BROKEN}, patch=False)
    run(worker_for(stacks, [loaded(watch)]))

    assert outcomes(post_op(watch, "UPDATE"))["added"] == ("CREATE", "FAILED")
    back = pre_op(watch, "ROLLBACK")
    assert actions(back) == {"added": Change.DELETE, "grown": Change.UPDATE,
                             "kept": Change.NONE}
    assert thaw(back.changes["grown"].properties) == {"value": {"old": "two", "new": "one"}}
    assert back.changes_known and back.outcomes == {}


STRUCTURED = """\
heat_template_version: 2018-08-31
parameters:
  conf: {type: json, hidden: true, default: {"k": "s3cr3tvalue"}}
  pins: {type: comma_delimited_list, hidden: true, default: "aaaa-pin1,bbbb-pin2"}
resources:
  conf: {type: OS::Heat::Value, properties: {value: {get_param: conf}}}
  pins: {type: OS::Heat::Value, properties: {value: {get_param: pins}}}
  joined:
    type: OS::Heat::Value
    properties: {value: {list_join: [":", {get_param: pins}]}}
"""


def test_the_leaves_of_a_hidden_json_or_list_value_are_masked(
        stacks: StackApi, ctx: RequestContext, watch: Recording) -> None:
    stacks.create(ctx, {"stack_name": "structured", "template": STRUCTURED})
    run(worker_for(stacks, [loaded(watch)]))

    planned = changes(pre_op(watch))
    assert planned["conf"][1]["value"] == {"old": None, "new": {"k": MASK}}
    assert planned["pins"][1]["value"] == {"old": None, "new": [MASK, MASK]}
    assert planned["joined"][1]["value"] == {"old": None, "new": f"{MASK}:{MASK}"}
    shown = repr(pre_op(watch).changes)
    assert "s3cr3tvalue" not in shown and "pin1" not in shown and "pin2" not in shown


class Named(Resource):
    """Replaced when its size changes; reads its backend (itself); its ``name`` is its
    stable physical name, read as the worker gives it."""

    properties_schema: ClassVar[Mapping[str, Property]] = {"size": Property(INTEGER)}
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {"name": Attribute("its name")}

    def observe(self) -> Mapping[str, Any] | None:
        return dict(self.properties)

    def get_attribute(self, name: str) -> Any:
        return self.physical_resource_name() if name == "name" else None


@pytest.fixture
def registry(registry: ResourceTypeRegistry) -> ResourceTypeRegistry:
    types = {name: registry.get(name) for name in registry.names()}
    return ResourceTypeRegistry({**types, "Test::Named": Named})


NAMED = """\
heat_template_version: 2018-08-31
resources:
  named: {type: Test::Named, properties: {size: 1}}
  user:
    type: OS::Heat::Value
    properties: {value: {get_attr: [named, name]}}
  kept: {type: OS::Heat::None, deletion_policy: Retain}
"""


def planned_update(stacks: StackApi, ctx: RequestContext, stack_id: str,
                   body: Mapping[str, Any]) -> dict[str, Change]:
    plugin = Recording("watch", [])
    stacks.update(ctx, "named", stack_id, dict(body), patch=False)
    run(worker_for(stacks, [loaded(plugin)]))
    return {name: action for name, (action, _) in changes(pre_op(plugin)).items()}


def test_a_resource_replaced_earlier_is_read_under_the_name_the_worker_gave_it(
        stacks: StackApi, ctx: RequestContext) -> None:
    stack_id = stacks.create(ctx, {"stack_name": "named", "template": NAMED}).id
    run(worker_for(stacks))
    replaced = NAMED.replace("size: 1", "size: 2")
    assert planned_update(stacks, ctx, stack_id, {"template": replaced}) == {
        "named": Change.REPLACE, "user": Change.UPDATE, "kept": Change.NONE}

    # The replacement's attribute is read from its new generation, as the worker reads it.
    assert planned_update(stacks, ctx, stack_id, {"template": replaced}) == {
        "named": Change.NONE, "user": Change.NONE, "kept": Change.NONE}


def test_an_update_with_converge_plans_an_update_of_what_observes_its_backend(
        stacks: StackApi, ctx: RequestContext) -> None:
    stack_id = stacks.create(ctx, {"stack_name": "named", "template": NAMED}).id
    run(worker_for(stacks))

    planned = planned_update(stacks, ctx, stack_id, {"template": NAMED, "converge": True})

    # Nothing in the template changed, but the step reads the backend and puts back what
    # drifted; what reads its attributes may change with it.
    assert planned == {"named": Change.UPDATE, "user": Change.UPDATE, "kept": Change.NONE}


def test_a_retained_resource_is_planned_deleted_and_said_to_be_kept(
        stacks: StackApi, ctx: RequestContext) -> None:
    stack_id = stacks.create(ctx, {"stack_name": "named", "template": NAMED}).id
    run(worker_for(stacks))
    plugin = Recording("watch", [])
    stacks.delete(ctx, "named", stack_id)
    run(worker_for(stacks, [loaded(plugin)]))

    planned = pre_op(plugin).changes
    assert {name: (change.action, change.retained) for name, change in planned.items()} == {
        "named": (Change.DELETE, False), "user": (Change.DELETE, False),
        "kept": (Change.DELETE, True)}


def test_an_adopt_plans_every_resource_created_and_an_abandon_every_one_retained(
        stacks: StackApi, ctx: RequestContext, watch: Recording) -> None:
    data = {"template": {"heat_template_version": "2018-08-31",
                         "resources": {"r": {"type": "OS::Heat::None"},
                                       "s": {"type": "OS::Heat::None"}}},
            "resources": {"r": {"resource_id": "x"}, "s": {"resource_id": "y"}}}
    stack_id = stacks.create(ctx, {"stack_name": "taken",
                                   "adopt_stack_data": json.dumps(data)}).id
    run(worker_for(stacks, [loaded(watch)]))
    assert actions(pre_op(watch, "ADOPT")) == {"r": Change.CREATE, "s": Change.CREATE}
    assert outcomes(post_op(watch, "ADOPT")) == dict.fromkeys("rs", ("ADOPT", "COMPLETE"))

    StackActions(stacks.kiln.db, stacks.kiln.clock, 60).abandon(ctx, "taken", stack_id)
    run(worker_for(stacks, [loaded(watch)]))

    planned = pre_op(watch, "ABANDON").changes
    assert {name: (change.action, change.retained) for name, change in planned.items()} == {
        "r": (Change.DELETE, True), "s": (Change.DELETE, True)}
    assert {name: change.retained
            for name, change in post_op(watch, "ABANDON").changes.items()} == {
        "r": True, "s": True}
