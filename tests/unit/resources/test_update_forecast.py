"""An update's forecast (``engine.resources.update_forecast``) decides each resource as its
step will (``engine.worker.step_decision``): an external resource is never changed, an
update with ``converge`` acts on a resource that observes its backend, a deletion policy
of Retain is told apart, and a resource's stable name is the worker's after a
replacement. Pure: the new IR built from template text, the stored resources as facts,
and read-only runtimes."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

import yaml

from engine.ir.build import build_from_document
from engine.ir.model import ResolvedStack
from engine.resources.base import Resource
from engine.resources.read_only import ReadOnlyRuntime
from engine.resources.registry import ResourceTypeRegistry
from engine.resources.update_forecast import (
    PlannedChange,
    StoredFacts,
    forecast_delete,
    forecast_update,
)
from engine.schema import INTEGER, STRING, Attribute, Property
from engine.template.parse import document
from engine.vocabulary import Change
from engine.worker.step_runtime import StepRuntime
from tests.unit.conftest import Clock


class Lamp(Resource):
    """Colour changes in place, size only by a replacement; it reads its backend, and
    its ``name`` is its stable physical name."""

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "colour": Property(STRING, update_allowed=True),
        "size": Property(INTEGER),
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {"name": Attribute("its name")}

    def observe(self) -> Mapping[str, Any] | None:
        return dict(self.properties)

    def get_attribute(self, name: str) -> Any:
        return self.physical_resource_name() if name == "name" else None


class Bulb(Lamp):
    """A lamp whose backend cannot be read."""

    observe = Resource.observe


TYPES = ResourceTypeRegistry({"Test::Lamp": Lamp, "Test::Bulb": Bulb})
STACK_ID = "stack-1"


@dataclasses.dataclass(frozen=True)
class Named:
    id: Any
    name: str
    tenant_id: str = "tenant-1"
    generation: int = 0


STACK = Named(STACK_ID, "lamps")


def ir(resources: str) -> ResolvedStack:
    doc = {"heat_template_version": "2018-08-31", "resources": yaml.safe_load(resources)}
    pseudo = {"OS::stack_name": "lamps", "OS::stack_id": STACK_ID,
              "OS::project_id": "tenant-1"}
    return build_from_document(document(doc), {}, pseudo, TYPES.get)


RED: Mapping[str, Any] = {"colour": "red", "size": 1}


def stored(name: str, kind: str = "Test::Lamp", *, physical_id: str | None = "lamp-1",
           properties: Mapping[str, Any] | None = RED, deletion_policy: str = "Delete",
           requires: frozenset[str] = frozenset()) -> StoredFacts:
    return StoredFacts(name, kind, "CREATE", "COMPLETE", properties, physical_id, {}, None,
                       requires, deletion_policy)


def forecast(target: ResolvedStack, facts: Mapping[str, StoredFacts], clock: Clock, *,
             converge: bool = False, generations: Mapping[str, int] | None = None
             ) -> dict[str, PlannedChange]:
    rows = {name: Named(index, name, generation=(generations or {}).get(name, 0))
            for index, name in enumerate(sorted(facts), start=1)}
    return forecast_update(target, facts, TYPES,
                           lambda name: ReadOnlyRuntime(STACK, rows[name], clock),
                           converge=converge)


def actions(planned: Mapping[str, PlannedChange]) -> dict[str, Change]:
    return {name: change.action for name, change in planned.items()}


# --- external resources -------------------------------------------------------------------


def test_an_external_resource_is_never_changed_whatever_its_properties_say(
        clock: Clock) -> None:
    target = ir("lamp: {type: Test::Lamp, external_id: ext-1, "
                "properties: {colour: blue, size: 2}}")

    planned = forecast(target, {"lamp": stored("lamp", physical_id="ext-1")}, clock)

    # The worker closes the step: Heat looks at an external resource, never changes it.
    assert planned["lamp"] == PlannedChange(Change.NONE, {})


def test_an_external_resource_not_taken_over_yet_is_adopted(clock: Clock) -> None:
    target = ir("lamp: {type: Test::Lamp, external_id: ext-1, properties: {colour: red}}")

    planned = forecast(target, {"lamp": stored("lamp", physical_id=None, properties=None)},
                       clock)

    assert planned["lamp"].action == Change.CREATE


def test_a_changed_external_id_is_an_update_the_step_refuses(clock: Clock) -> None:
    target = ir("lamp: {type: Test::Lamp, external_id: ext-2, properties: {colour: red, "
                "size: 1}}")

    planned = forecast(target, {"lamp": stored("lamp", physical_id="ext-1")}, clock)

    assert planned["lamp"].action == Change.UPDATE


# --- converge -----------------------------------------------------------------------------


def test_converge_updates_a_resource_that_observes_its_backend(clock: Clock) -> None:
    target = ir("lamp: {type: Test::Lamp, properties: {colour: red, size: 1}}\n"
                "bulb: {type: Test::Bulb, properties: {colour: red, size: 1}}")
    facts = {"lamp": stored("lamp"), "bulb": stored("bulb", "Test::Bulb")}

    assert actions(forecast(target, facts, clock)) == {"lamp": Change.NONE,
                                                      "bulb": Change.NONE}
    # The step observes the lamp and puts back what drifted; a bulb cannot be read.
    assert actions(forecast(target, facts, clock, converge=True)) == {
        "lamp": Change.UPDATE, "bulb": Change.NONE}


# --- deletion policy ------------------------------------------------------------------------


def test_a_retained_resource_leaves_the_stack_but_is_said_to_be_kept(clock: Clock) -> None:
    facts = {"kept": stored("kept", deletion_policy="Retain"), "gone": stored("gone")}

    planned = forecast(ir("{}"), facts, clock)

    assert actions(planned) == {"kept": Change.DELETE, "gone": Change.DELETE}
    assert planned["kept"].retained and not planned["gone"].retained
    deleted = forecast_delete(facts)
    assert deleted["kept"].retained and not deleted["gone"].retained


# --- stable names ---------------------------------------------------------------------------


def test_a_replaced_resource_is_read_under_the_workers_stable_name(clock: Clock) -> None:
    # "lamp" was replaced once (generation 1); "user" stored the name the worker gave it.
    worker_name = Lamp("lamp", {}, StepRuntime(
        None, clock, STACK, 1, "lamp", 1,  # type: ignore[arg-type]  # never touched
        registry=TYPES, api_url="")).physical_resource_name()
    target = ir("lamp: {type: Test::Lamp, properties: {colour: red, size: 1}}\n"
                "user: {type: Test::Lamp, properties: {colour: {get_attr: [lamp, name]}, "
                "size: 1}}")
    facts = {"lamp": stored("lamp"),
             "user": stored("user", properties={"colour": worker_name, "size": 1},
                            requires=frozenset({"lamp"}))}

    planned = forecast(target, facts, clock, generations={"lamp": 1})

    assert actions(planned) == {"lamp": Change.NONE, "user": Change.NONE}
