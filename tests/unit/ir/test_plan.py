"""engine.ir.plan: create follows the graph as written, delete follows it inverted."""

from __future__ import annotations

from engine.ir.plan import (
    CREATE,
    DELETE,
    ExistingResource,
    Plan,
    PlannedStep,
    plan_create,
    plan_delete,
)
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

    assert plan == Plan(CREATE, (
        PlannedStep("db", CREATE, frozenset({"net"})),
        PlannedStep("lone", CREATE, frozenset()),
        PlannedStep("net", CREATE, frozenset()),
        PlannedStep("web", CREATE, frozenset({"db"})),
    ))


def test_plan_create_of_an_empty_stack(make: Make) -> None:
    assert plan_create(make("heat_template_version: rocky\n")) == Plan(CREATE, ())


def stored(**requires: set[str]) -> dict[str, ExistingResource]:
    return {name: ExistingResource(name, frozenset(deps)) for name, deps in requires.items()}


def test_plan_delete_inverts_the_graph() -> None:
    plan = plan_delete(stored(web={"db"}, db={"net"}, net=set(), lone=set()))

    assert plan == Plan(DELETE, (
        PlannedStep("db", DELETE, frozenset({"web"})),
        PlannedStep("lone", DELETE, frozenset()),
        PlannedStep("net", DELETE, frozenset({"db"})),
        PlannedStep("web", DELETE, frozenset()),
    ))


def test_plan_delete_waits_for_every_user() -> None:
    plan = plan_delete(stored(a={"shared"}, b={"shared"}, shared=set()))

    steps = {step.resource: step.requires for step in plan.steps}
    assert steps == {"a": frozenset(), "b": frozenset(), "shared": frozenset({"a", "b"})}


def test_plan_delete_ignores_requirements_that_are_not_stored() -> None:
    plan = plan_delete(stored(web={"db", "gone"}, db=set()))

    assert [(s.resource, s.requires) for s in plan.steps] == [
        ("db", frozenset({"web"})),
        ("web", frozenset()),
    ]


def test_create_then_delete_of_the_same_stack_are_mirror_images(make: Make) -> None:
    stack = make(CHAIN)
    created = plan_create(stack)

    deleted = plan_delete({s.resource: ExistingResource(s.resource, s.requires)
                           for s in created.steps})

    waits_on_create = {(s.resource, r) for s in created.steps for r in s.requires}
    waits_on_delete = {(r, s.resource) for s in deleted.steps for r in s.requires}
    assert waits_on_create == waits_on_delete == {("web", "db"), ("db", "net")}
