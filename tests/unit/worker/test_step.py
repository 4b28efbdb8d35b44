"""A step's next look on a SQLite file with an injected clock: a type's word on when it
will be done is followed, but never past a time a datetime can hold."""

from __future__ import annotations

from typing import Any

from engine.context import RequestContext
from engine.db.session import Database
from engine.resources.base import Resource
from engine.resources.registry import ResourceTypeRegistry
from engine.services.proposals import StackLimits
from tests.stack_api import StackApi
from tests.unit.conftest import Clock
from tests.unit.worker.running import run, worker_for

# Waits no deadline or datetime could hold (year 33715 and beyond): the outside-in check
# that found them saw the create end in an InternalError four seconds in.
ENDLESS = """\
heat_template_version: 2018-08-31
resources:
  delay: {type: OS::Heat::Delay, properties: {min_wait: 1000000000000}}
  jitter:
    type: OS::Heat::Delay
    properties: {max_jitter: 1.0e+300, jitter_multiplier: 1.0e+300}
  test: {type: OS::Heat::TestResource, properties: {wait_secs: 1.0e+300}}
  per_action:
    type: OS::Heat::TestResource
    properties: {action_wait_secs: {create: 1000000000000}}
  distant: {type: 'Test::Distant'}
"""


class Distant(Resource):
    """A third-party type whose word on when it will be done is past any datetime."""

    def handle_create(self) -> Any:
        return 10 ** 400

    def check_create_complete(self, token: Any) -> bool:
        return False

    def next_check_in(self, token: Any) -> float | None:
        return token  # type: ignore[no-any-return]


def test_a_wait_past_any_datetime_ends_in_heats_timeout(
        db: Database, registry: ResourceTypeRegistry, clock: Clock,
        ctx: RequestContext) -> None:
    types = {name: registry.get(name) for name in registry.names()}
    registry = ResourceTypeRegistry({**types, "Test::Distant": Distant})
    stacks = StackApi(db, registry, StackLimits(), clock)
    record = stacks.create(ctx, {"stack_name": "s", "template": ENDLESS, "timeout_mins": 1,
                                 "disable_rollback": True})
    loop = worker_for(stacks)
    run(loop)
    stack = stacks.get(ctx, record.name, record.id)
    assert (stack.action, stack.status) == ("CREATE", "IN_PROGRESS")
    assert loop.held_count == 5

    clock.advance(61)
    run(loop)

    stack = stacks.get(ctx, record.name, record.id)
    assert (stack.action, stack.status, stack.status_reason) == (
        "CREATE", "FAILED", "Create timed out")
    found = {r.name: (r.status, r.status_reason)
             for r in stacks.list_resources(ctx, record.name, record.id, {})}
    assert found == {name: ("FAILED", "CREATE aborted")
                     for name in ("delay", "jitter", "test", "per_action", "distant")}
    clock.advance(5)  # the next heartbeat finds their leases gone and drops them
    run(loop, 1)
    assert loop.held_count == 0
