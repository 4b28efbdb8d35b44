"""Check and converge in the engine, for any type that observes its backend: a SQLite
file, the real stack services and WorkerLoop, and a type whose backend is an in-memory
service handed to it through ``Runtime.service`` (the path the AWS client factory
takes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from engine.context import RequestContext
from engine.db.session import Database
from engine.resources.base import Resource, Token
from engine.resources.registry import ResourceTypeRegistry
from engine.resources.shared_clients import ResourceServices
from engine.schema import INTEGER, STRING, Property
from engine.services.events import EventQuery
from engine.services.proposals import StackLimits
from engine.services.stack_actions import StackActions
from tests.stack_api import StackApi
from tests.unit.conftest import Clock
from tests.unit.worker.running import run, worker


class Lamps:
    """The backend: lamps by id, and the updates it was asked for."""

    def __init__(self) -> None:
        self.lamps: dict[str, dict[str, Any]] = {}
        self.updates: list[dict[str, Any]] = []


class Lamp(Resource):
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "colour": Property(STRING, update_allowed=True),
        "size": Property(INTEGER),
    }
    check_supported: ClassVar[bool] = True

    def backend(self) -> Lamps:
        lamps: Lamps = self.runtime.service("lamps")
        return lamps

    def handle_create(self) -> Token:
        self.set_physical_id(self.physical_resource_name())
        self.backend().lamps[str(self.physical_id)] = dict(self.properties)
        return None

    def handle_update(self, prop_diff: Mapping[str, Any]) -> Token:
        self.backend().updates.append(dict(prop_diff))
        self.backend().lamps[str(self.physical_id)].update(prop_diff)
        return None

    def handle_delete(self) -> Token:
        self.backend().lamps.pop(str(self.physical_id), None)
        return None

    def observe(self) -> Mapping[str, Any] | None:
        return self.backend().lamps.get(str(self.physical_id))


TEMPLATE = """\
heat_template_version: 2018-08-31
parameters:
  secret: {type: string, hidden: true, default: s3cr3t-colour}
resources:
  red: {type: Test::Lamp, properties: {colour: red, size: 1}}
  blue: {type: Test::Lamp, properties: {colour: blue, size: 2}}
  hidden: {type: Test::Lamp, properties: {colour: {get_param: secret}, size: 3}}
"""


@pytest.fixture
def lamps() -> Lamps:
    return Lamps()


@pytest.fixture
def lamp_registry(registry: ResourceTypeRegistry, lamps: Lamps) -> ResourceTypeRegistry:
    types = {name: registry.get(name) for name in registry.names()}
    return ResourceTypeRegistry({**types, "Test::Lamp": Lamp},
                                services=ResourceServices({"lamps": lamps}))


@pytest.fixture
def lamp_stacks(db: Database, lamp_registry: ResourceTypeRegistry, clock: Clock
                ) -> StackApi:
    return StackApi(db, lamp_registry, StackLimits(), clock)


def _settle(db: Database, registry: ResourceTypeRegistry, clock: Clock) -> None:
    run(worker(db, registry, clock), ticks=20)


def _resources(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str
               ) -> dict[str, tuple[str, str, Any]]:
    return {r.name: (f"{r.action}_{r.status}", r.status_reason, r.drift)
            for r in stacks.list_resources(ctx, name, stack_id, {})}


def test_a_check_records_drift_masked_and_fails_what_is_gone(
        db: Database, lamp_registry: ResourceTypeRegistry, lamp_stacks: StackApi,
        lamps: Lamps, clock: Clock, ctx: RequestContext) -> None:
    record = lamp_stacks.create(ctx, {"stack_name": "lamps", "template": TEMPLATE})
    _settle(db, lamp_registry, clock)
    by_name = {props["size"]: pid for pid, props in lamps.lamps.items()}
    lamps.lamps[by_name[1]]["colour"] = "green"
    lamps.lamps[by_name[3]]["colour"] = "plain"
    del lamps.lamps[by_name[2]]
    StackActions(db, clock, 3600).act(ctx, record.name, record.id, {"check": None})
    _settle(db, lamp_registry, clock)
    found = _resources(lamp_stacks, ctx, record.name, record.id)
    assert found["red"] == ("CHECK_COMPLETE",
                            "Drift detected: colour differ from the template",
                            {"colour": {"expected": "red", "actual": "green"}})
    assert found["hidden"][2] == {"colour": {"expected": "******", "actual": "plain"}}
    assert found["blue"][:2] == (
        "CHECK_FAILED", f"ResourceMissing: resources.blue: The physical resource "
                        f"{by_name[2]} no longer exists")
    assert lamp_stacks.get(ctx, record.name, record.id).status == "FAILED"
    reasons = [e.reason for e in lamp_stacks.list_events(ctx, record.name, record.id,
                                                         EventQuery())]
    assert "Drift detected: colour differ from the template" in reasons
    assert not any("s3cr3t" in reason for reason in reasons)


def test_converge_puts_drift_back_and_leaves_the_rest_alone(
        db: Database, lamp_registry: ResourceTypeRegistry, lamp_stacks: StackApi,
        lamps: Lamps, clock: Clock, ctx: RequestContext) -> None:
    record = lamp_stacks.create(ctx, {"stack_name": "lamps", "template": TEMPLATE})
    _settle(db, lamp_registry, clock)
    red = next(pid for pid, props in lamps.lamps.items() if props["size"] == 1)
    lamps.lamps[red]["colour"] = "green"

    # A plain update changes nothing and looks at nothing.
    lamp_stacks.update(ctx, record.name, record.id, {}, patch=True)
    _settle(db, lamp_registry, clock)
    assert lamps.updates == [] and lamps.lamps[red]["colour"] == "green"

    lamp_stacks.update(ctx, record.name, record.id, {"converge": True}, patch=True)
    _settle(db, lamp_registry, clock)
    assert lamp_stacks.get(ctx, record.name, record.id).status == "COMPLETE"
    assert lamps.updates == [{"colour": "red"}]  # only the drifted lamp was called
    assert lamps.lamps[red]["colour"] == "red"
    found = _resources(lamp_stacks, ctx, record.name, record.id)
    assert {name: (status, drift) for name, (status, _, drift) in found.items()} == {
        "red": ("UPDATE_COMPLETE", {}), "blue": ("UPDATE_COMPLETE", {}),
        "hidden": ("UPDATE_COMPLETE", {})}

    # Drift in a property that only a replacement could change is not put back.
    lamps.lamps[red]["size"] = 9
    lamp_stacks.update(ctx, record.name, record.id, {"converge": "true"}, patch=True)
    _settle(db, lamp_registry, clock)
    assert _resources(lamp_stacks, ctx, record.name, record.id)["red"][:2] == (
        "UPDATE_FAILED", "NotSupported: resources.red: Drift in size cannot be put back in "
                         "place; change the template to replace the resource")
    assert lamps.updates == [{"colour": "red"}]
