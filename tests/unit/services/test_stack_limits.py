"""StackService limits that a create checks before storing anything."""

from __future__ import annotations

import pytest

from engine.context import ADMIN_ROLE, RequestContext
from engine.db.session import Database
from engine.errors import RequestLimitExceeded
from engine.resources.registry import ResourceTypeRegistry
from engine.services.stacks import StackLimits, StackService
from engine.services.tenants import TenantService
from tests.unit.conftest import Clock

TEMPLATE = "heat_template_version: rocky\nresources:\n  r: {type: OS::Heat::None}\n"


def test_max_stacks_per_tenant(db: Database, registry: ResourceTypeRegistry,
                               clock: Clock, ctx: RequestContext) -> None:
    stacks = StackService(db, registry, StackLimits(max_stacks_per_tenant=2), clock)
    for name in ("a", "b"):
        stacks.create(ctx, {"stack_name": name, "template": TEMPLATE})

    with pytest.raises(RequestLimitExceeded) as caught:
        stacks.create(ctx, {"stack_name": "c", "template": TEMPLATE})

    assert caught.value.message == ("Request limit exceeded: You have reached the maximum "
                                    "stacks per tenant, 2. Please delete some stacks.")
    other = TenantService(db, clock).create_tenant("other")
    other_ctx = RequestContext(tenant_id=other.id, token_tenant_id=other.id, role=ADMIN_ROLE)
    assert stacks.create(other_ctx, {"stack_name": "c", "template": TEMPLATE}).name == "c"
