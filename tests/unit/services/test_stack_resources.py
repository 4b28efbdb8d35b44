"""engine.services.stack_resources: a stack's resources as the tenant reads them (the
list with its filters and nested depth, one resource with its attributes, its metadata
with hidden values masked) and the requests on one (mark-unhealthy, the refusals of a
signal), on a migrated SQLite file with the stacks stored by StackWrites and run by a
worker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from engine.context import RequestContext
from engine.db.session import Database
from engine.errors import (
    ActionInProgress,
    BadRequest,
    EntityNotFound,
    InvalidFilter,
    NotSupported,
    ResourceActionNotSupported,
    ResourceNotAvailable,
    ResourceNotFound,
)
from engine.ir.stored import StoredIrs
from engine.resources.registry import ResourceTypeRegistry
from engine.services.events import EventQuery, StackEvents
from engine.services.stack_actions import StackActions
from engine.services.stack_resources import StackResources
from engine.services.stack_writes import StackWrites
from engine.template.parameters import MASK
from tests.unit.conftest import Clock
from tests.unit.services.test_stack_reads import create, run_nested
from tests.unit.services.test_stack_reads import other as other  # the fixture
from tests.unit.worker.running import run, worker

TEMPLATE = """\
heat_template_version: 2018-08-31
parameters:
  password: {type: string, hidden: true}
  user: {type: string, default: alice}
resources:
  word:
    type: OS::Heat::RandomString
    description: a word
    properties: {length: 8}
    metadata:
      user: {get_param: user}
      login: {list_join: ['/', [{get_param: user}, {get_param: password}]]}
      ref: {get_resource: value}
  value:
    type: OS::Heat::Value
    properties: {value: {get_attr: [word, value]}}
  last:
    type: OS::Heat::None
    depends_on: [word, value]
"""

PARENT = """\
heat_template_version: 2018-08-31
resources:
  mine: {type: OS::Heat::None}
  child:
    type: OS::Heat::Stack
    properties: {template: {get_file: child.yaml}}
"""
CHILD = """\
heat_template_version: 2018-08-31
resources:
  inner: {type: OS::Heat::None}
  grandchild:
    type: OS::Heat::Stack
    properties: {template: {get_file: grandchild.yaml}}
"""
GRANDCHILD = "heat_template_version: 2018-08-31\nresources:\n  deep: {type: OS::Heat::None}\n"


@pytest.fixture
def resources(db: Database, registry: ResourceTypeRegistry, clock: Clock,
              irs: StoredIrs) -> StackResources:
    return StackResources(db, registry, clock, irs)


@pytest.fixture
def web(writes: StackWrites, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> str:
    """The id of "web", built from TEMPLATE."""
    stack_id = create(writes, ctx, "web", TEMPLATE, parameters={"password": "hunter2"})
    run(worker(db, registry, clock))
    return stack_id


def listed(resources: StackResources, ctx: RequestContext, stack_id: str,
           filters: dict[str, list[str]] | None = None) -> list[str]:
    return sorted(r.name for r in resources.list_resources(ctx, "web", stack_id,
                                                           filters or {}))


# --- the tenant's stack -------------------------------------------------------------------

CALLS: dict[str, Callable[[StackResources, RequestContext, str, str], Any]] = {
    "list": lambda s, ctx, name, stack_id: s.list_resources(ctx, name, stack_id, {}),
    "get": lambda s, ctx, name, stack_id: s.get_resource(ctx, name, stack_id, "word"),
    "metadata": lambda s, ctx, name, stack_id: s.resource_metadata(ctx, name, stack_id,
                                                                   "word"),
    "mark_unhealthy": lambda s, ctx, name, stack_id: s.mark_unhealthy(
        ctx, name, stack_id, "word", {"mark_unhealthy": True}),
    "signal": lambda s, ctx, name, stack_id: s.signal(ctx, name, stack_id, "word", {}),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_another_tenants_stack_is_not_found(
        call: str, web: str, resources: StackResources, other: RequestContext) -> None:
    with pytest.raises(EntityNotFound) as caught:
        CALLS[call](resources, other, "web", web)
    assert caught.value.message == "The Stack (web) could not be found."


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_name_that_is_not_the_stacks_is_not_found(
        call: str, web: str, writes: StackWrites, resources: StackResources,
        ctx: RequestContext) -> None:
    create(writes, ctx, "db")
    with pytest.raises(EntityNotFound) as caught:
        CALLS[call](resources, ctx, "db", web)
    assert caught.value.message == "The Stack (db) could not be found."


# --- the list ------------------------------------------------------------------------------


def test_the_list_gives_each_resource_its_state_dependents_and_description(
        web: str, resources: StackResources, ctx: RequestContext, clock: Clock) -> None:
    records = {r.name: r for r in resources.list_resources(ctx, "web", web, {})}

    assert sorted(records) == ["last", "value", "word"]
    word = records["word"]
    assert (word.type, word.action, word.status, word.description) == (
        "OS::Heat::RandomString", "CREATE", "COMPLETE", "a word")
    assert word.required_by == ["last", "value"]
    assert word.physical_id != "" and word.created_at == clock()
    assert records["last"].required_by == []
    # Attributes are read (by the type's code) only when asked for.
    assert word.attributes == {}
    detailed = {r.name: r for r in resources.list_resources(ctx, "web", web, {},
                                                            with_attributes=True)}
    assert len(detailed["word"].attributes["value"]) == 8
    assert detailed["value"].attributes["value"] == detailed["word"].attributes["value"]


def test_the_lists_filters_pass_through(web: str, resources: StackResources,
                                        ctx: RequestContext) -> None:
    assert listed(resources, ctx, web, {"name": ["word", "last"]}) == ["last", "word"]
    assert listed(resources, ctx, web, {"type": ["Heat::Ran"]}) == ["word"]  # substring
    assert listed(resources, ctx, web, {"status": ["CREATE_COMPLETE"]}) == [
        "last", "value", "word"]
    assert listed(resources, ctx, web, {"status": ["FAILED"]}) == []
    assert listed(resources, ctx, web, {"action": ["CREATE"], "name": ["value"]}) == [
        "value"]
    # Query keys the list takes that are not comparisons.
    assert listed(resources, ctx, web, {"nested_depth": ["1"], "with_detail": ["true"]}) == [
        "last", "value", "word"]


def test_an_unknown_filter_is_refused(web: str, resources: StackResources,
                                      ctx: RequestContext) -> None:
    with pytest.raises(InvalidFilter) as caught:
        resources.list_resources(ctx, "web", web, {"colour": ["red"], "name": ["word"],
                                                   "age": ["1"]})
    assert caught.value.message == "Invalid filter parameters ['age', 'colour']"


def test_nested_depth_lists_the_child_stacks_resources_that_many_levels_down(
        writes: StackWrites, resources: StackResources, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    parent_id = create(writes, ctx, "web", PARENT,
                       files={"child.yaml": CHILD, "grandchild.yaml": GRANDCHILD})
    run_nested(db, registry, clock)

    top = {r.name: r for r in resources.list_resources(ctx, "web", parent_id, {})}
    assert sorted(top) == ["child", "mine"]
    assert top["mine"].nested_stack is None
    assert top["child"].nested_stack is not None
    child_name, child_id = top["child"].nested_stack
    assert (top["child"].stack, top["child"].parent_resource) == (None, None)

    one = resources.list_resources(ctx, "web", parent_id, {}, nested_depth=1)
    assert sorted((r.name, r.stack, r.parent_resource) for r in one) == [
        ("child", None, None), ("grandchild", (child_name, child_id), "child"),
        ("inner", (child_name, child_id), "child"), ("mine", None, None)]

    two = resources.list_resources(ctx, "web", parent_id, {}, nested_depth=2)
    assert {f"{r.action}_{r.status}" for r in two} == {"CREATE_COMPLETE"}
    [deep] = [r for r in two if r.name == "deep"]
    grandchild = next(r for r in one if r.name == "grandchild").nested_stack
    # Each names the stack it is in and the resource that owns that stack.
    assert (deep.stack, deep.parent_resource) == (grandchild, "grandchild")
    # Filters apply at every level.
    assert sorted(r.name for r in resources.list_resources(
        ctx, "web", parent_id, {"name": ["inner", "deep"]}, nested_depth=2)) == [
        "deep", "inner"]


# --- one resource ----------------------------------------------------------------------------


def test_one_resource_with_the_attributes_asked_for(
        web: str, resources: StackResources, ctx: RequestContext) -> None:
    word = resources.get_resource(ctx, "web", web, "word", with_attr=["no_such"])

    assert (word.name, word.description, word.required_by) == (
        "word", "a word", ["last", "value"])
    assert len(word.attributes["value"]) == 8
    assert word.attributes["no_such"] is None  # unknown names are shown as null


def test_an_unknown_resource_is_not_found(web: str, resources: StackResources,
                                          ctx: RequestContext) -> None:
    with pytest.raises(ResourceNotFound) as caught:
        resources.get_resource(ctx, "web", web, "nope")
    assert caught.value.message == "The Resource (nope) could not be found in Stack web."
    with pytest.raises(ResourceNotFound):
        resources.resource_metadata(ctx, "web", web, "nope")


def test_metadata_is_evaluated_as_far_as_parameters_go_with_hidden_values_masked(
        web: str, resources: StackResources, ctx: RequestContext) -> None:
    assert resources.resource_metadata(ctx, "web", web, "word") == {
        "user": "alice", "login": f"alice/{MASK}", "ref": {"get_resource": "value"}}
    assert resources.resource_metadata(ctx, "web", web, "value") == {}


def test_metadata_without_the_ir_takes_the_values_the_stack_takes(
        writes: StackWrites, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    # A type uninstalled since: no IR, so the stored values, resolved as the IR resolves
    # them (given, else parameter_defaults, else the template's default), hidden masked.
    stack_id = create(writes, ctx, "web", TEMPLATE, environment={
        "parameter_defaults": {"password": "env-secret", "user": "bob"}})
    types = {name: registry.get(name) for name in registry.names()
             if name != "OS::Heat::RandomString"}
    fewer = ResourceTypeRegistry(types)
    without = StackResources(db, fewer, clock, StoredIrs(fewer.get, fewer.constraint))

    assert without.resource_metadata(ctx, "web", stack_id, "word") == {
        "user": "bob", "login": f"bob/{MASK}", "ref": {"get_resource": "value"}}


def test_attributes_are_shown_with_the_stacks_hidden_values_masked(
        writes: StackWrites, resources: StackResources, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    # A Value hands its property on as its attribute; the hidden value in it is masked,
    # whichever source gave it (here the environment's parameter_defaults).
    template = ("heat_template_version: 2018-08-31\n"
                "parameters: {password: {type: string, hidden: true}}\n"
                "resources:\n"
                "  kept:\n"
                "    type: OS::Heat::Value\n"
                "    properties: {value: {list_join: [':', [user, {get_param: password}]]}}\n")
    stack_id = create(writes, ctx, "web", template, environment={
        "parameter_defaults": {"password": "env-secret"}})
    run(worker(db, registry, clock))

    shown = resources.get_resource(ctx, "web", stack_id, "kept")
    [listed] = resources.list_resources(ctx, "web", stack_id, {}, with_attributes=True)

    assert shown.attributes["value"] == listed.attributes["value"] == f"user:{MASK}"


# --- mark unhealthy ---------------------------------------------------------------------------


def test_mark_unhealthy_fails_the_check_and_marking_healthy_completes_it(
        web: str, resources: StackResources, ctx: RequestContext, db: Database,
        clock: Clock) -> None:
    clock.advance(1)
    resources.mark_unhealthy(ctx, "web", web, "word",
                             {"mark_unhealthy": True, "resource_status_reason": "broken"})
    word = resources.get_resource(ctx, "web", web, "word")
    assert (word.action, word.status, word.status_reason, word.updated_at) == (
        "CHECK", "FAILED", "broken", clock())

    # Named by its physical id too.
    resources.mark_unhealthy(ctx, "web", web, word.physical_id, {"mark_unhealthy": "false"})
    word = resources.get_resource(ctx, "web", web, "word")
    assert (word.action, word.status, word.status_reason) == (
        "CHECK", "COMPLETE", "state changed by resource_mark_unhealthy api")

    events = StackEvents(db).list_events(ctx, "web", web, EventQuery(ascending=True), "word")
    assert [f"{e.action}_{e.status}: {e.reason}" for e in events][-2:] == [
        "CHECK_FAILED: broken",
        "CHECK_COMPLETE: state changed by resource_mark_unhealthy api"]


def test_mark_unhealthy_refuses_a_bad_body(web: str, resources: StackResources,
                                           ctx: RequestContext) -> None:
    with pytest.raises(BadRequest) as caught:
        resources.mark_unhealthy(ctx, "web", web, "word", {"resource_status_reason": "x"})
    assert caught.value.message == (
        "Missing mandatory (mark_unhealthy) key from mark unhealthy request")
    with pytest.raises(ResourceNotFound):
        resources.mark_unhealthy(ctx, "web", web, "nope", {"mark_unhealthy": True})


def test_mark_unhealthy_is_refused_while_the_stack_is_busy(
        writes: StackWrites, resources: StackResources, ctx: RequestContext) -> None:
    stack_id = create(writes, ctx, "web", TEMPLATE, parameters={"password": "x"})
    with pytest.raises(ActionInProgress):
        resources.mark_unhealthy(ctx, "web", stack_id, "word", {"mark_unhealthy": True})


def test_requests_on_a_deleted_stacks_resources_are_not_found(
        web: str, writes: StackWrites, resources: StackResources, ctx: RequestContext,
        db: Database, registry: ResourceTypeRegistry, clock: Clock) -> None:
    writes.delete(ctx, "web", web)
    run(worker(db, registry, clock))

    assert resources.list_resources(ctx, "web", web, {}) == []  # its record stays
    for call in ("mark_unhealthy", "signal"):
        with pytest.raises(EntityNotFound):
            CALLS[call](resources, ctx, "web", web)


# --- the refusals of a signal -----------------------------------------------------------------


def test_a_signal_to_a_resource_not_in_the_stack_is_not_found(
        web: str, resources: StackResources, ctx: RequestContext) -> None:
    with pytest.raises(ResourceNotFound):
        resources.signal(ctx, "web", web, "nope", {})


def test_a_signal_to_a_resource_of_a_type_that_takes_none_is_refused(
        web: str, resources: StackResources, ctx: RequestContext) -> None:
    with pytest.raises(ResourceActionNotSupported) as caught:
        resources.signal(ctx, "web", web, "last", {})
    assert caught.value.message == "signal is not supported for resource."


def test_a_signal_to_a_resource_not_created_yet_is_refused(
        writes: StackWrites, resources: StackResources, ctx: RequestContext) -> None:
    stack_id = create(writes, ctx, "web", TEMPLATE, parameters={"password": "x"})
    with pytest.raises(ResourceNotAvailable) as caught:
        resources.signal(ctx, "web", stack_id, "word", {})
    assert caught.value.message == "The Resource (word) is not available."


def test_a_signal_to_a_suspended_resource_is_refused(
        web: str, resources: StackResources, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    StackActions(db, clock, 3600).act(ctx, "web", web, {"suspend": None})
    run(worker(db, registry, clock))
    assert resources.get_resource(ctx, "web", web, "last").action == "SUSPEND"

    with pytest.raises(NotSupported) as caught:
        resources.signal(ctx, "web", web, "last", {})
    assert caught.value.message == "Signal resource during SUSPEND is not supported."
