"""The worker's log lines name what they are about (engine.logs): an operation's phases
and each step's work bind the operation, its stack by name and id, its tenant and the
request that created it, so a resource type's own lines carry them too, with the stack's
hidden values masked; a nested stack's operations carry their parent's request id."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, ClassVar

from sqlalchemy import select

from engine.context import RequestContext
from engine.db.models import Operation, Stack
from engine.db.session import Database
from engine.resources.base import Resource
from engine.resources.registry import ResourceTypeRegistry
from engine.schema import STRING, Property
from engine.services.proposals import StackLimits
from tests.stack_api import StackApi
from tests.unit.conftest import Clock, Logged
from tests.unit.worker.running import run, worker_for

CHATTY = logging.getLogger("test.chatty")  # a third party's logger, as a plugin's would be
REQUEST = "req-0123"
HIDDEN = "s3cret-hidden-value"
TEMPLATE = f"""\
heat_template_version: 2018-08-31
parameters:
  password: {{type: string, hidden: true, default: {HIDDEN}}}
resources:
  chatty:
    type: Test::Chatty
    properties: {{secret: {{get_param: password}}}}
  child:
    type: OS::Heat::Stack
    properties:
      template: |
        heat_template_version: 2018-08-31
        resources:
          inner: {{type: Test::Chatty, properties: {{secret: plain}}}}
"""


class Chatty(Resource):
    """Logs as it creates: what a resource type's own lines look like."""

    properties_schema: ClassVar[dict[str, Property]] = {
        "secret": Property(STRING, "Logged, as a careless type might."),
    }

    def handle_create(self) -> Any:
        CHATTY.info("creating %s with %s", self.name, self.properties["secret"])
        return None

    def check_create_complete(self, token: Any) -> bool:
        CHATTY.info("created %s", self.name)
        return True


def test_worker_lines_carry_the_request_id_and_name_the_stack(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, ctx: RequestContext,
        logged: Logged) -> None:
    types = {name: registry.get(name) for name in registry.names()}
    stacks = StackApi(db, ResourceTypeRegistry({**types, "Test::Chatty": Chatty}),
                      StackLimits(), clock)
    record = stacks.create(dataclasses.replace(ctx, request_id=REQUEST),
                           {"stack_name": "web", "template": TEMPLATE})
    loop = worker_for(stacks)
    for _ in range(20):
        run(loop, 1)
        clock.advance(1)
    assert stacks.get(ctx, "web", record.id).status == "COMPLETE"
    with db.read() as session:
        operation_of = dict(session.execute(select(Operation.stack_id, Operation.id)).all())
        [(child_name, child_id)] = session.execute(
            select(Stack.name, Stack.id).where(Stack.owner_id == record.id)).all()

    lines = logged()
    about = {(line["logger"], line["message"]): line for line in lines}
    for key, name, stack_id in [
            (("test.chatty", "creating chatty with ******"), "web", record.id),
            (("test.chatty", "created chatty"), "web", record.id),
            (("engine.worker.operation", f"stack web/{record.id} CREATE COMPLETE"),
             "web", record.id),
            (("test.chatty", "creating inner with plain"), child_name, child_id),
            (("engine.worker.operation", f"stack {child_name}/{child_id} CREATE COMPLETE"),
             child_name, child_id)]:
        line = about[key]
        assert (line["request_id"], line["tenant_id"], line["stack_name"],
                line["stack_id"], line["operation_id"]) == (
            REQUEST, ctx.tenant_id, name, stack_id, operation_of[stack_id]), key
    assert HIDDEN not in "\n".join(str(line) for line in lines)


def test_a_hidden_value_from_the_environments_parameter_defaults_is_masked_too(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, ctx: RequestContext,
        logged: Logged) -> None:
    # Given neither as a parameter nor as the template's default: the stack's secrets are
    # the values it takes, whichever source gave them (engine.worker.stored_scope).
    types = {name: registry.get(name) for name in registry.names()}
    stacks = StackApi(db, ResourceTypeRegistry({**types, "Test::Chatty": Chatty}),
                      StackLimits(), clock)
    template = ("heat_template_version: 2018-08-31\n"
                "parameters: {password: {type: string, hidden: true}}\n"
                "resources:\n"
                "  chatty: {type: Test::Chatty, properties: {secret: {get_param: password}}}\n")
    record = stacks.create(ctx, {"stack_name": "web", "template": template, "environment": {
        "parameter_defaults": {"password": HIDDEN}}})
    run(worker_for(stacks))
    assert stacks.get(ctx, "web", record.id).status == "COMPLETE"

    lines = logged()

    assert "creating chatty with ******" in {line["message"] for line in lines}
    assert HIDDEN not in "\n".join(str(line) for line in lines)
