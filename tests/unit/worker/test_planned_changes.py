"""engine.worker.planned_changes: the planned change of each resource in the views a
real operation's pre-ops receive (create, update by PUT and PATCH, delete), decided as the
operation decides it, hidden values masked; post-ops get none yet. A real SQLite file, the
real stack services and worker, and a plugin that records what it was given."""

from __future__ import annotations

from typing import Any

import pytest

from engine.context import RequestContext
from engine.lifecycle.planned import NOT_KNOWN
from engine.lifecycle.view import StackView, thaw
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


def pre_op(plugin: Recording) -> StackView:
    [seen] = [seen.stack for seen in plugin.seen if seen.phase == "pre"]
    return seen


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
    # The post-op gets no changes yet.
    [after] = [seen.stack for seen in watch.seen if seen.phase == "post"]
    assert after.changes == {}


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
