"""engine.services.stack_actions: abandon and export data with every hidden value masked,
whichever source gave it (the parameters, the environment's parameter_defaults or the
template's default), and an adopt of that data refused until the tenant gives the masked
values again; on a migrated SQLite file with the stacks stored by StackWrites and run by a
worker."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from engine.context import RequestContext
from engine.db.models import Resource as Row
from engine.db.session import Database
from engine.errors import BadRequest
from engine.resources.registry import ResourceTypeRegistry
from engine.services.events import EventQuery, StackEvents
from engine.services.stack_actions import StackActions
from engine.services.stack_reads import StackReads
from engine.services.stack_writes import StackWrites
from engine.template.parameters import MASK
from tests.unit.conftest import Clock
from tests.unit.worker.running import run, worker

LEAKY = "leaky-secret"
# The hidden value reaches a property, an output and, known only once ``word`` exists, a
# failure's reason (a Value that is no number).
TEMPLATE = """\
heat_template_version: 2018-08-31
parameters:
  pw: {type: string, hidden: true}
  user: {type: string, default: alice}
resources:
  word:
    type: OS::Heat::RandomString
    properties: {length: 4}
  kept:
    type: OS::Heat::Value
    properties: {value: {list_join: [':', [{get_param: user}, {get_param: pw}]]}}
  bad:
    type: OS::Heat::Value
    properties:
      type: number
      value: {list_join: ['-', [{get_param: pw}, {get_attr: [word, value]}]]}
outputs:
  joined: {value: {get_attr: [kept, value]}}
"""


@pytest.fixture
def actions(db: Database, clock: Clock, registry: ResourceTypeRegistry) -> StackActions:
    return StackActions(db, clock, 3600, registry=registry)


def create(writes: StackWrites, ctx: RequestContext, db: Database,
           registry: ResourceTypeRegistry, clock: Clock, **body: Any) -> str:
    stack_id = writes.create(ctx, {"stack_name": "web", "template": TEMPLATE,
                                   "disable_rollback": True, **body}).id
    run(worker(db, registry, clock))
    return stack_id


def test_a_hidden_value_given_only_in_the_parameter_defaults_is_masked_everywhere(
        writes: StackWrites, actions: StackActions, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock, irs: Any) -> None:
    stack_id = create(writes, ctx, db, registry, clock, environment={
        "parameter_defaults": {"pw": LEAKY, "user": "bob"}})
    reads = StackReads(db, irs, registry, clock)
    events = StackEvents(db).list_events(ctx, "web", stack_id, EventQuery())
    record = reads.get(ctx, "web", stack_id)
    assert (record.action, record.status) == ("CREATE", "FAILED")
    failed = next(e for e in events if e.resource_name == "bad" and e.status == "FAILED")
    assert "is not a number" in failed.reason and MASK in failed.reason

    exported = actions.export(ctx, "web", stack_id)

    assert exported["environment"]["parameter_defaults"] == {"pw": MASK, "user": "bob"}
    assert exported["environment"]["parameters"] == {}
    shown = [exported, reads.get_environment(ctx, "web", stack_id), record,
             reads.list_outputs(ctx, "web", stack_id), events]
    assert LEAKY not in repr(shown)
    assert actions.abandon(ctx, "web", stack_id) == exported


def test_a_hidden_default_overridden_by_a_given_value_is_masked_too(
        writes: StackWrites, actions: StackActions, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    stack_id = create(writes, ctx, db, registry, clock, parameters={"pw": "given-pw"},
                      environment={"parameter_defaults": {"pw": "shadowed-pw"}})

    data = actions.export(ctx, "web", stack_id)

    assert data["environment"]["parameters"] == {"pw": MASK}
    assert data["environment"]["parameter_defaults"] == {"pw": MASK}
    assert "given-pw" not in json.dumps(data) and "shadowed-pw" not in json.dumps(data)


@pytest.mark.parametrize("body", [
    {"environment": {"parameter_defaults": {"pw": LEAKY}}},
    {"parameters": {"pw": LEAKY}},
], ids=["parameter_defaults", "parameters"])
def test_abandoned_data_is_adopted_only_with_the_hidden_values_given_again(
        body: dict[str, Any], writes: StackWrites, actions: StackActions,
        ctx: RequestContext, db: Database, registry: ResourceTypeRegistry,
        clock: Clock) -> None:
    stack_id = create(writes, ctx, db, registry, clock, **body)
    data = json.dumps(actions.abandon(ctx, "web", stack_id))

    with pytest.raises(BadRequest) as caught:
        writes.create(ctx, {"stack_name": "again", "adopt_stack_data": data})

    assert caught.value.message == ("Hidden parameters pw are masked in the abandon data; "
                                    "give their values in 'parameters'")
    adopted = writes.create(ctx, {"stack_name": "again", "adopt_stack_data": data,
                                  "parameters": {"pw": LEAKY}})
    assert adopted.action == "ADOPT"


def test_a_hidden_template_default_a_given_value_overrides_is_masked_by_name(
        writes: StackWrites, actions: StackActions, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    # The stack takes the given value, so the default is in no secrets list: only the
    # name masks it (engine.template.stored_parameters.masked_template).
    stack_id = create(writes, ctx, db, registry, clock, parameters={"pw": "given-pw"},
                      template=TEMPLATE.replace("hidden: true}",
                                                "hidden: true, default: default-pw}"))

    data = actions.export(ctx, "web", stack_id)

    assert data["template"]["parameters"]["pw"]["default"] == MASK
    assert "default-pw" not in json.dumps(data) and "given-pw" not in json.dumps(data)
    # An adopt of it takes the masked default unless the value is given again, also
    # when the data's masked parameter is dropped.
    del data["environment"]["parameters"]["pw"]
    with pytest.raises(BadRequest) as caught:
        writes.create(ctx, {"stack_name": "again", "adopt_stack_data": json.dumps(data)})
    assert caught.value.message == ("Hidden parameters pw are masked in the abandon data; "
                                    "give their values in 'parameters'")
    adopted = writes.create(ctx, {"stack_name": "again", "adopt_stack_data": json.dumps(data),
                                  "parameters": {"pw": "given-pw"}})
    assert adopted.action == "ADOPT"


def test_a_types_secret_data_is_masked_and_an_adopt_of_it_makes_its_own(
        writes: StackWrites, actions: StackActions, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    handle = ("heat_template_version: 2018-08-31\n"
              "resources:\n  handle: {type: OS::Heat::WaitConditionHandle}\n")
    stack_id = create(writes, ctx, db, registry, clock, template=handle)
    with db.read() as session:
        token = session.scalars(select(Row.data).where(Row.stack_id == stack_id)).one()["token"]

    data = actions.export(ctx, "web", stack_id)

    assert data["resources"]["handle"]["resource_data"]["token"] == MASK
    assert token not in json.dumps(data)
    adopted = writes.create(ctx, {"stack_name": "again",
                                  "adopt_stack_data": json.dumps(actions.abandon(
                                      ctx, "web", stack_id))}).id
    run(worker(db, registry, clock))
    with db.read() as session:
        issued = session.scalars(select(Row.data).where(Row.stack_id == adopted)).one()
    assert issued["token"] not in (MASK, token)
