"""Restricted actions in one process (``resource_registry.resources.<name>
.restricted_actions``, decided with each update step in ``engine.worker.step_decision``):
an update that would change a restricted resource in place, or replace it, fails as
Heat's does (the stack ``UPDATE_FAILED`` with Heat's reason, the resource left as it
was with an ``UPDATE_FAILED`` event); a restricted resource the update leaves alone is
no matter. Heat's own checks: heat_integrationtests/functional/test_update_restricted.py.
"""

from __future__ import annotations

from typing import Any

from engine.context import RequestContext
from engine.services.events import EventQuery
from engine.worker.loop import WorkerLoop
from tests.stack_api import StackApi
from tests.unit.conftest import Clock
from tests.unit.worker.running import worker_for

TEMPLATE = """\
heat_template_version: 2013-05-23
resources:
  bar:
    type: %s
    properties: {value: '%s', update_replace: %s}
  baz: {type: OS::Heat::TestResource, properties: {value: '%s'}}
"""
TEST = "OS::Heat::TestResource"
BOTH = {"resource_registry": {"resources": {"bar": {"restricted_actions": ["update",
                                                                           "replace"]}}}}
REPLACE = {"resource_registry": {"resources": {"*ar": {"restricted_actions": "replace"}}}}
UPDATE_RESTRICTED = "update is restricted for resource."
REPLACE_RESTRICTED = "replace is restricted for resource."


def template(bar: str = "1234", *, replace: bool = False, baz: str = "a", kind: str = TEST
             ) -> str:
    return TEMPLATE % (kind, bar, str(replace).lower(), baz)


def tick(loop: WorkerLoop, clock: Clock, times: int = 6) -> None:
    for _ in range(times):
        loop.run_once()
        clock.advance(1)


class Scene:
    def __init__(self, stacks: StackApi, ctx: RequestContext, clock: Clock) -> None:
        self.stacks, self.ctx, self.clock = stacks, ctx, clock
        self.loop = worker_for(stacks)
        record = stacks.create(ctx, {"stack_name": "s", "template": template()})
        self.name, self.id = record.name, record.id
        tick(self.loop, clock)
        self.bar = self.physical_id("bar")

    def update(self, body: dict[str, Any]) -> tuple[str, str]:
        self.stacks.update(self.ctx, self.name, self.id, body, patch=False)
        tick(self.loop, self.clock)
        stack = self.stacks.get(self.ctx, self.name, self.id)
        return f"{stack.action}_{stack.status}", stack.status_reason

    def state(self, resource: str) -> str:
        found = self.stacks.get_resource(self.ctx, self.name, self.id, resource)
        return f"{found.action}_{found.status}"

    def physical_id(self, resource: str) -> str:
        return self.stacks.get_resource(self.ctx, self.name, self.id, resource).physical_id

    def failures(self, resource: str) -> list[str]:
        return [e.reason for e in self.stacks.list_events(self.ctx, self.name, self.id,
                                                          EventQuery(ascending=True))
                if e.resource_name == resource and f"{e.action}_{e.status}" == "UPDATE_FAILED"]


def test_an_update_in_place_of_a_resource_restricting_update_fails_as_heats(
        stacks: StackApi, ctx: RequestContext, clock: Clock) -> None:
    scene = Scene(stacks, ctx, clock)

    assert scene.update({"template": template("4567"), "environment": BOTH}) == (
        "UPDATE_FAILED", "Resource UPDATE failed: ResourceActionRestricted: resources.bar: "
                         "update is restricted for resource.")
    assert scene.state("bar") == "CREATE_COMPLETE"  # untouched, as Heat leaves it
    assert scene.physical_id("bar") == scene.bar
    assert scene.failures("bar") == [UPDATE_RESTRICTED]

    # Only replace restricted (by a wildcard): the same change is made in place.
    assert scene.update({"template": template("4567"), "environment": REPLACE})[0] == (
        "UPDATE_COMPLETE")
    assert scene.state("bar") == "UPDATE_COMPLETE"
    assert scene.physical_id("bar") == scene.bar
    assert scene.failures("bar") == [UPDATE_RESTRICTED]


def test_a_replacement_of_a_resource_restricting_replace_fails_as_heats(
        stacks: StackApi, ctx: RequestContext, clock: Clock) -> None:
    scene = Scene(stacks, ctx, clock)

    for environment in (BOTH, REPLACE):
        assert scene.update({"template": template("4567", replace=True),
                             "environment": environment}) == (
            "UPDATE_FAILED", "Resource UPDATE failed: ResourceActionRestricted: "
                             "resources.bar: replace is restricted for resource.")
        assert scene.state("bar") == "CREATE_COMPLETE"
        assert scene.physical_id("bar") == scene.bar
    # A new type is a replacement too.
    assert scene.update({"template": template(kind="OS::Heat::None"),
                         "environment": REPLACE})[0] == "UPDATE_FAILED"
    assert scene.failures("bar") == [REPLACE_RESTRICTED] * 3
    assert scene.state("bar") == "CREATE_COMPLETE"


def test_a_restricted_resource_the_update_leaves_alone_is_no_matter(
        stacks: StackApi, ctx: RequestContext, clock: Clock) -> None:
    scene = Scene(stacks, ctx, clock)
    baz = scene.physical_id("baz")
    everything = {"resource_registry": {"resources": {"*": {"restricted_actions": "update"}}}}

    # baz changes in place with replace restricted; bar, restricted both ways, is unchanged.
    assert scene.update({"template": template(baz="b"), "environment": {
        "resource_registry": {"resources": {**BOTH["resource_registry"]["resources"],
                                            "baz": {"restricted_actions": "replace"}}}}}
                        )[0] == "UPDATE_COMPLETE"
    assert (scene.state("bar"), scene.state("baz")) == ("CREATE_COMPLETE", "UPDATE_COMPLETE")
    assert scene.physical_id("baz") == baz
    # "*" restricts baz's update as well.
    assert scene.update({"template": template(baz="c"), "environment": everything}) == (
        "UPDATE_FAILED", "Resource UPDATE failed: ResourceActionRestricted: resources.baz: "
                         "update is restricted for resource.")
    assert scene.failures("bar") == []


PARENT = """\
heat_template_version: 2013-05-23
parameters:
  v: {type: string}
resources:
  nested: {type: child.yaml, properties: {v: {get_param: v}}}
"""
CHILD = """\
heat_template_version: 2013-05-23
parameters:
  v: {type: string}
resources:
  inner: {type: OS::Heat::TestResource, properties: {value: {get_param: v}}}
"""


def test_a_nested_stack_s_resource_is_restricted_through_its_parent_resource_s_name(
        stacks: StackApi, ctx: RequestContext, clock: Clock) -> None:
    loop = worker_for(stacks)
    body = {"template": PARENT, "files": {"child.yaml": CHILD}}
    record = stacks.create(ctx, {"stack_name": "p", **body, "parameters": {"v": "a"}})
    tick(loop, clock, 10)
    restricted = {"resource_registry": {"resources": {"nest*": {"inner": {
        "restricted_actions": "update"}}}}}

    stacks.update(ctx, record.name, record.id, {**body, "parameters": {"v": "b"},
                                                "environment": restricted}, patch=False)
    tick(loop, clock, 10)

    stack = stacks.get(ctx, record.name, record.id)
    assert f"{stack.action}_{stack.status}" == "UPDATE_FAILED"
    assert stack.status_reason == (
        "Resource UPDATE failed: ChildStackFailed: resources.nested: Resource UPDATE failed: "
        f"ResourceActionRestricted: resources.inner: {UPDATE_RESTRICTED}")
