"""engine.services.stacks: what every way of proposing a stack checks of its request (create,
adopt, preview, validate, update and its preview), on a migrated SQLite file."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from engine.context import RequestContext
from engine.db.session import Database
from engine.errors import BadRequest
from engine.resources.registry import ResourceTypeRegistry
from engine.services import stack_requests
from engine.services.stacks import StackService
from tests.unit.conftest import Clock
from tests.unit.worker.test_loop import run, worker

TEMPLATE = "heat_template_version: 2018-08-31\nresources:\n  r: {type: OS::Heat::None}\n"


@pytest.fixture
def propose(stacks: StackService, ctx: RequestContext, db: Database,
            registry: ResourceTypeRegistry, clock: Clock
            ) -> dict[str, Callable[[dict[str, Any]], Any]]:
    """Each way of proposing a stack, by name; the updates update a created stack."""
    record = stacks.create(ctx, {"stack_name": "existing", "template": TEMPLATE})
    run(worker(db, registry, clock))

    def update(patch: bool) -> Callable[[dict[str, Any]], Any]:
        return lambda body: stacks.update(ctx, "existing", record.id, body, patch=patch)

    return {
        "create": lambda body: stacks.create(ctx, {"stack_name": "new", **body}),
        "preview": lambda body: stacks.preview(ctx, {"stack_name": "new", **body}),
        "validate": lambda body: stacks.validate(ctx, body),
        "update": update(patch=False),
        "patch": update(patch=True),
        "preview_update": lambda body: stacks.preview_update(ctx, "existing", record.id, body,
                                                             patch=False),
    }


WAYS = ["create", "preview", "validate", "update", "patch", "preview_update"]


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[Mapping[str, Any]]:
    """Every body ``check_body`` is given, the real check still made."""
    bodies: list[Mapping[str, Any]] = []
    real = stack_requests.check_body

    def check_body(body: Mapping[str, Any]) -> None:
        bodies.append(body)
        real(body)

    monkeypatch.setattr(stack_requests, "check_body", check_body)
    return bodies


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


def test_an_adopt_checks_the_request_and_then_the_abandon_datas_body(
        stacks: StackService, ctx: RequestContext, checked: list[Mapping[str, Any]]) -> None:
    data = {"template": {"heat_template_version": "2018-08-31"}}

    stacks.create(ctx, {"stack_name": "a", "adopt_stack_data": json.dumps(data)})

    assert [body.get("template") for body in checked] == [None, data["template"]]


@pytest.mark.parametrize("data, message", [
    ({"environment": {"parameters": [1]}}, "the environment's parameters must be a map"),
    ({"environment": {"parameters": "p=1"}}, "the environment's parameters must be a map"),
    ({"resources": {"r": 5}}, "resource r must be a map, its resource_data too"),
    ({"resources": {"r": {"resource_data": [1]}}},
     "resource r must be a map, its resource_data too"),
])
def test_abandon_data_of_the_wrong_shape_is_a_400(data: dict[str, Any], message: str,
                                                  stacks: StackService,
                                                  ctx: RequestContext) -> None:
    # Each was a TypeError or an AttributeError: a 500.
    data = {"template": {"heat_template_version": "2018-08-31",
                         "resources": {"r": {"type": "OS::Heat::None"}}}, **data}

    with pytest.raises(BadRequest) as caught:
        stacks.create(ctx, {"stack_name": "a", "adopt_stack_data": json.dumps(data)})

    assert caught.value.message == f"Invalid adopt data: {message}"
