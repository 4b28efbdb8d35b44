"""engine.services.stack_writes: a create's limit on the tenant's stacks, checked before
anything is stored, and what an adopt checks of its request and its abandon data."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from engine.context import ADMIN_ROLE, RequestContext
from engine.db.session import Database
from engine.errors import BadRequest, RequestLimitExceeded
from engine.ir.stored import StoredIrs
from engine.resources.registry import ResourceTypeRegistry
from engine.services.proposals import StackLimits
from engine.services.stack_writes import StackWrites
from engine.services.tenants import TenantService
from tests.unit.conftest import Clock

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
