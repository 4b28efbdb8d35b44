"""engine.ir.plan: create follows the graph as written, delete follows it inverted, an
update moves users before it cleans up or deletes what they used."""

from __future__ import annotations

from engine.ir.plan import (
    ExistingResource,
    Plan,
    PlannedStep,
    plan_create,
    plan_delete,
    plan_stored,
    plan_update,
)
from engine.vocabulary import Action
from tests.unit.ir.conftest import Make

CHAIN = """\
heat_template_version: rocky
resources:
  web:
    type: Test::Plain
    properties: {value: {get_attr: [db, value]}}
  db:
    type: Test::Plain
    depends_on: net
  net:
    type: Test::Plain
  lone:
    type: Test::Plain
"""


def test_plan_create_runs_the_graph_as_written(make: Make) -> None:
    plan = plan_create(make(CHAIN))

    assert plan == Plan(Action.CREATE, (
        PlannedStep("db", Action.CREATE, frozenset({("net", Action.CREATE)})),
        PlannedStep("lone", Action.CREATE, frozenset()),
        PlannedStep("net", Action.CREATE, frozenset()),
        PlannedStep("web", Action.CREATE, frozenset({("db", Action.CREATE)})),
    ))


def test_plan_create_of_an_empty_stack(make: Make) -> None:
    assert plan_create(make("heat_template_version: rocky\n")) == Plan(Action.CREATE, ())


def stored(**requires: set[str]) -> dict[str, ExistingResource]:
    return {name: ExistingResource(name, frozenset(deps)) for name, deps in requires.items()}


def test_plan_delete_inverts_the_graph() -> None:
    plan = plan_delete(stored(web={"db"}, db={"net"}, net=set(), lone=set()))

    assert plan == Plan(Action.DELETE, (
        PlannedStep("db", Action.DELETE, frozenset({("web", Action.DELETE)})),
        PlannedStep("lone", Action.DELETE, frozenset()),
        PlannedStep("net", Action.DELETE, frozenset({("db", Action.DELETE)})),
        PlannedStep("web", Action.DELETE, frozenset()),
    ))


def test_plan_delete_waits_for_every_user() -> None:
    plan = plan_delete(stored(a={"shared"}, b={"shared"}, shared=set()))

    steps = {step.resource: step.requires for step in plan.steps}
    assert steps == {"a": frozenset(), "b": frozenset(),
                     "shared": frozenset({("a", Action.DELETE), ("b", Action.DELETE)})}


def test_plan_delete_ignores_requirements_that_are_not_stored() -> None:
    plan = plan_delete(stored(web={"db", "gone"}, db=set()))

    assert [(s.resource, s.requires) for s in plan.steps] == [
        ("db", frozenset({("web", Action.DELETE)})),
        ("web", frozenset()),
    ]


def test_create_then_delete_of_the_same_stack_are_mirror_images(make: Make) -> None:
    stack = make(CHAIN)
    created = plan_create(stack)

    deleted = plan_delete({s.resource: ExistingResource(s.resource,
                                                        frozenset(r for r, _ in s.requires))
                           for s in created.steps})

    waits_on_create = {(s.resource, r) for s in created.steps for r, _ in s.requires}
    waits_on_delete = {(r, s.resource) for s in deleted.steps for r, _ in s.requires}
    assert waits_on_create == waits_on_delete == {("web", "db"), ("db", "net")}


UPDATED = """\
heat_template_version: rocky
resources:
  web:
    type: Test::Plain
    properties: {value: {get_attr: [db, value]}}
  db:
    type: Test::Plain
  cache:
    type: Test::Plain
    properties: {value: {get_attr: [db, value]}}
"""


def test_plan_update_moves_users_before_cleaning_up_and_deleting(make: Make) -> None:
    # Stored: web -> db -> net, lone. New: web -> db, cache -> db; net and lone removed.
    old = stored(web={"db"}, db={"net"}, net=set(), lone=set())
    plan = plan_update(make(UPDATED), old)

    steps = {step.key: step.requires for step in plan.steps}
    assert plan.action == Action.UPDATE
    assert steps == {
        ("cache", Action.CREATE): {("db", Action.UPDATE)},
        ("db", Action.UPDATE): frozenset(),
        ("web", Action.UPDATE): {("db", Action.UPDATE)},
        # a kept resource's leftover goes once it and all its users have moved on
        ("db", Action.CLEANUP): {("db", Action.UPDATE), ("web", Action.UPDATE),
                                 ("cache", Action.CREATE)},
        ("web", Action.CLEANUP): {("web", Action.UPDATE)},
        # removed ones go once their old users no longer need them
        ("net", Action.DELETE): {("db", Action.UPDATE)},
        ("lone", Action.DELETE): frozenset(),
    }


def test_plan_update_cleans_up_a_removed_resource_that_holds_a_replaced_one(
        make: Make) -> None:
    old = {"db": ExistingResource("db", frozenset()),
           "gone": ExistingResource("gone", frozenset(), replaced=True)}
    plan = plan_update(make(UPDATED.split("  web:")[0] + "  db:\n    type: Test::Plain\n"),
                       old)

    assert {step.key for step in plan.steps} == {
        ("db", Action.UPDATE), ("db", Action.CLEANUP),
        ("gone", Action.DELETE), ("gone", Action.CLEANUP)}


def test_plan_stored_delete_also_cleans_up_replaced_resources() -> None:
    old = {"a": ExistingResource("a", frozenset({"b"}), replaced=True),
           "b": ExistingResource("b", frozenset())}
    plan = plan_stored(old, Action.DELETE)

    assert {step.key: step.requires for step in plan.steps} == {
        ("a", Action.DELETE): frozenset(), ("a", Action.CLEANUP): frozenset(),
        ("b", Action.DELETE): {("a", Action.DELETE)}}


def test_a_rollback_of_a_create_is_a_delete_under_another_name() -> None:
    plan = plan_stored(stored(a={"b"}, b=set()), Action.ROLLBACK, Action.DELETE)

    assert plan.action == Action.ROLLBACK
    assert {step.key for step in plan.steps} == {("a", Action.DELETE), ("b", Action.DELETE)}


def test_a_snapshot_runs_in_dependency_order_as_heats_does() -> None:
    plan = plan_stored(stored(a={"b"}, b=set()), Action.SNAPSHOT)

    assert {step.key: step.requires for step in plan.steps} == {
        ("a", Action.SNAPSHOT): {("b", Action.SNAPSHOT)}, ("b", Action.SNAPSHOT): frozenset()}
