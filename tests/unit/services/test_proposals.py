"""engine.services.proposals: what every way of proposing a stack checks of its request
(create, preview, validate, update and its preview), and the limits a proposal is held
to, on a migrated SQLite file."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from engine import budget
from engine.context import RequestContext
from engine.db.models import Stack
from engine.db.session import Database
from engine.errors import BadRequest, RequestLimitExceeded, ResourceTypeNotFound
from engine.ir.stored import StoredIrs
from engine.resources.registry import ResourceTypeRegistry
from engine.services.proposals import StackLimits
from engine.services.stack_dry_runs import StackDryRuns
from engine.services.stack_writes import StackWrites
from engine.template.event_sinks import SinkRules
from tests.unit.conftest import Clock
from tests.unit.worker.running import run, worker

TEMPLATE = "heat_template_version: 2018-08-31\nresources:\n  r: {type: OS::Heat::None}\n"


@pytest.fixture
def propose(writes: StackWrites, dry_runs: StackDryRuns, ctx: RequestContext, db: Database,
            registry: ResourceTypeRegistry, clock: Clock
            ) -> dict[str, Callable[[dict[str, Any]], Any]]:
    """Each way of proposing a stack, by name; the updates update a created stack."""
    record = writes.create(ctx, {"stack_name": "existing", "template": TEMPLATE})
    run(worker(db, registry, clock))

    def update(patch: bool) -> Callable[[dict[str, Any]], Any]:
        return lambda body: writes.update(ctx, "existing", record.id, body, patch=patch)

    return {
        "create": lambda body: writes.create(ctx, {"stack_name": "new", **body}),
        "preview": lambda body: dry_runs.preview(ctx, {"stack_name": "new", **body}),
        "validate": lambda body: dry_runs.validate(ctx, body),
        "update": update(patch=False),
        "patch": update(patch=True),
        "preview_update": lambda body: dry_runs.preview_update(ctx, "existing", record.id,
                                                               body, patch=False),
    }


WAYS = ["create", "preview", "validate", "update", "patch", "preview_update"]


@pytest.mark.parametrize("way", WAYS)
def test_a_request_body_is_checked_once(
        way: str, propose: dict[str, Callable[[dict[str, Any]], Any]],
        checked: list[Mapping[str, Any]]) -> None:
    checked.clear()  # the create of the stack the updates update

    propose[way]({"template": TEMPLATE, "parameters": {}})

    assert [dict(body) for body in checked] == [
        {**({"stack_name": "new"} if way in ("create", "preview") else {}),
         "template": TEMPLATE, "parameters": {}}]


@pytest.mark.parametrize("way", WAYS)
def test_every_way_refuses_a_field_of_the_wrong_type(
        way: str, propose: dict[str, Callable[[dict[str, Any]], Any]]) -> None:
    with pytest.raises(BadRequest, match="^parameters must be a map$"):
        propose[way]({"template": TEMPLATE, "parameters": [1]})


@contextlib.contextmanager
def resources_per_stack(limit: int) -> Iterator[None]:
    """``[api] max_resources_per_stack`` as ``limit``: the budget holds it, for the API's
    count as for groups and nested stacks."""
    with budget.evaluation(dataclasses.replace(budget.DEFAULT, max_resources_per_stack=limit)):
        yield


def chain(length: int, resource_type: str = "OS::Heat::None") -> str:
    """``r0`` depends on ``r1`` ... : the walk from the first name goes the whole way down
    before it finishes anything (issue 17's RecursionError)."""
    lines = ["heat_template_version: 2018-08-31", "resources:"]
    lines += [f"  r{i}: {{type: {resource_type}, depends_on: r{i + 1}}}"
              for i in range(length - 1)]
    lines.append(f"  r{length - 1}: {{type: {resource_type}}}")
    return "\n".join(lines) + "\n"


def test_a_chain_of_5000_validates_when_the_limit_allows_it(
        dry_runs: StackDryRuns, ctx: RequestContext) -> None:
    with resources_per_stack(5000):
        assert dry_runs.validate(ctx, {"template": chain(5000)}).description == \
            "No description"


def test_the_resource_limit_is_checked_before_any_resource_is_read(
        dry_runs: StackDryRuns, ctx: RequestContext) -> None:
    """Past the limit, resources of a type that does not exist are never looked at: the
    count comes first, as Heat counts the resources section as written."""
    with resources_per_stack(100), pytest.raises(RequestLimitExceeded) as caught:
        dry_runs.validate(ctx, {"template": chain(101, "OS::No::Such")})

    assert caught.value.message == "Request limit exceeded: Maximum resources per stack " \
                                   "exceeded."
    with resources_per_stack(100), pytest.raises(ResourceTypeNotFound):
        dry_runs.validate(ctx, {"template": chain(100, "OS::No::Such")})


def test_resources_a_condition_leaves_out_count_too(
        dry_runs: StackDryRuns, ctx: RequestContext) -> None:
    template = ("heat_template_version: 2018-08-31\nconditions:\n  never: false\n"
                "resources:\n  a: {type: OS::Heat::None}\n"
                "  b: {type: OS::Heat::None, condition: never}\n")

    with resources_per_stack(1), pytest.raises(RequestLimitExceeded):
        dry_runs.validate(ctx, {"template": template})


HOOK = {"type": "webhook", "target": "https://hooks.example.com/kiln", "secret": "s"}


@pytest.mark.parametrize("way", ["create", "patch"])
def test_a_stack_may_name_only_so_many_event_sinks(
        propose: dict[str, Callable[[dict[str, Any]], Any]], way: str) -> None:
    sinks = [{**HOOK, "target": f"https://hooks.example.com/{n}"} for n in range(6)]

    with pytest.raises(BadRequest) as caught:
        propose[way]({"template": TEMPLATE, "environment": {"event_sinks": sinks}})

    assert caught.value.message == ("Too many event sinks (event_sinks in environment): 6 "
                                    "given, at most 5 per stack")


def test_a_patch_drops_stored_sinks_no_longer_allowed_and_checks_only_its_own(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs,
        ctx: RequestContext, caplog: pytest.LogCaptureFixture) -> None:
    """A stack stored before sinks were checked may hold a zaqar-queue sink, and the
    operator may have narrowed the schemes since: a PATCH that does not name sinks keeps
    the stored ones still allowed and drops the others (a WARNING each) instead of
    refusing the tenant for what it did not send; the sinks a request names are checked."""
    writes = StackWrites(db, registry, StackLimits(sink_rules=SinkRules(schemes=("https",))),
                         clock, irs)
    record = writes.create(ctx, {"stack_name": "old", "template": TEMPLATE,
                                 "environment": {"event_sinks": [HOOK]}})
    run(worker(db, registry, clock))
    zaqar = {"type": "zaqar-queue", "target": "q"}
    plain = {**HOOK, "target": "http://hooks.example.com/plain"}
    with db.transaction() as session:
        stack = session.get(Stack, record.id)
        assert stack is not None
        stack.environment = {**stack.environment, "event_sinks": [zaqar, HOOK, plain]}

    with caplog.at_level(logging.WARNING, logger="engine.services.update_requests"):
        writes.update(ctx, "old", record.id, {"parameters": {}}, patch=True)
    run(worker(db, registry, clock))

    with db.read() as session:
        stored = session.get(Stack, record.id)
        assert stored is not None
        assert (stored.environment["event_sinks"], stored.event_sinks) == ([HOOK], [HOOK])
    assert "zaqar-queue" in caplog.text and 'The scheme "http"' in caplog.text
    assert "dropped by its update" in caplog.text
    with pytest.raises(BadRequest) as caught:
        writes.update(ctx, "old", record.id, {"environment": {"event_sinks": [plain]}},
                      patch=True)
    assert caught.value.message == ('The scheme "http" of event_sinks[0] is not allowed '
                                    "here; allowed: https")
