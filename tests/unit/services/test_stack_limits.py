"""StackService limits that a create checks before storing anything (and a validate
before reading any resource)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

import pytest

from engine import budget
from engine.context import ADMIN_ROLE, RequestContext
from engine.db.session import Database
from engine.errors import RequestLimitExceeded, ResourceTypeNotFound
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
        db: Database, registry: ResourceTypeRegistry, clock: Clock, ctx: RequestContext
) -> None:
    stacks = StackService(db, registry, StackLimits(), clock)

    with resources_per_stack(5000):
        assert stacks.validate(ctx, {"template": chain(5000)}).description == \
            "No description"


def test_the_resource_limit_is_checked_before_any_resource_is_read(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, ctx: RequestContext
) -> None:
    """Past the limit, resources of a type that does not exist are never looked at: the
    count comes first, as Heat counts the resources section as written."""
    stacks = StackService(db, registry, StackLimits(), clock)

    with resources_per_stack(100), pytest.raises(RequestLimitExceeded) as caught:
        stacks.validate(ctx, {"template": chain(101, "OS::No::Such")})

    assert caught.value.message == "Request limit exceeded: Maximum resources per stack " \
                                   "exceeded."
    with resources_per_stack(100), pytest.raises(ResourceTypeNotFound):
        stacks.validate(ctx, {"template": chain(100, "OS::No::Such")})


def test_resources_a_condition_leaves_out_count_too(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, ctx: RequestContext
) -> None:
    stacks = StackService(db, registry, StackLimits(), clock)
    template = ("heat_template_version: 2018-08-31\nconditions:\n  never: false\n"
                "resources:\n  a: {type: OS::Heat::None}\n"
                "  b: {type: OS::Heat::None, condition: never}\n")

    with resources_per_stack(1), pytest.raises(RequestLimitExceeded):
        stacks.validate(ctx, {"template": template})
