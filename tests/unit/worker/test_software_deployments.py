"""Software deployments end to end in one process: a stack's config and deployment rows
written by the worker's store, the metadata an agent reads, its signal (with the
deployment's own token) applied by the worker, Heat's outcome, and the rows gone with
the stack; on a SQLite file with an injected clock."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from engine.context import MEMBER_ROLE, RequestContext
from engine.db.models import Resource
from engine.db.session import Database
from engine.errors import SoftwareConfigNotFound
from engine.services.events import EventQuery
from engine.services.tenants import TenantService
from engine.worker.loop import WorkerLoop
from tests.stack_api import StackApi
from tests.unit.conftest import Clock
from tests.unit.worker.running import worker_for

TEMPLATE = """\
heat_template_version: 2018-08-31
parameters:
  actions: {type: comma_delimited_list, default: "CREATE,UPDATE"}
resources:
  config:
    type: OS::Heat::SoftwareConfig
    properties:
      group: script
      config: "#!/bin/sh\\necho $name"
      inputs: [{name: name}]
      outputs: [{name: greeting}]
  deploy:
    type: OS::Heat::SoftwareDeployment
    properties:
      config: {get_resource: config}
      server: server-1
      input_values: {name: world}
      signal_transport: HEAT_SIGNAL
      actions: {get_param: actions}
outputs:
  greeting: {value: {get_attr: [deploy, greeting]}}
  stdout: {value: {get_attr: [deploy, deploy_stdout]}}
"""
API = "http://kiln.test:8004"


@pytest.fixture
def ctx(db: Database, clock: Clock) -> RequestContext:
    tenant = TenantService(db, clock).create_tenant("t")
    return RequestContext(tenant_id=tenant.id, token_tenant_id=tenant.id, role=MEMBER_ROLE)


def tick(loop: WorkerLoop, clock: Clock, times: int = 4) -> None:
    for _ in range(times):
        loop.run_once()
        clock.advance(1)


def status(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str) -> str:
    stack = stacks.get(ctx, name, stack_id)
    return f"{stack.action}_{stack.status}"


def agent_signal(stacks: StackApi, db: Database, clock: Clock, ctx: RequestContext,
                 inputs: dict[str, Any], details: dict[str, Any]) -> None:
    """What an agent does with HEAT_SIGNAL's inputs: signal the resource with the token."""
    name, stack_id = inputs["deploy_stack_id"].split("/")
    resource = inputs["deploy_resource_name"]
    principal = TenantService(db, clock).authenticate_for_signal(
        inputs["deploy_password"], ctx.tenant_id, name, stack_id, resource)
    sender = RequestContext(tenant_id=ctx.tenant_id, token_tenant_id=principal.tenant_id,
                            role=principal.role, username=principal.token_id)
    stacks.signal(sender, name, stack_id, resource, details)


def started(stacks: StackApi, ctx: RequestContext, clock: Clock, **parameters: Any
            ) -> tuple[str, str, WorkerLoop, dict[str, Any]]:
    record = stacks.create(ctx, {"stack_name": "s", "template": TEMPLATE,
                                 "parameters": parameters})
    loop = worker_for(stacks, api_url=API)
    tick(loop, clock)
    (config,) = stacks.software_configs.metadata(ctx, "server-1")
    return record.name, record.id, loop, {i["name"]: i["value"] for i in config["inputs"]}


def test_the_agents_signal_completes_the_deployment(db: Database, clock: Clock,
                                                    stacks: StackApi,
                                                    ctx: RequestContext) -> None:
    name, stack_id, loop, inputs = started(stacks, ctx, clock)
    assert status(stacks, ctx, name, stack_id) == "CREATE_IN_PROGRESS"
    assert inputs["name"] == "world" and inputs["deploy_action"] == "CREATE"
    assert inputs["deploy_auth_url"] == f"{API}/v1/{ctx.tenant_id}"
    deploy = stacks.get_resource(ctx, name, stack_id, "deploy")
    shown = stacks.software_configs.show_deployment(ctx, deploy.physical_id)
    assert (shown["status"], shown["server_id"]) == ("IN_PROGRESS", "server-1")

    agent_signal(stacks, db, clock, ctx, inputs, {
        "deploy_stdout": "hello world", "deploy_stderr": "", "deploy_status_code": 0,
        "greeting": "hello"})
    tick(loop, clock)

    assert status(stacks, ctx, name, stack_id) == "CREATE_COMPLETE"
    assert stacks.get_output(ctx, name, stack_id, "greeting")["output_value"] == "hello"
    assert stacks.get_output(ctx, name, stack_id, "stdout")["output_value"] == "hello world"
    shown = stacks.software_configs.show_deployment(ctx, deploy.physical_id)
    assert (shown["status"], shown["status_reason"]) == ("COMPLETE", "Outputs received")
    events = stacks.list_events(ctx, name, stack_id, EventQuery(ascending=True), "deploy")
    assert [e.reason for e in events if e.action == "SIGNAL"] == [
        f"Signal: deployment {deploy.physical_id} succeeded"]
    config_id = stacks.get_resource(ctx, name, stack_id, "config").physical_id
    assert stacks.software_configs.show_config(ctx, config_id)["config"] == (
        "#!/bin/sh\necho $name")

    stacks.delete(ctx, name, stack_id)
    tick(loop, clock)
    assert stacks.software_configs.list_deployments(ctx) == []
    assert stacks.software_configs.list_configs(ctx) == []
    with pytest.raises(SoftwareConfigNotFound):
        stacks.software_configs.show_config(ctx, config_id)


def test_a_failing_status_code_fails_the_stack_with_heats_reason(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    name, stack_id, loop, inputs = started(stacks, ctx, clock)

    agent_signal(stacks, db, clock, ctx, inputs, {"deploy_status_code": 2,
                                                  "deploy_stderr": "no such file"})
    tick(loop, clock)

    assert status(stacks, ctx, name, stack_id) == "CREATE_FAILED"
    assert stacks.get(ctx, name, stack_id).status_reason == (
        "Resource CREATE failed: Error: resources.deploy: Deployment to server failed: "
        "deploy_status_code : Deployment exited with non-zero status code: 2")


def test_a_deployment_run_for_delete_takes_its_signal_while_deleting(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    name, stack_id, loop, inputs = started(stacks, ctx, clock, actions="CREATE,DELETE")
    agent_signal(stacks, db, clock, ctx, inputs, {"deploy_status_code": 0})
    tick(loop, clock)
    assert status(stacks, ctx, name, stack_id) == "CREATE_COMPLETE"

    stacks.delete(ctx, name, stack_id)
    tick(loop, clock)
    (config,) = stacks.software_configs.metadata(ctx, "server-1")
    deleting = {i["name"]: i["value"] for i in config["inputs"]}
    assert deleting["deploy_action"] == "DELETE"
    assert stacks.software_configs.list_deployments(ctx)[0]["status"] == "IN_PROGRESS"

    agent_signal(stacks, db, clock, ctx, deleting, {"deploy_status_code": 0})
    tick(loop, clock)
    assert stacks.software_configs.list_deployments(ctx) == []


REPLACED = TEMPLATE.replace("server: server-1", "server: {get_param: server}").replace(
    "parameters:\n", "parameters:\n  server: {type: string, default: server-1}\n")


def test_a_replaced_deployments_delete_run_takes_its_signal(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    record = stacks.create(ctx, {"stack_name": "r", "template": REPLACED,
                                 "parameters": {"actions": "CREATE,DELETE"}})
    loop = worker_for(stacks, api_url=API)
    tick(loop, clock)
    (config,) = stacks.software_configs.metadata(ctx, "server-1")
    first = {i["name"]: i["value"] for i in config["inputs"]}
    agent_signal(stacks, db, clock, ctx, first, {"deploy_status_code": 0})
    tick(loop, clock)
    assert status(stacks, ctx, record.name, record.id) == "CREATE_COMPLETE"

    # A new server replaces the deployment; the old one's DELETE run waits for its agent.
    stacks.update(ctx, record.name, record.id, {"template": REPLACED, "parameters": {
        "actions": "CREATE,DELETE", "server": "server-2"}}, patch=False)
    tick(loop, clock)
    (config,) = stacks.software_configs.metadata(ctx, "server-2")
    agent_signal(stacks, db, clock, ctx, {i["name"]: i["value"] for i in config["inputs"]},
                 {"deploy_status_code": 0})
    tick(loop, clock)
    (config,) = stacks.software_configs.metadata(ctx, "server-1")
    deleting = {i["name"]: i["value"] for i in config["inputs"]}
    assert deleting["deploy_action"] == "DELETE"
    assert deleting["deploy_password"] == first["deploy_password"]  # the old one's token
    agent_signal(stacks, db, clock, ctx, deleting, {"deploy_status_code": 0})
    tick(loop, clock)

    assert status(stacks, ctx, record.name, record.id) == "UPDATE_COMPLETE"
    assert stacks.software_configs.metadata(ctx, "server-1") == []
    events = stacks.list_events(ctx, record.name, record.id, EventQuery(ascending=True),
                                "deploy")
    assert [e.reason for e in events if e.action == "SIGNAL"][-1].endswith("succeeded")
    # The secrets are in the derived configs only, never in a resource's data (which
    # snapshots, abandon and export copy).
    with db.read() as session:
        stored = json.dumps([(row.data, row.replaced) for row in session.scalars(
            select(Resource).where(Resource.stack_id == record.id))])
    assert "kilnsig_" not in stored


GROUP = """\
heat_template_version: 2018-08-31
resources:
  config:
    type: OS::Heat::SoftwareConfig
    properties:
      outputs: [{name: result}]
  group:
    type: OS::Heat::SoftwareDeploymentGroup
    properties:
      config: {get_resource: config}
      servers: {web: server-web, db: server-db}
      signal_transport: HEAT_SIGNAL
outputs:
  codes: {value: {get_attr: [group, deploy_status_codes]}}
  results: {value: {get_attr: [group, result]}}
"""


def test_a_group_deploys_to_each_server_and_maps_their_outputs(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    record = stacks.create(ctx, {"stack_name": "g", "template": GROUP})
    loop = worker_for(stacks, api_url=API)
    tick(loop, clock, 8)
    for server, code in (("server-web", 0), ("server-db", 0)):
        (config,) = stacks.software_configs.metadata(ctx, server)
        given = {i["name"]: i["value"] for i in config["inputs"]}
        assert given["deploy_server_id"] == server
        agent_signal(stacks, db, clock, ctx, given, {"deploy_status_code": code,
                                                     "result": server.upper()})
    tick(loop, clock, 8)

    assert status(stacks, ctx, record.name, record.id) == "CREATE_COMPLETE"
    assert stacks.get_output(ctx, record.name, record.id, "codes")["output_value"] == {
        "web": 0, "db": 0}
    assert stacks.get_output(ctx, record.name, record.id, "results")["output_value"] == {
        "web": "SERVER-WEB", "db": "SERVER-DB"}


ON_CHANGE = TEMPLATE.replace("inputs: [{name: name}]",
                             "inputs: [{name: name, replace_on_change: true}]").replace(
    "input_values: {name: world}", "input_values: {name: {get_param: who}}").replace(
    "parameters:\n", "parameters:\n  who: {type: string, default: world}\n")


def test_a_replace_on_change_input_replaces_the_deployment(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    record = stacks.create(ctx, {"stack_name": "c", "template": ON_CHANGE})
    loop = worker_for(stacks, api_url=API)
    tick(loop, clock)
    (config,) = stacks.software_configs.metadata(ctx, "server-1")
    agent_signal(stacks, db, clock, ctx, {i["name"]: i["value"] for i in config["inputs"]},
                 {"deploy_status_code": 0})
    tick(loop, clock)
    before = stacks.get_resource(ctx, record.name, record.id, "deploy").physical_id

    # Decided while the worker prepares the step: the store is read then.
    stacks.update(ctx, record.name, record.id, {"template": ON_CHANGE, "parameters": {
        "who": "moon"}}, patch=False)
    tick(loop, clock)
    # The new deployment beside the old one, until the old one's cleanup.
    old, given = ({i["name"]: i["value"] for i in c["inputs"]}
                  for c in stacks.software_configs.metadata(ctx, "server-1"))
    if given["name"] != "moon":
        old, given = given, old
    assert (old["name"], given["name"], given["deploy_action"]) == ("world", "moon", "CREATE")
    agent_signal(stacks, db, clock, ctx, given, {"deploy_status_code": 0})
    tick(loop, clock)

    assert status(stacks, ctx, record.name, record.id) == "UPDATE_COMPLETE"
    after = stacks.get_resource(ctx, record.name, record.id, "deploy").physical_id
    assert after != before
    assert [d["id"] for d in stacks.software_configs.list_deployments(ctx)] == [after]


BATCHED = """\
heat_template_version: 2018-08-31
parameters:
  who: {type: string, default: world}
resources:
  config:
    type: OS::Heat::SoftwareConfig
    properties:
      inputs: [{name: who}]
  group:
    type: OS::Heat::SoftwareDeploymentGroup
    update_policy:
      batch_create: {max_batch_size: 2}
      rolling_update: {max_batch_size: 1}
    properties:
      config: {get_resource: config}
      servers: {a: server-a, b: server-b, c: server-c}
      input_values: {who: {get_param: who}}
      signal_transport: HEAT_SIGNAL
"""


def test_a_groups_batches_deploy_in_the_order_of_its_servers(
        db: Database, clock: Clock, stacks: StackApi, ctx: RequestContext) -> None:
    """Heat's batch_create and rolling_update of a SoftwareDeploymentGroup: each batch
    waits for its deployments before the next one starts."""
    record = stacks.create(ctx, {"stack_name": "b", "template": BATCHED})
    loop = worker_for(stacks, api_url=API)

    def deployed(action: str, who: str) -> list[str]:
        """The servers whose deployment waits on ``action`` for ``who``, signalled."""
        done = []
        for found in stacks.software_configs.list_deployments(ctx):
            if found["status"] != "IN_PROGRESS":
                continue
            config = stacks.software_configs.show_config(ctx, found["config_id"])
            given = {i["name"]: i["value"] for i in config["inputs"]}
            assert (given["deploy_action"], given["who"]) == (action, who)
            agent_signal(stacks, db, clock, ctx, given, {"deploy_status_code": 0})
            done.append(found["server_id"])
        tick(loop, clock, 8)
        return sorted(done)

    tick(loop, clock, 8)
    assert deployed("CREATE", "world") == ["server-a", "server-b"]
    assert deployed("CREATE", "world") == ["server-c"]
    assert status(stacks, ctx, record.name, record.id) == "CREATE_COMPLETE"

    stacks.update(ctx, record.name, record.id, {"template": BATCHED, "parameters": {
        "who": "moon"}}, patch=False)
    tick(loop, clock, 8)
    # One member a batch (max_batch_size 1, no min_in_service).
    rolled = [deployed("UPDATE", "moon") for _ in range(3)]
    assert sorted(s for batch in rolled for s in batch) == ["server-a", "server-b",
                                                           "server-c"]
    assert [len(batch) for batch in rolled] == [1, 1, 1]
    assert status(stacks, ctx, record.name, record.id) == "UPDATE_COMPLETE"
