"""engine.services.stack_dry_runs: what a preview, a validate and an update preview show
(hidden values masked everywhere, the lifecycle plugins' dry-run verdicts), that they
refuse what the writes refuse and what a plugin would fail, and that they store nothing,
on a migrated SQLite file."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from sqlalchemy import func, select

from engine.context import RequestContext
from engine.db.models import Operation, Stack
from engine.db.session import Database
from engine.errors import (
    BadRequest,
    EntityNotFound,
    ImmutableParameterModified,
    KilnError,
    LifecycleDenied,
    ResourceTypeNotFound,
    UserParameterMissing,
)
from engine.ir.stored import StoredIrs
from engine.lifecycle.base import Denied, Warn
from engine.lifecycle.planned import NOT_KNOWN
from engine.lifecycle.registry import LifecycleRegistry
from engine.lifecycle.view import PropertyChange
from engine.resources.registry import ResourceTypeRegistry
from engine.services import update_preview
from engine.services.lifecycle import LifecycleService
from engine.services.proposals import StackLimits
from engine.services.stack_dry_runs import StackDryRuns
from engine.services.stack_writes import StackWrites
from engine.template.parameters import MASK
from engine.vocabulary import Change
from tests.unit.conftest import Clock
from tests.unit.services.test_stack_reads import create
from tests.unit.services.test_stack_reads import other as other  # the fixture
from tests.unit.worker.running import run, worker
from tests.unit.worker.test_lifecycle_calls import Entry, Recording, deny, loaded

TEMPLATE = """\
heat_template_version: 2018-08-31
description: a web tier
parameters:
  password: {type: string, hidden: true, default: hunter2, description: the password}
  size: {type: number, default: 2, constraints: [{range: {min: 1, max: 5}}]}
  name: {type: string}
parameter_groups:
  - {label: main, parameters: [name, size]}
resources:
  word:
    type: OS::Heat::RandomString
    description: a word
    metadata: {pw: {get_param: password}, ref: {get_attr: [value, value]}}
    properties: {length: {get_param: size}, salt: {get_param: password}}
  value:
    type: OS::Heat::Value
    properties: {value: {get_attr: [word, value]}}
outputs:
  out: {description: the value, value: {get_attr: [value, value]}}
"""


class DryRunning(Recording):
    """A plugin that honours dry runs; what it sees and says is its hooks'."""

    supports_dry_run = True


def stored(db: Database) -> tuple[int, int]:
    """How many stacks and operations the database holds."""
    with db.read() as session:
        return (session.scalar(select(func.count()).select_from(Stack)) or 0,
                session.scalar(select(func.count()).select_from(Operation)) or 0)


def with_plugins(db: Database, registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs,
                 *plugins: Recording, timeout: float = 10.0, on_timeout: str = "fail"
                 ) -> StackDryRuns:
    return StackDryRuns(db, registry, StackLimits(), clock, irs, lifecycle=LifecycleService(
        LifecycleRegistry([loaded(plugin, timeout, on_timeout) for plugin in plugins])))


def verdicts(records: Sequence[dict[str, Any]]) -> list[tuple[str, str, str, str, bool]]:
    """(plugin, action, verdict, message, dry_run) of each dry-run record."""
    return [(r["plugin"], r["action"], r["verdict"], r["message"], r["dry_run"])
            for r in records]


def quoting(log: list[Entry], seen_dry_run: list[bool], *, denies: bool = True
            ) -> DryRunning:
    """Denies (or warns), quoting the hidden value it is not supposed to know."""

    plugin = DryRunning("quota", log)

    def pre(action: str | None) -> Warn | None:
        seen_dry_run.append(plugin.seen[-1].stack.dry_run)
        if not denies:
            return Warn("password hunter2 is too weak")
        raise Denied("password hunter2 is too weak")

    plugin.pre = pre
    return plugin


# --- preview -----------------------------------------------------------------------------


def test_a_preview_shows_the_stack_it_would_create_and_stores_nothing(
        dry_runs: StackDryRuns, ctx: RequestContext, db: Database, clock: Clock) -> None:
    preview = dry_runs.preview(ctx, {"stack_name": "web", "template": TEMPLATE,
                                     "parameters": {"name": "n"}})

    stack = preview.stack
    assert (stack.id, stack.name, stack.tenant_id, stack.description) == (
        "None", "web", ctx.tenant_id, "a web tier")
    assert (stack.action, stack.status, stack.status_reason) == (
        "CREATE", "IN_PROGRESS", "Stack CREATE started")
    assert {k: v for k, v in stack.parameters.items() if not k.startswith("OS::")} == {
        "password": MASK, "size": "2", "name": "n"}
    assert preview.outputs == [
        {"output_key": "out", "description": "the value", "output_value": None}]
    assert preview.lifecycle == []  # no plugins
    assert stored(db) == (0, 0)


def test_a_previewed_resource_shows_every_property_as_far_as_it_is_known(
        dry_runs: StackDryRuns, ctx: RequestContext) -> None:
    preview = dry_runs.preview(ctx, {"stack_name": "web", "template": TEMPLATE,
                                     "parameters": {"name": "n", "size": "3"}})

    word, value = preview.resources
    assert (word.name, word.type, word.description, word.required_by, word.attributes) == (
        "word", "OS::Heat::RandomString", "a word", ["value"], ["value"])
    # Typed from the parameter, the default where none is given, a hidden value masked.
    assert word.properties == {
        "length": 3, "salt": MASK, "character_sequences": None,
        "character_classes": [{"class": "lettersdigits", "min": 1}]}
    # Metadata as written: its functions are shown, not evaluated.
    assert word.metadata == {"pw": {"get_param": "password"},
                             "ref": {"get_attr": ["value", "value"]}}
    # An attribute of a resource that does not exist yet is not known.
    assert (value.properties, value.required_by, value.metadata) == (
        {"value": None, "type": None}, [], {})


BAD: dict[str, dict[str, Any]] = {
    "missing parameter": {"template": TEMPLATE},
    "unknown type": {"template": "heat_template_version: 2018-08-31\nresources:\n"
                                 "  r: {type: OS::No::Such}\n"},
    "converge": {"template": TEMPLATE, "parameters": {"name": "n"}, "converge": True},
    "parameters of the wrong type": {"template": TEMPLATE, "parameters": [1]},
    "out of range": {"template": TEMPLATE, "parameters": {"name": "n", "size": 9}},
}


@pytest.mark.parametrize("bad", sorted(BAD))
def test_a_preview_refuses_what_a_create_refuses_in_the_same_words(
        bad: str, dry_runs: StackDryRuns, writes: StackWrites, ctx: RequestContext,
        db: Database) -> None:
    body = {"stack_name": "web", **BAD[bad]}
    with pytest.raises(KilnError) as previewed:
        dry_runs.preview(ctx, body)
    with pytest.raises(KilnError) as created:
        writes.create(ctx, body)

    assert (type(previewed.value), previewed.value.message) == (
        type(created.value), created.value.message)
    assert stored(db) == (0, 0)


def test_a_previews_refusals_in_heats_words(
        dry_runs: StackDryRuns, ctx: RequestContext) -> None:
    with pytest.raises(UserParameterMissing) as caught:
        dry_runs.preview(ctx, {"stack_name": "web", "template": TEMPLATE})
    assert caught.value.message == "The Parameter (name) was not provided."
    with pytest.raises(ResourceTypeNotFound):
        dry_runs.preview(ctx, {"stack_name": "web", **BAD["unknown type"]})
    with pytest.raises(BadRequest) as refused:
        dry_runs.preview(ctx, {"stack_name": "web", **BAD["converge"]})
    assert refused.value.message == ("converge flag only supported in stack update (or "
                                     "update preview) request.")


def test_a_preview_asks_each_plugin_for_a_dry_run_and_masks_what_it_says(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    dry: list[bool] = []
    dry_runs = with_plugins(db, registry, clock, irs, quoting(log, dry, denies=False),
                            Recording("legacy", log))

    preview = dry_runs.preview(ctx, {"stack_name": "web", "template": TEMPLATE,
                                     "parameters": {"name": "n"}})

    assert verdicts(preview.lifecycle) == [
        ("quota", "CREATE", "warn", f"password {MASK} is too weak", True),
        ("legacy", "CREATE", "skipped", "this plugin does not support dry runs", True)]
    assert dry == [True]  # the plugin was told it is a dry run
    assert log == [("quota", "pre", "CREATE", None)]  # the other was not called
    assert stored(db) == (0, 0)


def test_a_preview_a_plugin_would_deny_is_refused_naming_every_denier(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    dry_runs = with_plugins(
        db, registry, clock, irs, quoting(log, []),
        DryRunning("audit", log, pre=lambda action: Warn("noted")),
        DryRunning("policy", log, pre=deny("no random strings")), Recording("legacy", log))

    with pytest.raises(LifecycleDenied) as refused:
        dry_runs.preview(ctx, {"stack_name": "web", "template": TEMPLATE,
                               "parameters": {"name": "n"}})

    assert refused.value.message == (
        f"Lifecycle plugin quota denied CREATE: password {MASK} is too weak; "
        "Lifecycle plugin policy denied CREATE: no random strings")
    # Every plugin that honours dry runs was asked, after the first denial too.
    assert [entry[0] for entry in log] == ["quota", "audit", "policy"]
    assert stored(db) == (0, 0)


# A group of two template resources, each a stack of one resource: three nested stacks,
# two levels deep. The hidden value reaches the grandchildren as a plain parameter.
TREE = """\
heat_template_version: 2018-08-31
parameters:
  password: {type: string, hidden: true, default: hunter2}
resources:
  group:
    type: OS::Heat::ResourceGroup
    properties:
      count: 2
      resource_def:
        type: inner.yaml
        properties: {word: {get_param: password}}
  value:
    type: OS::Heat::Value
    properties: {value: {get_attr: [group, refs]}}
  later:
    type: OS::Heat::Stack
    properties:
      template: {get_attr: [value, value]}
"""
INNER = """\
heat_template_version: 2018-08-31
parameters:
  word: {type: string}
resources:
  leaf:
    type: OS::Heat::RandomString
    properties: {salt: {get_param: word}}
"""
TREE_BODY = {"stack_name": "web", "template": TREE, "files": {"inner.yaml": INNER}}


def test_a_preview_lists_the_resources_of_each_nested_stack_in_its_owners_place(
        dry_runs: StackDryRuns, ctx: RequestContext, db: Database) -> None:
    preview = dry_runs.preview(ctx, TREE_BODY)

    group, value, later = preview.resources
    assert (value.nested, later.nested) == (None, None)  # 'later' needs a value at run time
    assert group.nested is not None and group.nested.stack_name == "web-group"
    members = group.nested.resources
    assert [(member.name, member.type) for member in members] == [
        ("0", "inner.yaml"), ("1", "inner.yaml")]
    assert [member.nested.stack_name for member in members if member.nested] == [
        "web-group-0", "web-group-1"]
    [leaf] = members[1].nested.resources if members[1].nested else []
    assert (leaf.name, leaf.type, leaf.properties["salt"]) == (
        "leaf", "OS::Heat::RandomString", MASK)  # the root's hidden value, masked
    assert stored(db) == (0, 0)


def test_a_preview_asks_the_plugins_about_each_nested_stack_where_it_sits(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    every, root = DryRunning("every", log), DryRunning("root", log)
    dry_runs = StackDryRuns(db, registry, StackLimits(), clock, irs, lifecycle=LifecycleService(
        LifecycleRegistry([loaded(every),
                           dataclasses.replace(loaded(root), tree_scope="root")])))

    preview = dry_runs.preview(ctx, TREE_BODY)

    assert [(r.get("path"), r.get("stack_name"), r["plugin"], r["verdict"])
            for r in preview.lifecycle] == [
        (None, None, "every", "allow"), (None, None, "root", "allow"),
        ("group", "web-group", "every", "allow"), ("group", "web-group", "root", "skipped"),
        ("group/0", "web-group-0", "every", "allow"),
        ("group/0", "web-group-0", "root", "skipped"),
        ("group/1", "web-group-1", "every", "allow"),
        ("group/1", "web-group-1", "root", "skipped")]
    assert [seen.stack.name for seen in root.seen] == ["web"]
    views = [seen.stack for seen in every.seen]
    assert [(view.name, view.owner_id, view.root_stack_id, view.nested_depth,
             view.parent_resource_name, view.path_in_stack(), sorted(view.changes))
            for view in views] == [
        ("web", None, "None", 0, None, [(None, "web")], ["group", "later", "value"]),
        ("web-group", "None", "None", 1, "group", [(None, "web"), ("group", "web-group")],
         ["0", "1"]),
        ("web-group-0", "None", "None", 2, "0",
         [(None, "web"), ("group", "web-group"), ("0", "web-group-0")], ["leaf"]),
        ("web-group-1", "None", "None", 2, "1",
         [(None, "web"), ("group", "web-group"), ("1", "web-group-1")], ["leaf"])]
    assert all(view.dry_run for view in views)
    assert views[1].template["resources"]["1"]["type"] == "inner.yaml"
    assert views[3].parameters == {"word": "hunter2"}  # a plain parameter down there


def test_a_preview_a_plugin_would_deny_in_a_nested_stack_is_refused_naming_its_path(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    plugin = DryRunning("quota", log)

    def pre(action: str | None) -> Warn | None:
        if plugin.seen[-1].stack.nested_depth == 1:
            raise Denied("no groups of hunter2")  # quoting the hidden value
        return None

    plugin.pre = pre
    dry_runs = with_plugins(db, registry, clock, irs, plugin)

    with pytest.raises(LifecycleDenied) as refused:
        dry_runs.preview(ctx, TREE_BODY)

    assert refused.value.message == (
        f"Lifecycle plugin quota denied CREATE of nested stack group: no groups of {MASK}")
    # The stacks the refused one would make are not asked about.
    assert [seen.stack.name for seen in plugin.seen] == ["web", "web-group"]
    assert stored(db) == (0, 0)


def _breaks(action: str | None) -> Warn | None:
    raise RuntimeError("rules file unreadable")


def _hangs(action: str | None) -> Warn | None:
    time.sleep(0.3)
    return None


@pytest.mark.parametrize(("pre", "on_timeout", "refusal"), [
    (_breaks, "fail", "Lifecycle plugin gate failed on CREATE: RuntimeError: rules file "
                      "unreadable"),
    (_hangs, "fail", "Lifecycle plugin gate timed out on CREATE: no answer within 0.05 s"),
    (_hangs, "warn", None),  # a timeout that only warns lets the request through
])
def test_a_plugin_that_breaks_or_times_out_refuses_as_the_operation_would_fail(
        pre: Any, on_timeout: str, refusal: str | None, db: Database,
        registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs,
        ctx: RequestContext) -> None:
    dry_runs = with_plugins(db, registry, clock, irs, DryRunning("gate", [], pre=pre),
                            timeout=0.05, on_timeout=on_timeout)
    body = {"template": TEMPLATE}

    if refusal is None:
        assert verdicts(dry_runs.validate(ctx, body).lifecycle) == [
            ("gate", "CREATE", "timeout", "no answer within 0.05 s", True)]
        return
    with pytest.raises(LifecycleDenied) as refused:
        dry_runs.validate(ctx, body)
    assert refused.value.message == refusal


# --- validate ------------------------------------------------------------------------------


def test_validate_lists_the_parameters_in_template_order_with_hidden_ones_masked(
        dry_runs: StackDryRuns, ctx: RequestContext) -> None:
    validation = dry_runs.validate(ctx, {
        "template": TEMPLATE, "parameters": {"password": "given"},
        "environment": {"parameter_defaults": {"password": "default", "size": 3}}})

    assert validation.description == "a web tier"
    assert [(p.name, p.type, p.default, p.hidden) for p in validation.parameters] == [
        ("password", "string", MASK, True), ("size", "number", 2, False),
        ("name", "string", None, False)]  # a required one need not be given
    assert validation.values == {"password": MASK}
    assert validation.parameter_groups == [{"label": "main", "parameters": ["name", "size"]}]
    assert validation.environment == {
        "parameters": {"password": MASK},
        "parameter_defaults": {"password": MASK, "size": 3},
        "resource_registry": {"resources": {}}, "encrypted_param_names": [],
        "event_sinks": []}
    assert validation.lifecycle == []


def test_validate_without_a_description_or_groups(dry_runs: StackDryRuns,
                                                  ctx: RequestContext) -> None:
    validation = dry_runs.validate(ctx, {
        "template": "heat_template_version: 2018-08-31\nresources:\n"
                    "  r: {type: OS::Heat::None}\n"})
    assert (validation.description, validation.parameters, validation.values,
            validation.parameter_groups) == ("No description", [], {}, None)


@pytest.mark.parametrize("bad", ["unknown type", "parameters of the wrong type",
                                 "out of range"])
def test_validate_refuses_what_a_create_refuses_in_the_same_words(
        bad: str, dry_runs: StackDryRuns, writes: StackWrites, ctx: RequestContext,
        db: Database) -> None:
    with pytest.raises(KilnError) as validated:
        dry_runs.validate(ctx, BAD[bad])
    with pytest.raises(KilnError) as created:
        writes.create(ctx, {"stack_name": "web", **BAD[bad]})

    assert (type(validated.value), validated.value.message) == (
        type(created.value), created.value.message)
    assert stored(db) == (0, 0)


def test_validate_asks_each_plugin_for_a_dry_run_of_a_create(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs,
        ctx: RequestContext) -> None:
    log: list[Entry] = []
    warned = with_plugins(db, registry, clock, irs, quoting(log, [], denies=False))
    denied = with_plugins(db, registry, clock, irs, quoting(log, []))

    validation = warned.validate(ctx, {"template": TEMPLATE})

    assert verdicts(validation.lifecycle) == [
        ("quota", "CREATE", "warn", f"password {MASK} is too weak", True)]
    with pytest.raises(LifecycleDenied) as refused:
        denied.validate(ctx, {"template": TEMPLATE})
    assert refused.value.message == (
        f"Lifecycle plugin quota denied CREATE: password {MASK} is too weak")


# --- update preview ---------------------------------------------------------------------------

BEFORE = """\
heat_template_version: 2018-08-31
parameters:
  region: {type: string, default: north, immutable: true}
  password: {type: string, hidden: true, default: hunter2}
resources:
  kept: {type: OS::Heat::None}
  changed:
    type: OS::Heat::TestResource
    properties: {value: one}
  swapped:
    type: OS::Heat::TestResource
    properties: {value: one, update_replace: true}
  dropped: {type: OS::Heat::None}
"""
# The update changes "changed" in place and "swapped" by replacement, and has "added"
# where "dropped" was.
AFTER = (BEFORE.replace("value: one", "value: two")
         .replace("dropped: {type: OS::Heat::None}", "added: {type: OS::Heat::None}"))


@pytest.fixture
def web(writes: StackWrites, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> str:
    """The id of "web", created from BEFORE."""
    stack_id = create(writes, ctx, "web", BEFORE)
    run(worker(db, registry, clock))
    return stack_id


def categories(preview: Any) -> dict[str, list[str]]:
    return {category: [item.name for item in items]
            for category, items in preview.changes.items() if items}


def test_an_update_preview_sorts_each_resource_by_what_the_update_would_do(
        web: str, dry_runs: StackDryRuns, ctx: RequestContext, db: Database) -> None:
    before = stored(db)

    preview = dry_runs.preview_update(ctx, "web", web, {"template": AFTER}, patch=False)

    assert (preview.stack_id, preview.stack_name, preview.tenant_id) == (
        web, "web", ctx.tenant_id)
    assert categories(preview) == {"added": ["added"], "deleted": ["dropped"],
                                   "replaced": ["swapped"], "unchanged": ["kept"],
                                   "updated": ["changed"]}
    assert preview.lifecycle == []
    assert stored(db) == before  # no operation was started


def test_an_update_preview_of_a_busy_stack_is_allowed(
        writes: StackWrites, dry_runs: StackDryRuns, ctx: RequestContext) -> None:
    stack_id = create(writes, ctx, "web", BEFORE)  # its create has not run

    preview = dry_runs.preview_update(ctx, "web", stack_id, {"template": AFTER},
                                      patch=False)

    assert categories(preview) == {"added": ["added", "changed", "kept", "swapped"]}


UPDATE_CALLS: dict[str, Callable[[StackDryRuns, RequestContext, str], Any]] = {
    "put": lambda s, ctx, stack_id: s.preview_update(ctx, "web", stack_id,
                                                     {"template": AFTER}, patch=False),
    "patch": lambda s, ctx, stack_id: s.preview_update(ctx, "web", stack_id, {},
                                                       patch=True),
}


@pytest.mark.parametrize("call", sorted(UPDATE_CALLS))
def test_an_update_preview_of_another_tenants_stack_is_not_found(
        call: str, web: str, dry_runs: StackDryRuns, other: RequestContext) -> None:
    with pytest.raises(EntityNotFound) as caught:
        UPDATE_CALLS[call](dry_runs, other, web)
    assert caught.value.message == "The Stack (web) could not be found."


def test_an_update_preview_of_a_deleted_stack_is_not_found(
        web: str, writes: StackWrites, dry_runs: StackDryRuns, ctx: RequestContext,
        db: Database, registry: ResourceTypeRegistry, clock: Clock) -> None:
    writes.delete(ctx, "web", web)
    run(worker(db, registry, clock))
    with pytest.raises(EntityNotFound):
        UPDATE_CALLS["put"](dry_runs, ctx, web)


def test_an_update_preview_refuses_a_change_of_an_immutable_parameter(
        web: str, dry_runs: StackDryRuns, ctx: RequestContext) -> None:
    with pytest.raises(ImmutableParameterModified) as caught:
        dry_runs.preview_update(ctx, "web", web, {"parameters": {"region": "south"}},
                                patch=True)
    assert caught.value.message == (
        "The following parameters are immutable and may not be updated: region")


def test_a_patch_preview_keeps_the_stored_template(
        web: str, dry_runs: StackDryRuns, ctx: RequestContext) -> None:
    preview = dry_runs.preview_update(ctx, "web", web, {"parameters": {"password": "x"}},
                                      patch=True)
    assert categories(preview) == {"unchanged": ["changed", "dropped", "kept", "swapped"]}


def test_an_update_preview_asks_each_plugin_for_a_dry_run_of_the_update(
        web: str, db: Database, registry: ResourceTypeRegistry, clock: Clock,
        irs: StoredIrs, ctx: RequestContext) -> None:
    log: list[Entry] = []
    dry: list[bool] = []
    warned = with_plugins(db, registry, clock, irs, quoting(log, dry, denies=False))
    denied = with_plugins(db, registry, clock, irs, quoting(log, dry))
    before = stored(db)

    preview = warned.preview_update(ctx, "web", web, {"template": AFTER}, patch=False)

    assert verdicts(preview.lifecycle) == [
        ("quota", "UPDATE", "warn", f"password {MASK} is too weak", True)]
    for call in sorted(UPDATE_CALLS):
        with pytest.raises(LifecycleDenied) as refused:
            UPDATE_CALLS[call](denied, ctx, web)
        assert refused.value.message == (
            f"Lifecycle plugin quota denied UPDATE: password {MASK} is too weak")
    assert dry == [True, True, True]
    assert stored(db) == before


def test_an_update_preview_of_a_nested_stack_shows_the_plugins_where_it_sits(
        writes: StackWrites, db: Database, registry: ResourceTypeRegistry, clock: Clock,
        irs: StoredIrs, ctx: RequestContext) -> None:
    parent_id = create(writes, ctx, "outer", """\
heat_template_version: 2018-08-31
resources:
  inner:
    type: OS::Heat::Stack
    properties:
      template: "heat_template_version: 2018-08-31\\nresources: {r: {type: OS::Heat::None}}"
""")
    loop = worker(db, registry, clock)
    for _ in range(20):
        loop.run_once()
        clock.advance(1)
    with db.read() as session:
        [child] = session.scalars(select(Stack).where(Stack.owner_id == parent_id))
        child_name, child_id = child.name, child.id
    plugin = DryRunning("watch", [])

    with_plugins(db, registry, clock, irs, plugin).preview_update(
        ctx, child_name, child_id, {}, patch=True)

    [seen] = plugin.seen
    assert (seen.stack.owner_id, seen.stack.root_stack_id, seen.stack.nested_depth,
            seen.stack.path) == (parent_id, parent_id, 1,
                                 ((None, "outer"), ("inner", child_name)))


GROWING = """\
heat_template_version: 2018-08-31
resources:
  group:
    type: OS::Heat::ResourceGroup
    properties:
      count: %d
      resource_def: {type: OS::Heat::None}
"""
# The update grows the group (an update of its stack) and adds a stack (a create).
GROWN = (GROWING % 2) + """\
  extra:
    type: OS::Heat::Stack
    properties:
      template: "heat_template_version: 2018-08-31\\nresources: {x: {type: OS::Heat::None}}"
"""


def test_an_update_preview_asks_about_each_nested_stack_it_would_create_or_update(
        writes: StackWrites, db: Database, registry: ResourceTypeRegistry, clock: Clock,
        irs: StoredIrs, ctx: RequestContext) -> None:
    web = create(writes, ctx, "web", GROWING % 1)
    loop = worker(db, registry, clock)
    for _ in range(20):
        loop.run_once()
        clock.advance(1)
    with db.read() as session:
        [group] = session.scalars(select(Stack).where(Stack.owner_id == web))
        group_id, group_name = group.id, group.name
    log: list[Entry] = []
    every, root = DryRunning("every", log), DryRunning("root", log)
    dry_runs = StackDryRuns(db, registry, StackLimits(), clock, irs, lifecycle=LifecycleService(
        LifecycleRegistry([loaded(every),
                           dataclasses.replace(loaded(root), tree_scope="root")])))
    before = stored(db)

    preview = dry_runs.preview_update(ctx, "web", web, {"template": GROWN}, patch=False)

    assert [(r.get("path"), r.get("stack_name"), r["action"], r["plugin"], r["verdict"])
            for r in preview.lifecycle] == [
        (None, None, "UPDATE", "every", "allow"), (None, None, "UPDATE", "root", "allow"),
        ("group", group_name, "UPDATE", "every", "allow"),
        ("group", group_name, "UPDATE", "root", "skipped"),
        ("extra", "web-extra", "CREATE", "every", "allow"),
        ("extra", "web-extra", "CREATE", "root", "skipped")]
    _, updated, created = (seen.stack for seen in every.seen)
    assert (updated.id, updated.owner_id, updated.root_stack_id, updated.nested_depth,
            updated.path) == (group_id, web, web, 1, ((None, "web"), ("group", group_name)))
    assert {name: str(change.action) for name, change in updated.changes.items()} == {
        "0": "NONE", "1": "CREATE"}
    assert sorted(every.seen[1].stack.resources) == ["0"]  # the stored side
    assert (created.owner_id, created.root_stack_id, created.nested_depth, created.path) == (
        web, web, 1, ((None, "web"), ("extra", "web-extra")))
    assert stored(db) == before

    def deny_nested(action: str | None) -> Warn | None:
        if every.seen[-1].stack.nested_depth:
            raise Denied("no growth down there")
        return None

    every.pre = deny_nested
    with pytest.raises(LifecycleDenied) as refused:
        dry_runs.preview_update(ctx, "web", web, {"template": GROWN}, patch=False)
    assert refused.value.message == (
        "Lifecycle plugin every denied UPDATE of nested stack group: no growth down there; "
        "Lifecycle plugin every denied CREATE of nested stack extra: no growth down there")


# --- planned changes in the plugins' views --------------------------------------------------


class Both(DryRunning):
    """Keeps the new side of an update too."""

    def do_pre_op(self, cnxt: RequestContext, stack: Any, current_stack: Any = None,
                  action: str | None = None) -> Warn | None:
        self.current = current_stack
        return super().do_pre_op(cnxt, stack, current_stack, action)


def test_a_preview_and_a_validate_show_the_plugins_every_resource_created(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs,
        ctx: RequestContext) -> None:
    plugin = DryRunning("watch", [])
    dry_runs = with_plugins(db, registry, clock, irs, plugin)
    body = {"stack_name": "web", "template": TEMPLATE, "parameters": {"name": "n"}}

    dry_runs.preview(ctx, body)
    dry_runs.validate(ctx, body)

    for seen in plugin.seen:
        changes = seen.stack.changes
        assert {name: change.action for name, change in changes.items()} == {
            "value": Change.CREATE, "word": Change.CREATE}
        # The hidden value is masked; what only the create will know is marked so.
        assert changes["word"].properties["salt"] == PropertyChange(None, MASK)
        assert changes["word"].properties["length"] == PropertyChange(None, 2)
        assert changes["value"].properties["value"] == PropertyChange(None, NOT_KNOWN)
    assert len(plugin.seen) == 2


@pytest.mark.parametrize("call", sorted(UPDATE_CALLS))
def test_an_update_preview_shows_the_plugins_the_changes_it_shows_the_tenant(
        call: str, web: str, db: Database, registry: ResourceTypeRegistry, clock: Clock,
        irs: StoredIrs, ctx: RequestContext) -> None:
    plugin = Both("watch", [])

    preview = UPDATE_CALLS[call](with_plugins(db, registry, clock, irs, plugin), ctx, web)

    [seen] = plugin.seen
    changes = seen.stack.changes
    assert plugin.current.changes == changes  # both sides of the update carry them
    assert {item.name: category for category, items in preview.changes.items()
            for item in items} == {name: update_preview.CATEGORY[change.action]
                                   for name, change in changes.items()}
    if call == "put":
        assert {name: change.action for name, change in changes.items()} == {
            "added": Change.CREATE, "changed": Change.UPDATE, "dropped": Change.DELETE,
            "kept": Change.NONE, "swapped": Change.REPLACE}
        assert changes["changed"].properties == {"value": PropertyChange("one", "two")}
        assert changes["swapped"].properties == {"value": PropertyChange("one", "two")}
        assert changes["kept"].properties == {}
    else:
        assert {change.action for change in changes.values()} == {Change.NONE}
