"""engine.services.events: a stack's events as the tenant reads them (another tenant's
stack is not found), their order and its direction, filters, one resource's events,
pages after a marker, one event, the events of nested stacks, and the lifecycle plugin
calls, on a migrated SQLite file with the stacks stored by StackWrites and run by a
worker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from engine.context import RequestContext
from engine.db.session import Database
from engine.errors import EntityNotFound, EventNotFound, InvalidFilter
from engine.ir.stored import StoredIrs
from engine.lifecycle.registry import LifecycleRegistry
from engine.resources.registry import ResourceTypeRegistry
from engine.services.events import EventQuery, StackEvents
from engine.services.stack_writes import StackWrites
from engine.worker.loop import WorkerLoop, WorkerSettings
from tests.unit.conftest import Clock
from tests.unit.services.test_stack_reads import create, run_nested
from tests.unit.services.test_stack_reads import other as other  # the fixture
from tests.unit.worker.running import run, worker
from tests.unit.worker.test_lifecycle_calls import Entry, Recording, loaded, operations

TEMPLATE = """\
heat_template_version: 2018-08-31
resources:
  a: {type: OS::Heat::None}
  b: {type: OS::Heat::RandomString, depends_on: a}
"""
# Every event of TEMPLATE's create, oldest first.
CREATED = ["web CREATE_IN_PROGRESS", "a CREATE_IN_PROGRESS", "a CREATE_COMPLETE",
           "b CREATE_IN_PROGRESS", "b CREATE_COMPLETE", "web CREATE_COMPLETE"]


@pytest.fixture
def events(db: Database) -> StackEvents:
    return StackEvents(db)


@pytest.fixture
def web(writes: StackWrites, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> str:
    """The id of "web", created from TEMPLATE."""
    stack_id = create(writes, ctx, "web", TEMPLATE)
    run(worker(db, registry, clock))
    return stack_id


def listed(events: StackEvents, ctx: RequestContext, stack_id: str,
           resource_name: str | None = None, **query: Any) -> list[str]:
    return [f"{e.resource_name} {e.action}_{e.status}"
            for e in events.list_events(ctx, "web", stack_id, EventQuery(**query),
                                        resource_name)]


# --- the tenant's stack ---------------------------------------------------------------------

# Each read, given the tenant, the stack's name and id, and the id of an event of "a".
CALLS: dict[str, Callable[[StackEvents, RequestContext, str, str, str], Any]] = {
    "list": lambda s, ctx, name, stack_id, _: s.list_events(ctx, name, stack_id,
                                                            EventQuery()),
    "get": lambda s, ctx, name, stack_id, event_id: s.get_event(ctx, name, stack_id, "a",
                                                                event_id),
    "lifecycle_calls": lambda s, ctx, name, stack_id, _: s.lifecycle_calls(ctx, name,
                                                                           stack_id),
}


def event_of_a(events: StackEvents, ctx: RequestContext, stack_id: str) -> str:
    return events.list_events(ctx, "web", stack_id, EventQuery(), "a")[0].id


@pytest.mark.parametrize("call", sorted(CALLS))
def test_another_tenants_stack_is_not_found(
        call: str, web: str, events: StackEvents, ctx: RequestContext,
        other: RequestContext) -> None:
    event_id = event_of_a(events, ctx, web)
    CALLS[call](events, ctx, "web", web, event_id)  # the owner reads it

    with pytest.raises(EntityNotFound) as caught:
        CALLS[call](events, other, "web", web, event_id)

    assert caught.value.message == "The Stack (web) could not be found."


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_name_that_is_not_the_stacks_is_not_found(
        call: str, web: str, writes: StackWrites, events: StackEvents,
        ctx: RequestContext) -> None:
    event_id = event_of_a(events, ctx, web)
    create(writes, ctx, "db")
    with pytest.raises(EntityNotFound) as caught:
        CALLS[call](events, ctx, "db", web, event_id)
    assert caught.value.message == "The Stack (db) could not be found."


# --- order, filters, pages --------------------------------------------------------------------


def test_events_are_newest_first_unless_asked_otherwise(
        web: str, events: StackEvents, ctx: RequestContext) -> None:
    assert listed(events, ctx, web) == CREATED[::-1]
    assert listed(events, ctx, web, ascending=True) == CREATED


def test_a_sort_direction_beats_the_default_and_a_known_sort_key_sorts_ascending(
        web: str, events: StackEvents, ctx: RequestContext) -> None:
    assert listed(events, ctx, web, ascending=True, sort_dir="desc") == CREATED[::-1]
    assert listed(events, ctx, web, sort_dir="asc") == CREATED
    assert listed(events, ctx, web, sort_keys=("event_time",)) == CREATED
    assert listed(events, ctx, web, sort_keys=("no_such_key",)) == CREATED[::-1]
    by_type = listed(events, ctx, web, sort_keys=("resource_type",))
    assert by_type == ["a CREATE_IN_PROGRESS", "a CREATE_COMPLETE",  # OS::Heat::None
                       "b CREATE_IN_PROGRESS", "b CREATE_COMPLETE",  # OS::Heat::RandomString
                       "web CREATE_IN_PROGRESS", "web CREATE_COMPLETE"]  # OS::Heat::Stack


def test_the_filters_pass_through(web: str, events: StackEvents, ctx: RequestContext) -> None:
    def filtered(**filters: list[str]) -> list[str]:
        return listed(events, ctx, web, ascending=True, filters=filters)

    assert filtered(resource_status=["COMPLETE"]) == [
        "a CREATE_COMPLETE", "b CREATE_COMPLETE", "web CREATE_COMPLETE"]
    assert filtered(resource_name=["a", "web"], resource_status=["IN_PROGRESS"]) == [
        "web CREATE_IN_PROGRESS", "a CREATE_IN_PROGRESS"]
    assert filtered(resource_type=["OS::Heat::RandomString"]) == [
        "b CREATE_IN_PROGRESS", "b CREATE_COMPLETE"]
    assert filtered(resource_action=["DELETE"]) == []
    assert filtered(resource_status=[]) == CREATED  # a key without values filters nothing


def test_an_unknown_filter_is_refused(web: str, events: StackEvents,
                                      ctx: RequestContext) -> None:
    with pytest.raises(InvalidFilter) as caught:
        listed(events, ctx, web, filters={"status": ["COMPLETE"], "resource_name": ["a"]})
    assert caught.value.message == "Invalid filter parameters ['status']"


def test_one_resources_events_and_its_name_filter_ignored(
        web: str, events: StackEvents, ctx: RequestContext) -> None:
    assert listed(events, ctx, web, "b", ascending=True) == [
        "b CREATE_IN_PROGRESS", "b CREATE_COMPLETE"]
    # The path names the resource; a resource_name filter cannot widen or empty it.
    assert listed(events, ctx, web, "b", ascending=True,
                  filters={"resource_name": ["a"]}) == [
        "b CREATE_IN_PROGRESS", "b CREATE_COMPLETE"]


def test_pages_follow_their_marker(web: str, events: StackEvents,
                                   ctx: RequestContext) -> None:
    first = events.list_events(ctx, "web", web, EventQuery(limit=4))
    rest = events.list_events(ctx, "web", web, EventQuery(limit=4, marker=first[-1].id))

    assert [f"{e.resource_name} {e.action}_{e.status}" for e in first + rest] == CREATED[::-1]
    assert len(rest) == 2
    # A marker that names no event of the stack is ignored.
    assert listed(events, ctx, web, limit=1, marker="no-such-event") == CREATED[-1:]


def test_a_deleted_stack_keeps_its_events(
        web: str, writes: StackWrites, events: StackEvents, ctx: RequestContext,
        db: Database, registry: ResourceTypeRegistry, clock: Clock) -> None:
    writes.delete(ctx, "web", web)
    run(worker(db, registry, clock))

    assert listed(events, ctx, web, ascending=True)[:6] == CREATED
    assert listed(events, ctx, web)[0] == "web DELETE_COMPLETE"


# --- one event -------------------------------------------------------------------------------


def test_one_event_by_its_resource_and_id(web: str, events: StackEvents,
                                          ctx: RequestContext) -> None:
    [newest, _] = events.list_events(ctx, "web", web, EventQuery(), "b")

    event = events.get_event(ctx, "web", web, "b", newest.id)

    assert event == newest
    assert (event.resource_type, event.action, event.status, event.reason) == (
        "OS::Heat::RandomString", "CREATE", "COMPLETE", "state changed")
    assert event.physical_resource_id.startswith("web-b-")
    assert (event.lifecycle, event.stack) == (None, None)


@pytest.mark.parametrize("resource", ["a", "web", "nope"])
def test_an_event_asked_for_under_another_resource_is_not_found(
        resource: str, web: str, events: StackEvents, ctx: RequestContext) -> None:
    [newest, _] = events.list_events(ctx, "web", web, EventQuery(), "b")
    with pytest.raises(EventNotFound) as caught:
        events.get_event(ctx, "web", web, resource, newest.id)
    assert caught.value.message == f"No event {newest.id} found"


def test_another_stacks_event_is_not_found(web: str, writes: StackWrites,
                                           events: StackEvents, ctx: RequestContext) -> None:
    db_id = create(writes, ctx, "db")
    [theirs] = events.list_events(ctx, "db", db_id, EventQuery())
    with pytest.raises(EventNotFound):
        events.get_event(ctx, "web", web, "db", theirs.id)


# --- nested stacks --------------------------------------------------------------------------


def test_nested_depth_brings_the_child_stacks_events_each_naming_its_stack(
        writes: StackWrites, events: StackEvents, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    parent = (
        "heat_template_version: 2018-08-31\nresources:\n  child:\n    type: OS::Heat::Stack\n"
        "    properties: {template: {get_file: child.yaml}}\n")
    stack_id = create(writes, ctx, "web", parent, files={
        "child.yaml": "heat_template_version: 2018-08-31\nresources:\n"
                      "  inner: {type: OS::Heat::None}\n"})
    run_nested(db, registry, clock)

    own = events.list_events(ctx, "web", stack_id, EventQuery(ascending=True))
    assert {e.resource_name for e in own} == {"web", "child"}
    assert {e.stack for e in own} == {None}

    deep = events.list_events(ctx, "web", stack_id, EventQuery(ascending=True),
                              nested_depth=1)
    nested = [e for e in deep if e.stack is not None]
    # The parent resource's physical id is its child stack's id.
    child_id = next(e.physical_resource_id for e in own
                    if (e.resource_name, e.status) == ("child", "COMPLETE"))
    [(child_name, shown_id)] = {e.stack for e in nested if e.stack is not None}
    assert shown_id == child_id
    assert child_name.startswith("web-child-")
    assert [f"{e.resource_name} {e.action}_{e.status}" for e in nested] == [
        f"{child_name} CREATE_IN_PROGRESS", "inner CREATE_IN_PROGRESS",
        "inner CREATE_COMPLETE", f"{child_name} CREATE_COMPLETE"]
    assert len(deep) == len(own) + len(nested)
    # Deeper than the nesting limit is the limit, not an error.
    assert len(events.list_events(ctx, "web", stack_id, EventQuery(),
                                  nested_depth=10_000)) == len(deep)


# --- lifecycle plugin calls -------------------------------------------------------------------


def test_lifecycle_calls_are_listed_oldest_first_with_their_events(
        writes: StackWrites, events: StackEvents, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs) -> None:
    log: list[Entry] = []
    loop = WorkerLoop(db, registry, WorkerSettings(), host="test", clock=clock,
                      lifecycle=LifecycleRegistry([loaded(Recording("audit", log))]), irs=irs)
    loop.register()
    stack_id = create(writes, ctx, "web", TEMPLATE)
    run(loop)

    calls = events.lifecycle_calls(ctx, "web", stack_id)

    assert [(c["plugin"], c["phase"], c["action"], c["verdict"]) for c in calls] == [
        ("audit", "pre", "CREATE", "allow"), ("audit", "post", "CREATE", "done")]
    assert {c["time"] for c in calls} == {clock().isoformat(timespec="seconds")}
    [operation] = operations(db, stack_id)
    assert {c["operation_id"] for c in calls} == {operation.id}
    # Each is an event of the stack too, carrying the same record.
    shown = {e.id: e for e in events.list_events(ctx, "web", stack_id, EventQuery())}
    for call in calls:
        event = shown[call["event_id"]]
        assert (event.resource_name, event.resource_type) == ("web",
                                                              "Kiln::LifecyclePlugin")
        assert event.lifecycle is not None and event.lifecycle["plugin"] == "audit"
        assert event.lifecycle["operation_id"] == operation.id
