"""Signals end to end in one process: a wait condition's stack, its handle's signal token,
signals delivered by the stack service and read by the worker, on a SQLite file with an
injected clock."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from sqlalchemy import select

from engine.context import MEMBER_ROLE, SIGNAL_ROLE, RequestContext
from engine.db.models import Resource as ResourceRow
from engine.db.models import ResourceSignal, SignalToken
from engine.db.session import Database
from engine.errors import AuthenticationRequired, BadRequest
from engine.resources.registry import ResourceTypeRegistry
from engine.services.events import EventQuery
from engine.services.tenants import TenantService
from engine.worker.loop import WorkerLoop
from tests.stack_api import StackApi
from tests.unit.conftest import Clock
from tests.unit.worker.running import create, worker_for

WAIT = """\
heat_template_version: 2018-08-31
resources:
  handle:
    type: OS::Heat::WaitConditionHandle
  wait:
    type: OS::Heat::WaitCondition
    properties:
      handle: {get_resource: handle}
      timeout: 60
      count: 2
outputs:
  data: {value: {get_attr: [wait, data]}}
"""
API = "http://kiln.test:8004"


@pytest.fixture
def ctx(db: Database, clock: Clock) -> RequestContext:
    tenant = TenantService(db, clock).create_tenant("t")
    return RequestContext(tenant_id=tenant.id, token_tenant_id=tenant.id, role=MEMBER_ROLE)


def tick(loop: WorkerLoop, clock: Clock, times: int = 5) -> None:
    for _ in range(times):
        loop.run_once()
        clock.advance(1)


@pytest.fixture
def started(db: Database, registry: ResourceTypeRegistry, clock: Clock, stacks: StackApi,
            ctx: RequestContext) -> tuple[str, str, WorkerLoop]:
    name, stack_id = create(stacks, ctx, WAIT)
    loop = worker_for(stacks, api_url=API)
    tick(loop, clock)
    return name, stack_id, loop


def status(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str) -> str:
    stack = stacks.get(ctx, name, stack_id)
    return f"{stack.action}_{stack.status}"


def signal_ctx(tenants: TenantService, token: str, ctx: RequestContext, name: str,
               stack_id: str, resource: str = "handle") -> RequestContext:
    """What the API's Authenticate builds for a request that carries ``token``."""
    principal = tenants.authenticate_for_signal(token, ctx.tenant_id, name, stack_id, resource)
    return RequestContext(tenant_id=ctx.tenant_id, token_tenant_id=principal.tenant_id,
                          role=principal.role, username=principal.token_id)


def attributes(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str
               ) -> dict[str, Any]:
    return stacks.get_resource(ctx, name, stack_id, "handle",
                               ["token", "endpoint", "curl_cli", "signal"]).attributes


def test_two_signals_sent_with_the_handle_token_complete_the_stack(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext,
        started: tuple[str, str, WorkerLoop]) -> None:
    name, stack_id, loop = started
    tenants = TenantService(db, clock)
    assert status(stacks, ctx, name, stack_id) == "CREATE_IN_PROGRESS"
    found = attributes(stacks, ctx, name, stack_id)
    endpoint = f"{API}/v1/{ctx.tenant_id}/stacks/{name}/{stack_id}/resources/handle/signal"
    assert found["endpoint"] == endpoint
    assert found["signal"] == "null"
    assert found["curl_cli"] == (
        f"curl -i -X POST -H 'X-Auth-Token: {found['token']}' -H 'Content-Type: "
        f"application/json' -H 'Accept: application/json' {endpoint}")

    sender = signal_ctx(tenants, found["token"], ctx, name, stack_id)
    assert sender.role == SIGNAL_ROLE
    stacks.signal(sender, name, stack_id, "handle", None)
    tick(loop, clock)
    assert status(stacks, ctx, name, stack_id) == "CREATE_IN_PROGRESS"
    stacks.signal(sender, name, stack_id, "handle", {"data": {"ip": "10.0.0.5"}, "id": "web"})
    tick(loop, clock)

    assert status(stacks, ctx, name, stack_id) == "CREATE_COMPLETE"
    assert stacks.get_output(ctx, name, stack_id, "data")["output_value"] == (
        '{"1": null, "web": {"ip": "10.0.0.5"}}')
    events = stacks.list_events(ctx, name, stack_id, EventQuery(ascending=True), "handle")
    assert [(e.action, e.status, e.reason) for e in events if e.action == "SIGNAL"] == [
        ("SIGNAL", "COMPLETE", "Signal: status:SUCCESS reason:Signal 1 received"),
        ("SIGNAL", "COMPLETE", "Signal: status:SUCCESS reason:Signal 2 received"),
    ]


def test_signals_are_rows_of_their_own_and_the_token_is_stored_hashed(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext,
        started: tuple[str, str, WorkerLoop]) -> None:
    name, stack_id, _ = started
    token = attributes(stacks, ctx, name, stack_id)["token"]
    with db.read() as session:
        handle = session.scalars(select(ResourceRow).where(ResourceRow.name == "handle")).one()
        before = dict(handle.data)
        stored = session.scalars(select(SignalToken)).one()
    assert stored.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert handle.physical_id == stored.id

    stacks.signal(ctx, name, stack_id, "handle", {"reason": "by the tenant"})

    with db.read() as session:
        handle = session.scalars(select(ResourceRow).where(ResourceRow.name == "handle")).one()
        rows = session.scalars(select(ResourceSignal)).all()
    assert handle.data == before  # the worker's row is never written by a signal
    assert [(r.resource_id, r.generation, r.details) for r in rows] == [
        (handle.id, 0, {"id": "1", "status": "SUCCESS", "reason": "by the tenant",
                        "data": None})]


def test_the_signal_token_authorises_its_own_resource_only(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext,
        started: tuple[str, str, WorkerLoop]) -> None:
    name, stack_id, loop = started
    tenants = TenantService(db, clock)
    token = attributes(stacks, ctx, name, stack_id)["token"]

    for resource, stack_name in (("wait", name), ("handle", "other")):
        with pytest.raises(AuthenticationRequired, match="the token is not valid"):
            tenants.authenticate_for_signal(token, ctx.tenant_id, stack_name, stack_id,
                                            resource)
    with pytest.raises(AuthenticationRequired):
        tenants.authenticate(token)  # no tenant token: no other route
    with pytest.raises(AuthenticationRequired):
        tenants.authenticate_for_signal(token + "x", ctx.tenant_id, name, stack_id, "handle")

    stacks.delete(ctx, name, stack_id)
    tick(loop, clock)
    assert status(stacks, ctx, name, stack_id) == "DELETE_COMPLETE"
    with db.read() as session:
        assert session.scalars(select(SignalToken)).all() == []
    with pytest.raises(AuthenticationRequired):
        tenants.authenticate_for_signal(token, ctx.tenant_id, name, stack_id, "handle")


def test_a_failure_signal_fails_the_stack_with_heats_reason(
        clock: Clock, stacks: StackApi, ctx: RequestContext,
        started: tuple[str, str, WorkerLoop]) -> None:
    name, stack_id, loop = started

    stacks.signal(ctx, name, stack_id, "handle", {"status": "FAILURE", "reason": "no disk"})
    tick(loop, clock)

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status) == ("CREATE", "FAILED")
    assert stack.status_reason == ("Resource CREATE failed: WaitConditionFailure: "
                                   "resources.wait: no disk")


def test_the_wait_times_out_with_heats_reason(
        clock: Clock, stacks: StackApi, ctx: RequestContext,
        started: tuple[str, str, WorkerLoop]) -> None:
    name, stack_id, loop = started
    stacks.signal(ctx, name, stack_id, "handle", {"reason": "booted"})

    clock.advance(60)
    tick(loop, clock)

    stack = stacks.get(ctx, name, stack_id)
    assert stack.status_reason == ("Resource CREATE failed: WaitConditionTimeout: "
                                   "resources.wait: 1 of 2 received - booted")
    assert stacks.get_output(ctx, name, stack_id, "data")["output_value"] == '{"1": null}'


def test_a_malformed_signal_is_refused_and_leaves_nothing(
        db: Database, stacks: StackApi, ctx: RequestContext,
        started: tuple[str, str, WorkerLoop]) -> None:
    name, stack_id, _ = started

    with pytest.raises(BadRequest, match="^Metadata format invalid"):
        stacks.signal(ctx, name, stack_id, "handle", {"status": "SUCCESS", "extra": 1})

    with db.read() as session:
        assert session.scalars(select(ResourceSignal)).all() == []
    events = stacks.list_events(ctx, name, stack_id, EventQuery(), "handle")
    assert "SIGNAL" not in {e.action for e in events}


def test_an_update_of_count_waits_for_one_more_signal(
        clock: Clock, stacks: StackApi, ctx: RequestContext,
        started: tuple[str, str, WorkerLoop]) -> None:
    name, stack_id, loop = started
    for _ in range(2):
        stacks.signal(ctx, name, stack_id, "handle", None)
    tick(loop, clock)
    handle = stacks.get_resource(ctx, name, stack_id, "handle").physical_id

    stacks.update(ctx, name, stack_id, {"template": WAIT.replace("count: 2", "count: 3")},
                  patch=False)
    tick(loop, clock)
    assert status(stacks, ctx, name, stack_id) == "UPDATE_IN_PROGRESS"
    stacks.signal(ctx, name, stack_id, "handle", {"data": "third"})
    tick(loop, clock)

    assert status(stacks, ctx, name, stack_id) == "UPDATE_COMPLETE"
    assert stacks.get_resource(ctx, name, stack_id, "handle").physical_id == handle
    assert stacks.get_output(ctx, name, stack_id, "data")["output_value"] == (
        '{"1": null, "2": null, "3": "third"}')
