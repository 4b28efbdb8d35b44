"""engine.services.stack_writes: a create's limit on the tenant's stacks, checked before
anything is stored, what an adopt checks of its request and its abandon data, and the
lifecycle plugins' verdicts at the door of a create, adopt or update (a refusal stores
nothing; the door sees what the preview and the worker see)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from sqlalchemy import func, select

from engine.bootstrap import Kiln
from engine.context import ADMIN_ROLE, RequestContext
from engine.db.models import Event, Operation, Stack
from engine.db.session import Database
from engine.errors import ActionInProgress, BadRequest, LifecycleDenied, RequestLimitExceeded
from engine.ir.stored import StoredIrs
from engine.lifecycle.base import Denied, Warn
from engine.lifecycle.registry import LifecycleRegistry
from engine.resources.registry import ResourceTypeRegistry
from engine.services.lifecycle import LifecycleService
from engine.services.proposals import StackLimits
from engine.services.stack_dry_runs import StackDryRuns
from engine.services.stack_writes import StackWrites
from engine.services.tenants import TenantService
from engine.template.parameters import MASK
from engine.vocabulary import Change
from tests.stack_api import kiln_config
from tests.unit.conftest import Clock
from tests.unit.services.test_stack_dry_runs import Both, DryRunning
from tests.unit.worker.running import run, worker
from tests.unit.worker.test_lifecycle_calls import Entry, Recording, deny, loaded

TEMPLATE = "heat_template_version: rocky\nresources:\n  r: {type: OS::Heat::None}\n"


def test_max_stacks_per_tenant(db: Database, registry: ResourceTypeRegistry,
                               clock: Clock, ctx: RequestContext) -> None:
    stacks = StackWrites(db, registry, StackLimits(max_stacks_per_tenant=2), clock,
                         StoredIrs(registry.get, registry.constraint))
    for name in ("a", "b"):
        stacks.create(ctx, {"stack_name": name, "template": TEMPLATE})

    with pytest.raises(RequestLimitExceeded) as caught:
        stacks.create(ctx, {"stack_name": "c", "template": TEMPLATE})

    assert caught.value.message == ("Request limit exceeded: You have reached the maximum "
                                    "stacks per tenant, 2. Please delete some stacks.")
    other = TenantService(db, clock).create_tenant("other")
    other_ctx = RequestContext(tenant_id=other.id, token_tenant_id=other.id, role=ADMIN_ROLE)
    assert stacks.create(other_ctx, {"stack_name": "c", "template": TEMPLATE}).name == "c"


def test_an_adopt_checks_the_request_and_then_the_abandon_datas_body(
        writes: StackWrites, ctx: RequestContext, checked: list[Mapping[str, Any]]) -> None:
    data = {"template": {"heat_template_version": "2018-08-31"}}

    writes.create(ctx, {"stack_name": "a", "adopt_stack_data": json.dumps(data)})

    assert [body.get("template") for body in checked] == [None, data["template"]]


@pytest.mark.parametrize("data, message", [
    ({"environment": {"parameters": [1]}}, "the environment's parameters must be a map"),
    ({"environment": {"parameters": "p=1"}}, "the environment's parameters must be a map"),
    ({"environment": {"parameter_defaults": [1]}},
     "the environment's parameter_defaults must be a map"),
    ({"resources": {"r": 5}}, "resource r must be a map, its resource_data too"),
    ({"resources": {"r": {"resource_data": [1]}}},
     "resource r must be a map, its resource_data too"),
])
def test_abandon_data_of_the_wrong_shape_is_a_400(data: dict[str, Any], message: str,
                                                  writes: StackWrites,
                                                  ctx: RequestContext) -> None:
    # Each was a TypeError or an AttributeError: a 500.
    data = {"template": {"heat_template_version": "2018-08-31",
                         "resources": {"r": {"type": "OS::Heat::None"}}}, **data}

    with pytest.raises(BadRequest) as caught:
        writes.create(ctx, {"stack_name": "a", "adopt_stack_data": json.dumps(data)})

    assert caught.value.message == f"Invalid adopt data: {message}"


# --- verdicts at the door -------------------------------------------------------------------

DOOR_TEMPLATE = """\
heat_template_version: 2018-08-31
parameters:
  password: {type: string, hidden: true, default: hunter2}
resources:
  word:
    type: OS::Heat::RandomString
    properties: {salt: {get_param: password}}
"""


def with_door(db: Database, registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs,
              *plugins: Recording, door_timeout: float = 5.0, **conf: Any) -> StackWrites:
    """The writes as bootstrap wires them over ``plugins`` (each with a 10 s timeout that
    fails), ``[lifecycle_plugins]`` set from ``conf`` and ``door_timeout``."""
    options = kiln_config(StackLimits())
    options.set_override("door_timeout_seconds", door_timeout, group="lifecycle_plugins")
    for name, value in conf.items():
        options.set_override(name, value, group="lifecycle_plugins")
    kiln = Kiln(options, db, clock=clock, registry=registry,
                lifecycle=LifecycleRegistry([loaded(plugin) for plugin in plugins]))
    kiln.irs = irs  # the fixtures' cache, which their worker and dry runs share
    return kiln.stack_writes


def counts(db: Database) -> tuple[int, int, int]:
    """How many stacks, operations and events the database holds."""
    with db.read() as session:
        return tuple(session.scalar(select(func.count()).select_from(model)) or 0
                     for model in (Stack, Operation, Event))  # type: ignore[return-value]


def denies(action: str, message: str) -> Callable[[str | None], Warn | None]:
    def pre(called: str | None) -> Warn | None:
        if called == action:
            raise Denied(message)
        return None
    return pre


def test_a_create_a_plugin_denies_at_the_door_stores_nothing(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    writes = with_door(
        db, registry, clock, irs, DryRunning("audit", log, pre=lambda action: Warn("noted")),
        DryRunning("policy", log, pre=deny("password hunter2 is too weak")),
        DryRunning("quota", log, pre=deny("no room")), Recording("legacy", log))

    with pytest.raises(LifecycleDenied) as refused:
        writes.create(ctx, {"stack_name": "web", "template": DOOR_TEMPLATE})

    # Heat's 400 naming each plugin that would fail the create, hidden values masked.
    assert refused.value.message == (
        f"Lifecycle plugin policy denied CREATE: password {MASK} is too weak; "
        "Lifecycle plugin quota denied CREATE: no room")
    assert counts(db) == (0, 0, 0)
    # Only the plugins that support dry runs were asked, each told it is one.
    assert log == [("audit", "pre", "CREATE", None), ("policy", "pre", "CREATE", None),
                   ("quota", "pre", "CREATE", None)]


def test_a_create_the_door_lets_through_is_stored_and_judged_again_by_the_worker(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs,
        ctx: RequestContext) -> None:
    plugin = DryRunning("audit", [], pre=lambda action: Warn("noted"))
    writes = with_door(db, registry, clock, irs, plugin, Recording("legacy", []))

    record = writes.create(ctx, {"stack_name": "web", "template": DOOR_TEMPLATE,
                                 "parameters": {"password": "hunter9"}})
    run(worker(db, registry, clock, [loaded(plugin)], irs=irs))

    door, real = [seen for seen in plugin.seen if seen.phase == "pre"]
    # The door saw the stack the worker then judged: its id, action, resources, changes.
    assert (door.stack.dry_run, real.stack.dry_run) == (True, False)
    assert (door.stack.id, door.stack.action, door.stack.status) == (
        record.id, "CREATE", "CREATE_IN_PROGRESS")
    assert door.stack.resources == real.stack.resources
    assert door.stack.changes == real.stack.changes
    assert door.stack.parameters["password"] == MASK
    assert counts(db)[:2] == (1, 1)


def _fails(action: str | None) -> Warn | None:
    raise RuntimeError("rules file unreadable")


def _slow_denial(action: str | None) -> Warn | None:
    time.sleep(0.3)
    raise Denied("too late to matter at the door")


@pytest.mark.parametrize(("pre", "refusal"), [
    (_fails, "Lifecycle plugin gate failed on CREATE: RuntimeError: rules file unreadable"),
    # Past the door's bound: not a refusal, though its own timeout is 10 s and fails.
    (_slow_denial, None),
])
def test_a_plugin_that_breaks_refuses_at_the_door_and_one_too_slow_does_not(
        pre: Any, refusal: str | None, db: Database, registry: ResourceTypeRegistry,
        clock: Clock, irs: StoredIrs, ctx: RequestContext) -> None:
    writes = with_door(db, registry, clock, irs, DryRunning("gate", [], pre=pre),
                       door_timeout=0.05)
    body = {"stack_name": "web", "template": DOOR_TEMPLATE}

    if refusal is None:
        assert writes.create(ctx, body).name == "web"
        assert counts(db)[:2] == (1, 1)
        return
    with pytest.raises(LifecycleDenied) as refused:
        writes.create(ctx, body)
    assert refused.value.message == refusal
    assert counts(db) == (0, 0, 0)


def test_the_door_can_be_turned_off(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    writes = with_door(db, registry, clock, irs, DryRunning("policy", log, pre=deny("no")),
                       check_at_the_door=False)

    assert writes.create(ctx, {"stack_name": "web", "template": DOOR_TEMPLATE}).name == "web"
    assert log == []  # the worker's pre-op will deny it


def test_an_adopt_is_judged_at_the_door_as_an_adopt(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs,
        ctx: RequestContext) -> None:
    plugin = DryRunning("policy", [], pre=denies("ADOPT", "adopt refused"))
    writes = with_door(db, registry, clock, irs, plugin)
    data = {"template": {"heat_template_version": "2018-08-31",
                         "resources": {"r": {"type": "OS::Heat::None"}}},
            "resources": {"r": {"resource_id": "x"}}}

    with pytest.raises(LifecycleDenied) as refused:
        writes.create(ctx, {"stack_name": "web", "adopt_stack_data": json.dumps(data)})

    assert refused.value.message == "Lifecycle plugin policy denied ADOPT: adopt refused"
    [seen] = plugin.seen
    assert (seen.stack.status, dict(seen.stack.changes)) == ("ADOPT_IN_PROGRESS", {})
    assert counts(db) == (0, 0, 0)


AFTER = DOOR_TEMPLATE + "  more: {type: OS::Heat::None}\n"
UPDATES: dict[str, tuple[dict[str, Any], bool]] = {
    "put": ({"template": AFTER}, False),
    "patch": ({"template": AFTER, "parameters": {"password": "hunter3"}}, True),
}


@pytest.fixture
def web(writes: StackWrites, db: Database, registry: ResourceTypeRegistry, clock: Clock,
        irs: StoredIrs, ctx: RequestContext) -> str:
    """The id of "web", created from DOOR_TEMPLATE (without a door)."""
    stack_id = writes.create(ctx, {"stack_name": "web", "template": DOOR_TEMPLATE}).id
    run(worker(db, registry, clock, irs=irs))
    return stack_id


@pytest.mark.parametrize("update", sorted(UPDATES))
def test_an_update_a_plugin_denies_at_the_door_stores_nothing(
        update: str, web: str, db: Database, registry: ResourceTypeRegistry, clock: Clock,
        irs: StoredIrs, ctx: RequestContext) -> None:
    writes = with_door(db, registry, clock, irs,
                       DryRunning("policy", [], pre=denies("UPDATE", "hunter2 is too weak")))
    before = counts(db)
    body, patch = UPDATES[update]

    with pytest.raises(LifecycleDenied) as refused:
        writes.update(ctx, "web", web, body, patch=patch)

    assert refused.value.message == f"Lifecycle plugin policy denied UPDATE: {MASK} is too weak"
    assert counts(db) == before
    with db.read() as session:
        stack = session.get(Stack, web)
        assert stack is not None
        assert (stack.action, stack.status, sorted(stack.template["resources"])) == (
            "CREATE", "COMPLETE", ["word"])


@pytest.mark.parametrize("update", sorted(UPDATES))
def test_the_door_shows_the_plugins_the_update_its_preview_shows(
        update: str, web: str, db: Database, registry: ResourceTypeRegistry, clock: Clock,
        irs: StoredIrs, ctx: RequestContext) -> None:
    plugin = Both("watch", [])
    preview = StackDryRuns(db, registry, StackLimits(), clock, irs, lifecycle=LifecycleService(
        LifecycleRegistry([loaded(plugin)])))
    body, patch = UPDATES[update]

    preview.preview_update(ctx, "web", web, body, patch=patch)
    previewed = (plugin.seen[-1].stack, plugin.current)
    with_door(db, registry, clock, irs, plugin).update(ctx, "web", web, body, patch=patch)

    assert (plugin.seen[-1].stack, plugin.current) == previewed
    assert previewed[0].changes["more"].action == Change.CREATE
    assert counts(db)[1] == 2  # the create and now the update


def test_a_busy_stack_is_refused_before_any_plugin_is_asked(
        writes: StackWrites, db: Database, registry: ResourceTypeRegistry, clock: Clock,
        irs: StoredIrs, ctx: RequestContext) -> None:
    stack_id = writes.create(ctx, {"stack_name": "web", "template": DOOR_TEMPLATE}).id
    log: list[Entry] = []
    door = with_door(db, registry, clock, irs, DryRunning("policy", log, pre=deny("no")))

    with pytest.raises(ActionInProgress):
        door.update(ctx, "web", stack_id, {"template": AFTER}, patch=False)
    assert log == []
