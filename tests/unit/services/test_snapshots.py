"""engine.services.snapshots with the worker that runs its operations: a snapshot keeps
the stack's definition and each resource's data (a type's ``handle_snapshot`` started,
then polled), a restore is an update back to them in which each type's
``handle_restore`` adjusts what it is restored with; Heat's refusals and words. On a
migrated SQLite file, with the real StackApi and a WorkerLoop run a few ticks."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest
from sqlalchemy import select

from engine.context import MEMBER_ROLE, RequestContext
from engine.db.models import Resource as Row
from engine.db.models import Snapshot
from engine.db.session import Database
from engine.errors import (
    ActionInProgress,
    BadRequest,
    NotSupported,
    RequestLimitExceeded,
    SnapshotNotFound,
)
from engine.resources.base import Resource, Token
from engine.resources.registry import ResourceTypeRegistry
from engine.schema import STRING, Property
from engine.services.events import EventQuery
from engine.services.proposals import StackLimits
from engine.template.parameters import MASK
from engine.template.parse import document
from engine.template.stored_parameters import masked_template
from tests.stack_api import StackApi
from tests.unit.conftest import Clock
from tests.unit.worker.running import run, worker_for

BEFORE = """\
heat_template_version: 2018-08-31
parameters:
  salt: {type: string, default: one}
  pw: {type: string, hidden: true, default: hush}
resources:
  word:
    type: OS::Heat::RandomString
    properties: {length: 12, salt: {get_param: salt}}
  label:
    type: OS::Heat::Value
    properties: {value: {list_join: ['-', [{get_param: salt}, {get_param: pw}]]}}
  disk:
    type: Test::Disk
    properties: {size: small}
outputs:
  word: {value: {get_attr: [word, value]}}
"""

AFTER = """\
heat_template_version: 2018-08-31
parameters:
  salt: {type: string}
resources:
  word:
    type: OS::Heat::RandomString
    properties: {length: 12, salt: {get_param: salt}}
  disk:
    type: Test::Disk
    properties: {size: large}
"""


class Disk(Resource):
    """A backend whose snapshot takes two looks (a backup started, then ready), and whose
    restore goes back to the backup it names."""

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "size": Property(STRING, "Size.", update_allowed=True),
        "backup": Property(STRING, "A backup to start from."),
    }
    restored: ClassVar[list[Mapping[str, Any]]] = []

    def handle_create(self) -> Token:
        self.set_physical_id(self.physical_resource_name())

    def handle_snapshot(self) -> Token:
        return {"looks": 0}

    def check_snapshot_complete(self, token: Token) -> bool:
        if token["looks"] < 1:
            token["looks"] += 1
            return False
        self.data["backup_id"] = f"backup-of-{self.physical_id}"
        return True

    def handle_restore(self, snapshot: Mapping[str, Any]) -> Mapping[str, Any]:
        Disk.restored.append(snapshot)
        return {**self.properties, "backup": snapshot["resource_data"]["backup_id"]}


@pytest.fixture
def stacks(db: Database, registry: ResourceTypeRegistry, clock: Clock) -> StackApi:
    Disk.restored = []
    types = ResourceTypeRegistry({**{n: registry.get(n) for n in registry.names()},
                                  "Test::Disk": Disk})
    return StackApi(db, types, StackLimits(), clock)


def drive(stacks: StackApi) -> None:
    """Run a worker until the operations end, moving the clock past each poll's wait."""
    loop = worker_for(stacks)
    clock = stacks.kiln.clock
    assert isinstance(clock, Clock)
    for _ in range(6):
        run(loop, 4)
        clock.advance(1)


def created(stacks: StackApi, ctx: RequestContext) -> tuple[str, str]:
    record = stacks.create(ctx, {"stack_name": "web", "template": BEFORE})
    drive(stacks)
    assert state(stacks, ctx, "web", record.id) == "CREATE_COMPLETE"
    return "web", record.id


def state(stacks: StackApi, ctx: RequestContext, name: str, stack_id: str) -> str:
    stack = stacks.get(ctx, name, stack_id)
    return f"{stack.action}_{stack.status}"


def resource(stacks: StackApi, ctx: RequestContext, stack_id: str, name: str) -> Any:
    return stacks.get_resource(ctx, "web", stack_id, name)


def test_a_snapshot_then_a_restore_brings_back_the_definition_and_the_data(
        stacks: StackApi, ctx: RequestContext, db: Database) -> None:
    name, stack_id = created(stacks, ctx)
    word = stacks.get(ctx, name, stack_id).outputs[0]["output_value"]

    taken = stacks.snapshots.create(ctx, name, stack_id, {"name": "first"})
    assert (taken.name, taken.status, taken.status_reason, taken.data) == (
        "first", "IN_PROGRESS", None, None)
    assert state(stacks, ctx, name, stack_id) == "SNAPSHOT_IN_PROGRESS"
    drive(stacks)

    assert state(stacks, ctx, name, stack_id) == "SNAPSHOT_COMPLETE"
    shown = stacks.snapshots.show(ctx, name, stack_id, taken.id)
    assert (shown.status, shown.status_reason) == (
        "COMPLETE", "Stack SNAPSHOT completed successfully")
    data = shown.data
    assert data is not None
    assert (data["action"], data["status"], data["name"]) == ("SNAPSHOT", "COMPLETE", "web")
    assert data["environment"]["parameters"] == {}  # defaults are the template's
    disk = data["resources"]["disk"]
    assert disk["resource_data"] == {"backup_id": f"backup-of-{disk['resource_id']}"}
    assert (disk["action"], disk["status"], disk["type"]) == ("SNAPSHOT", "COMPLETE",
                                                             "Test::Disk")
    assert data["resources"]["word"]["resource_data"]["value"] == word
    # The hidden default is masked in every view; the row keeps it for the restore.
    assert data["template"]["parameters"]["pw"]["default"] == MASK
    assert "hush" not in repr(stacks.snapshots.list_snapshots(ctx, name, stack_id))
    with db.read() as session:
        row = session.scalars(select(Snapshot)).one()
        assert row.data is not None and row.data["template"] == dict_of(BEFORE)
    events = [(e.resource_name, e.status, e.reason)
              for e in stacks.list_events(ctx, name, stack_id, EventQuery(ascending=True))
              if e.action == "SNAPSHOT" and not e.lifecycle]
    assert events[0] == ("web", "IN_PROGRESS", "Stack SNAPSHOT started")
    assert events[-1] == ("web", "COMPLETE", "Stack SNAPSHOT completed successfully")
    for each in ("disk", "label", "word"):
        assert [e[1:] for e in events if e[0] == each] == [
            ("IN_PROGRESS", "state changed"), ("COMPLETE", "state changed")]

    # An update that replaces the string (new salt), drops a resource and changes a size.
    stacks.update(ctx, name, stack_id, {"template": AFTER, "parameters": {"salt": "two"}},
                  patch=False)
    drive(stacks)
    assert state(stacks, ctx, name, stack_id) == "UPDATE_COMPLETE"
    assert resource(stacks, ctx, stack_id, "word").attributes["value"] != word

    stacks.snapshots.restore(ctx, name, stack_id, taken.id)
    assert state(stacks, ctx, name, stack_id) == "RESTORE_IN_PROGRESS"
    drive(stacks)

    stack = stacks.get(ctx, name, stack_id)
    assert (stack.action, stack.status, stack.status_reason) == (
        "RESTORE", "COMPLETE", "Stack RESTORE completed successfully")
    assert stacks.get_template(ctx, name, stack_id) == masked_template(dict_of(BEFORE))
    assert stacks.get_environment(ctx, name, stack_id)["parameters"] == {}
    assert stack.outputs[0]["output_value"] == word
    # The disk's type saw its own entry, and restored from the backup it names.
    assert [entry["resource_data"] for entry in Disk.restored] == [disk["resource_data"]]
    with db.read() as session:
        props = {n: p for n, p in session.execute(select(Row.name, Row.properties))}
    assert sorted(props) == ["disk", "label", "word"]  # the one the update dropped is back
    assert props["disk"] == {"size": "small", "backup": disk["resource_data"]["backup_id"]}
    assert props["label"]["value"] == "one-hush"  # the hidden value, restored as given


def test_heats_refusals(stacks: StackApi, ctx: RequestContext) -> None:
    name, stack_id = created(stacks, ctx)
    taken = stacks.snapshots.create(ctx, name, stack_id, {})
    assert taken.name is None

    with pytest.raises(ActionInProgress, match="already has an action \\(SNAPSHOT\\)"):
        stacks.snapshots.create(ctx, name, stack_id, {})
    with pytest.raises(NotSupported, match="^Deleting in-progress snapshot is not "
                                           "supported.$"):
        stacks.snapshots.delete(ctx, name, stack_id, taken.id)
    with pytest.raises(ActionInProgress):
        stacks.snapshots.restore(ctx, name, stack_id, taken.id)
    with pytest.raises(SnapshotNotFound, match="^Snapshot with id nope not found$"):
        stacks.snapshots.show(ctx, name, stack_id, "nope")
    with pytest.raises(BadRequest):
        stacks.snapshots.create(ctx, name, stack_id, {"name": 7})
    drive(stacks)

    other = stacks.create(ctx, {"stack_name": "other", "template": BEFORE}).id
    drive(stacks)
    with pytest.raises(SnapshotNotFound, match=r"^The Snapshot \(.*\) for Stack \(other\) "
                                               r"could not be found.$"):
        stacks.snapshots.show(ctx, "other", other, taken.id)

    member = dataclasses.replace(ctx, role=MEMBER_ROLE)
    stacks.snapshots._max_per_stack = 1
    with pytest.raises(RequestLimitExceeded, match="maximum snapshots per stack, 1. "
                                                   "Please delete some snapshots."):
        stacks.snapshots.create(member, name, stack_id, {})
    stacks.snapshots.create(ctx, name, stack_id, {})  # an admin is not counted, as in Heat
    drive(stacks)

    stacks.snapshots.delete(ctx, name, stack_id, taken.id)
    assert [s.id for s in stacks.snapshots.list_snapshots(ctx, name, stack_id)] != [taken.id]
    with pytest.raises(SnapshotNotFound):
        stacks.snapshots.show(ctx, name, stack_id, taken.id)


def test_a_delete_takes_the_snapshots_with_the_stack(
        stacks: StackApi, ctx: RequestContext, db: Database) -> None:
    name, stack_id = created(stacks, ctx)
    stacks.snapshots.create(ctx, name, stack_id, {})
    drive(stacks)

    stacks.delete(ctx, name, stack_id)
    drive(stacks)

    assert state(stacks, ctx, name, stack_id) == "DELETE_COMPLETE"
    with db.read() as session:
        assert session.scalars(select(Snapshot)).all() == []


def dict_of(template: str) -> Any:
    """The template as Kiln stores it (dates kept as strings)."""
    return document(template).data
