"""What a claimed step will do (``engine.worker.step_decision``), on a SQLite file: stack,
resource and operation rows written as the services and the planner leave them, a step
as the worker claims it, and the decision read back with what it wrote."""

from __future__ import annotations

import dataclasses
import datetime
import itertools
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from engine import errors
from engine.context import RequestContext
from engine.db import resource_rows, stack_rows
from engine.db.models import Operation, Stack, Step
from engine.db.models import Resource as ResourceRow
from engine.db.session import Database
from engine.ir.stored import StoredIrs
from engine.resources.base import Resource
from engine.resources.registry import ResourceTypeRegistry
from engine.schema import INTEGER, STRING, Property
from engine.worker.step_decision import (
    Definition,
    Outcome,
    StepDecider,
    StepDecision,
    converging_diff,
    observed_drift,
    per_operation,
    read_once,
)
from engine.worker.step_writes import failure_reason
from tests.unit.conftest import Clock

API_URL = "http://kiln.test"


class Lamp(Resource):
    """Colour changes in place, size only by a replacement; the backend's view of it is
    what its data says it saw (none: the lamp is gone)."""

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "colour": Property(STRING, update_allowed=True),
        "size": Property(INTEGER),
    }

    def observe(self) -> Mapping[str, Any] | None:
        seen: Mapping[str, Any] | None = self.data.get("seen")
        return seen


class Bulb(Lamp):
    """A lamp whose backend cannot be read."""

    observe = Resource.observe


def template(colour: Any = "red", size: Any = 1, *, kind: str = "Test::Lamp",
             **extra: Any) -> dict[str, Any]:
    return {"heat_template_version": "2018-08-31",
            "parameters": {"secret": {"type": "string", "hidden": True,
                                      "default": "s3cr3t"}},
            "resources": {"lamp": {"type": kind, "properties": {"colour": colour,
                                                                "size": size}, **extra}}}


@dataclasses.dataclass(frozen=True)
class Decided:
    decision: StepDecision
    resource_action: str | None  # what the step stored
    row: dict[str, Any]  # the resource row once the decision's transaction ended


class Scene:
    """One stack with one resource, ``lamp``; each ``decide`` is a new operation's step."""

    def __init__(self, db: Database, registry: ResourceTypeRegistry, clock: Clock,
                 tenant_id: str) -> None:
        self.db, self.registry, self.clock = db, registry, clock
        self.decider = StepDecider(db, registry, clock, api_url=API_URL,
                                   irs=StoredIrs(registry.get, registry.constraint))
        self.stack_id = str(uuid.uuid4())
        self._step_ids = itertools.count(1)
        now = clock()
        with db.transaction() as session:
            session.add(Stack(id=self.stack_id, tenant_id=tenant_id, name="lamps",
                              action="CREATE", status="COMPLETE", template=template(),
                              parameters={}, environment={}, files={}, tags=[],
                              created_at=now))
            session.flush()  # the stack before its resource (no ORM relationship orders them)
            session.add(ResourceRow(stack_id=self.stack_id, name="lamp", type="Test::Lamp",
                                    action="CREATE", status="COMPLETE",
                                    physical_id="lamp-1",
                                    properties={"colour": "red", "size": 1},
                                    data={"seen": {"colour": "red", "size": 1}},
                                    requires=[], created_at=now))

    def add(self, name: str, kind: str, properties: dict[str, Any]) -> None:
        """Another resource, created."""
        with self.db.transaction() as session:
            session.add(ResourceRow(stack_id=self.stack_id, name=name, type=kind,
                                    action="CREATE", status="COMPLETE", physical_id=name,
                                    properties=properties, data={}, requires=[],
                                    created_at=self.clock()))

    def stored(self, **values: Any) -> None:
        """Change the stored resource row."""
        with self.db.transaction() as session:
            row = resource_rows.get_stack_resource(session, self.stack_id, "lamp")
            for name, value in values.items():
                setattr(row, name, value)

    def decide(self, action: str, new_template: dict[str, Any] | None = None, *,
               operation: str = "UPDATE", payload: dict[str, Any] | None = None,
               started: bool = False, resource_action: str | None = None) -> Decided:
        now = self.clock()
        with self.db.transaction() as session:
            stack = stack_rows.load_stack(session, self.stack_id)
            if new_template is not None:
                stack.template = new_template  # as planning an update writes its target
            # Finished already, so that each decision can have an operation of its own.
            op = Operation(id=str(uuid.uuid4()), stack_id=self.stack_id, action=operation,
                           state="RUNNING", payload=payload, context={}, lifecycle={},
                           deadline_at=now + datetime.timedelta(hours=1), created_at=now,
                           finished_at=now)
            session.add(op)
            session.flush()
            step = Step(id=next(self._step_ids), operation_id=op.id, stack_id=self.stack_id,
                        resource_name="lamp", action=action, state="RUNNING",
                        prerequisites_left=0, started=started,
                        resource_action=resource_action, failures=0)
            row = resource_rows.get_stack_resource(session, self.stack_id, "lamp")
            decision = self.decider.decide(session, step, stack, row)
            snapshot = {name: getattr(row, name) for name in (
                "type", "physical_id", "properties", "data", "replaced", "generation",
                "deletion_policy", "action", "status")}
            return Decided(decision, step.resource_action, snapshot)


@pytest.fixture
def scene(db: Database, registry: ResourceTypeRegistry, clock: Clock,
          ctx: RequestContext) -> Scene:
    types = {name: registry.get(name) for name in registry.names()}
    lamps = ResourceTypeRegistry({**types, "Test::Lamp": Lamp, "Test::Bulb": Bulb})
    return Scene(db, lamps, clock, ctx.tenant_id)


# --- creating and adopting --------------------------------------------------------------


def test_a_create_acts_with_the_evaluated_properties_and_the_new_definition(
        scene: Scene) -> None:
    scene.stored(properties=None, physical_id=None, data={}, action="INIT")
    decided = scene.decide("CREATE", template(colour={"get_param": "secret"}),
                           operation="CREATE")
    decision = decided.decision
    assert (decision.outcome, decision.action, decision.resource_type) == (
        Outcome.ACT, "CREATE", "Test::Lamp")
    assert decision.definition == Definition("Test::Lamp", {"colour": "s3cr3t", "size": 1},
                                              "Delete")
    assert decision.instance is not None
    assert dict(decision.instance.properties) == {"colour": "s3cr3t", "size": 1}
    assert decision.instance.physical_id is None
    assert decision.secrets == ("s3cr3t",)
    assert decision.failure is None and decision.prop_diff is None
    assert decided.resource_action is None  # only an update's decision is stored


def test_a_property_that_fails_to_evaluate_fails_the_step_and_keeps_the_definition(
        scene: Scene) -> None:
    scene.add("word", "OS::Heat::Value", {"value": "large"})
    sized = template(size={"get_attr": ["word", "value"]})
    sized["resources"]["word"] = {"type": "OS::Heat::Value", "properties": {"value": "large"}}
    decision = scene.decide("UPDATE", sized).decision
    assert (decision.outcome, decision.action) == (Outcome.ACT, "UPDATE")
    assert isinstance(decision.failure, errors.StackValidationFailed)
    assert decision.definition is None  # the row keeps what it had


def test_an_adopt_takes_its_entry_of_the_abandon_data(scene: Scene) -> None:
    entry = {"resource_id": "lamp-9", "resource_data": {"seen": {"colour": "red"}}}
    decision = scene.decide("ADOPT", operation="ADOPT",
                            payload={"resources": {"lamp": entry}}).decision
    assert (decision.outcome, decision.action, decision.adopt) == (Outcome.ACT, "ADOPT",
                                                                   entry)
    assert decision.failure is None

    decision = scene.decide("ADOPT", operation="ADOPT",
                            payload={"resources": {"other": entry}}).decision
    assert decision.outcome == Outcome.ACT and decision.adopt is None
    assert isinstance(decision.failure, errors.ResourceMissing)
    assert failure_reason(decision.failure, "lamp", ()) == (
        "ResourceMissing: resources.lamp: the adopt data has no entry for this resource")


def test_an_external_resource_is_adopted_retained_and_never_changed(scene: Scene) -> None:
    external = template(external_id="ext-1")
    scene.stored(properties=None, physical_id=None, data={})
    decision = scene.decide("CREATE", external, operation="CREATE").decision
    assert (decision.outcome, decision.action, decision.adopt) == (
        Outcome.ACT, "ADOPT", {"resource_id": "ext-1", "resource_data": {}})
    assert decision.definition is not None
    assert decision.definition.deletion_policy == "Retain"

    scene.stored(properties={"colour": "red", "size": 1}, physical_id="ext-1")
    assert scene.decide("UPDATE", template(colour="blue", external_id="ext-1")
                        ).decision.outcome == Outcome.CLOSE

    scene.stored(physical_id="lamp-1")
    decision = scene.decide("UPDATE", external).decision
    assert decision.outcome == Outcome.ACT and decision.definition is None
    assert isinstance(decision.failure, errors.NotSupported)
    assert failure_reason(decision.failure, "lamp", ()) == (
        "NotSupported: resources.lamp: Update to property external_id of lamp "
        "(Test::Lamp) is not supported.")


# --- updating ---------------------------------------------------------------------------


def test_a_change_allowed_in_place_is_an_update_of_what_changed(scene: Scene) -> None:
    decided = scene.decide("UPDATE", template(colour="green"))
    decision = decided.decision
    assert (decision.outcome, decision.action, decision.prop_diff) == (
        Outcome.ACT, "UPDATE", {"colour": "green"})
    assert decision.definition == Definition("Test::Lamp", {"colour": "green", "size": 1},
                                              "Delete")
    assert decision.converge is False
    assert decided.resource_action == "UPDATE"
    assert decided.row["physical_id"] == "lamp-1" and decided.row["replaced"] is None


def test_a_change_that_cannot_be_made_in_place_replaces_the_resource(scene: Scene) -> None:
    decided = scene.decide("UPDATE", template(size=2))
    decision = decided.decision
    assert (decision.outcome, decision.action) == (Outcome.ACT, "CREATE")
    assert decided.resource_action == "REPLACE"
    # The current one is moved aside, to be cleaned up; the new one starts clean.
    assert decided.row["replaced"] == {
        "type": "Test::Lamp", "physical_id": "lamp-1",
        "properties": {"colour": "red", "size": 1},
        "data": {"seen": {"colour": "red", "size": 1}}, "generation": 0}
    assert (decided.row["physical_id"], decided.row["data"], decided.row["generation"]) == (
        None, {}, 1)
    assert decision.instance is not None and decision.instance.physical_id is None
    assert decision.instance.runtime.resource_key.endswith("/1")  # a new stable name


def test_an_unchanged_resource_is_left_alone_and_the_decision_kept(scene: Scene) -> None:
    decided = scene.decide("UPDATE", template())
    assert decided.decision == StepDecision(Outcome.CLOSE)
    assert decided.resource_action == "NONE"


def test_a_resumed_step_does_what_was_decided_before(scene: Scene) -> None:
    decided = scene.decide("UPDATE", template(), started=True, resource_action="UPDATE")
    assert (decided.decision.outcome, decided.decision.action,
            decided.decision.prop_diff) == (Outcome.ACT, "UPDATE", {})


def test_a_converging_update_observes_even_without_changes(scene: Scene) -> None:
    decision = scene.decide("UPDATE", template(), payload={"converge": True}).decision
    assert (decision.outcome, decision.action, decision.converge,
            decision.prop_diff) == (Outcome.ACT, "UPDATE", True, {})

    # A type that cannot read its backend has nothing to converge.
    bulb = template(kind="Test::Bulb")
    scene.stored(type="Test::Bulb")
    assert scene.decide("UPDATE", bulb, payload={"converge": True}
                        ).decision.outcome == Outcome.CLOSE


def test_converging_puts_back_what_drifted_unless_only_a_replacement_could(
        scene: Scene) -> None:
    decision = scene.decide("UPDATE", template(), payload={"converge": True}).decision
    lamp = decision.instance
    assert lamp is not None
    assert observed_drift(lamp) == {}
    assert converging_diff(lamp, {}, {}) == {}  # nothing to do
    drift = {"colour": {"expected": "red", "actual": "green"}}
    assert converging_diff(lamp, drift, {"size": 3}) == {"colour": "red", "size": 3}

    with pytest.raises(errors.NotSupported) as raised:
        converging_diff(lamp, {"size": {"expected": 1, "actual": 9}}, {})
    assert isinstance(raised.value, errors.NotSupported)
    assert failure_reason(raised.value, "lamp", ()) == (
        "NotSupported: resources.lamp: Drift in size cannot be put back in place; change "
        "the template to replace the resource")

    lamp.data.pop("seen")  # the backend no longer has it
    with pytest.raises(errors.ResourceMissing) as missing:
        observed_drift(lamp)
    assert failure_reason(missing.value, "lamp", ()) == (
        "ResourceMissing: resources.lamp: The physical resource lamp-1 no longer exists")


# --- replacements left behind -------------------------------------------------------------

REPLACED = {"type": "Test::Lamp", "physical_id": "lamp-1",
            "properties": {"colour": "red", "size": 1}, "data": {"k": "v"}, "generation": 0}


def test_a_cleanup_deletes_the_replaced_resource(scene: Scene) -> None:
    assert scene.decide("CLEANUP").decision == StepDecision(Outcome.CLOSE)  # none left

    scene.stored(replaced=REPLACED, physical_id="lamp-2", generation=1,
                 properties={"colour": "red", "size": 2})
    decision = scene.decide("CLEANUP").decision
    assert (decision.outcome, decision.action, decision.resource_type) == (
        Outcome.CLEAN_UP, "DELETE", "Test::Lamp")
    assert decision.instance is not None
    assert decision.instance.physical_id == "lamp-1"
    assert dict(decision.instance.data) == {"k": "v"}
    assert decision.instance.runtime.resource_key.endswith("/lamp/1")  # generation 0


def test_a_rollback_to_the_replaced_resource_restores_it(scene: Scene) -> None:
    scene.stored(replaced=REPLACED, physical_id="lamp-2", generation=1,
                 properties={"colour": "red", "size": 2})
    decided = scene.decide("UPDATE", template(), operation="ROLLBACK")
    decision = decided.decision
    assert decided.resource_action == "RESTORE"
    assert (decision.outcome, decision.action) == (Outcome.RESTORE, "DELETE")
    assert decision.instance is not None
    assert decision.instance.physical_id == "lamp-2"  # the replacement goes


# --- restoring a snapshot ------------------------------------------------------------------


class Dimmer(Lamp):
    """A lamp restored to the colour its snapshot kept; told to, it reads its signals
    (a runtime call the contract forbids in ``handle_restore``)."""

    def handle_restore(self, snapshot: Mapping[str, Any]) -> Mapping[str, Any]:
        if snapshot.get("reach_out"):
            self.runtime.signals()
        self.data["restored"] = True
        return {**self.properties, "colour": snapshot["resource_data"]["colour"]}


def test_a_restore_decides_on_what_handle_restore_gives_on_a_read_only_runtime(
        scene: Scene) -> None:
    scene.registry = ResourceTypeRegistry(
        {**{n: scene.registry.get(n) for n in scene.registry.names()},
         "Test::Lamp": Dimmer})
    scene.decider = StepDecider(scene.db, scene.registry, scene.clock, api_url=API_URL,
                                irs=StoredIrs(scene.registry.get, scene.registry.constraint))
    entry = {"resource_id": "lamp-1", "resource_data": {"colour": "blue"}}
    decision = scene.decide("UPDATE", template(), operation="RESTORE",
                            payload={"snapshot": {"resources": {"lamp": entry}}}).decision
    assert (decision.outcome, decision.action, decision.failure) == (Outcome.ACT, "UPDATE",
                                                                     None)
    assert decision.prop_diff == {"colour": "blue"}
    assert decision.instance is not None and decision.instance.data["restored"] is True

    # Called inside the deciding transaction, a runtime call would open another (SQLite:
    # a deadlock); the read-only runtime refuses it and the step fails instead.
    decision = scene.decide("UPDATE", template(), operation="RESTORE", payload={
        "snapshot": {"resources": {"lamp": {**entry, "reach_out": True}}}}).decision
    assert decision.outcome == Outcome.ACT
    assert isinstance(decision.failure, RuntimeError)
    assert "read its signals" in str(decision.failure)


# --- nothing to act on, or failing at once ------------------------------------------------


def test_a_delete_with_nothing_to_delete_ends_the_resource(scene: Scene) -> None:
    scene.stored(deletion_policy="Retain")
    assert scene.decide("DELETE", operation="DELETE").decision == StepDecision(
        Outcome.END, "DELETE", reason="Retained")
    scene.stored(deletion_policy="Delete", properties=None, physical_id=None)
    assert scene.decide("DELETE", operation="DELETE").decision == StepDecision(
        Outcome.END, "DELETE", reason="state changed")
    assert scene.decide("SUSPEND", operation="SUSPEND").decision == StepDecision(
        Outcome.CLOSE)


def test_a_check_of_a_resource_never_created_fails(scene: Scene) -> None:
    scene.stored(properties=None, physical_id=None)
    decision = scene.decide("CHECK", operation="CHECK").decision
    assert (decision.outcome, decision.mark_in_progress) == (Outcome.FAIL, True)
    assert decision.failure is not None
    assert failure_reason(decision.failure, "lamp", ()) == (
        "ResourceMissing: resources.lamp: the resource was never created")


def test_a_type_uninstalled_since_fails_its_own_step_only(scene: Scene) -> None:
    scene.stored(type="Gone::Lamp")
    decision = scene.decide("DELETE", operation="DELETE").decision
    assert (decision.outcome, decision.mark_in_progress) == (Outcome.FAIL, True)
    assert isinstance(decision.failure, errors.KilnError)
    resumed = scene.decide("DELETE", operation="DELETE", started=True).decision
    assert (resumed.outcome, resumed.mark_in_progress) == (Outcome.FAIL, False)


def test_a_delete_acts_on_what_is_stored_without_the_template(scene: Scene) -> None:
    decision = scene.decide("DELETE", {"heat_template_version": "2018-08-31"},
                            operation="DELETE").decision
    assert (decision.outcome, decision.action, decision.definition) == (
        Outcome.ACT, "DELETE", None)
    assert decision.instance is not None
    assert decision.instance.physical_id == "lamp-1"
    assert dict(decision.instance.properties) == {"colour": "red", "size": 1}


def test_an_operation_s_fact_is_read_once_and_the_least_recently_used_forgotten(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("engine.worker.step_decision.PER_OPERATION_CACHE_SIZE", 2)
    cache = per_operation()
    reads: list[str] = []

    def read(operation_id: str) -> str:
        def fetch() -> str:
            reads.append(operation_id)
            return operation_id

        return read_once(cache, operation_id, fetch)

    read("a")
    read("b")
    read("a")  # a is now the most recently used
    read("c")  # past the bound: b goes, a stays
    read("a")
    read("b")

    assert reads == ["a", "b", "c", "b"]
