"""engine.services.stack_reads: the tenant's stacks found by name, id or both (another
tenant's are not found), a stack and its template, environment, files and outputs with
hidden values masked, and the list's filters, pages and tenants, on a migrated SQLite
file with the stacks stored by StackWrites and run by a worker."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, event, select
from sqlalchemy.pool import Pool

from engine import budget
from engine.context import ADMIN_ROLE, RequestContext
from engine.db import stack_rows
from engine.db.models import Resource, Stack
from engine.db.session import Database
from engine.errors import DatabaseUnavailable, EntityNotFound, OutputNotFound
from engine.ir.stored import StoredIrs
from engine.resources.outputs import resolve_outputs
from engine.resources.registry import ResourceTypeRegistry
from engine.services import stack_reads
from engine.services.stack_reads import StackPaging, StackQuery, StackReads
from engine.services.stack_writes import StackWrites
from engine.services.tenants import TenantService
from engine.template.parameters import MASK
from tests.unit.conftest import Clock
from tests.unit.worker.running import run, worker

PLAIN = "heat_template_version: 2018-08-31\nresources:\n  r: {type: OS::Heat::None}\n"

TYPED = """\
heat_template_version: 2018-08-31
parameters:
  password: {type: string, hidden: true}
  count: {type: number, default: 3}
  names: {type: comma_delimited_list, default: [a, b]}
  flag: {type: boolean, default: true}
  data: {type: json, default: {k: 1}}
resources:
  v:
    type: OS::Heat::Value
    properties: {value: {list_join: [':', [secret, {get_param: password}]]}}
outputs:
  joined: {description: the value, value: {get_attr: [v, value]}}
  count: {value: {get_param: count}}
"""


@pytest.fixture
def reads(db: Database, irs: StoredIrs, registry: ResourceTypeRegistry, clock: Clock
          ) -> StackReads:
    return StackReads(db, irs, registry, clock)


@pytest.fixture
def other(db: Database, clock: Clock) -> RequestContext:
    """A second tenant, who must not see the first one's stacks."""
    tenant = TenantService(db, clock).create_tenant("other")
    return RequestContext(tenant_id=tenant.id, token_tenant_id=tenant.id, role=ADMIN_ROLE)


def create(writes: StackWrites, ctx: RequestContext, name: str, template: str = PLAIN,
           **body: Any) -> str:
    return writes.create(ctx, {"stack_name": name, "template": template, **body}).id


def run_nested(db: Database, registry: ResourceTypeRegistry, clock: Clock) -> None:
    """Run a worker until nested stacks have settled: a parent resource looks at its
    child stack once a second, so the clock moves a second a tick."""
    loop = worker(db, registry, clock)
    for _ in range(20):
        loop.run_once()
        clock.advance(1)


# --- finding the stack ----------------------------------------------------------------------


def test_lookup_finds_a_live_stack_by_name_and_any_stack_by_id(
        writes: StackWrites, reads: StackReads, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    stack_id = create(writes, ctx, "web")
    run(worker(db, registry, clock))
    assert reads.lookup(ctx, "web") == reads.lookup(ctx, stack_id) == ("web", stack_id)

    writes.delete(ctx, "web", stack_id)
    run(worker(db, registry, clock))

    assert reads.lookup(ctx, stack_id) == ("web", stack_id)  # deleted: by id only
    with pytest.raises(EntityNotFound) as caught:
        reads.lookup(ctx, "web")
    assert caught.value.message == "The Stack (web) could not be found."


READS: dict[str, Callable[[StackReads, RequestContext, str, str], Any]] = {
    "get": lambda reads, ctx, name, stack_id: reads.get(ctx, name, stack_id),
    "template": lambda reads, ctx, name, stack_id: reads.get_template(ctx, name, stack_id),
    "environment": lambda reads, ctx, name, stack_id: reads.get_environment(ctx, name,
                                                                            stack_id),
    "files": lambda reads, ctx, name, stack_id: reads.get_files(ctx, name, stack_id),
    "outputs": lambda reads, ctx, name, stack_id: reads.list_outputs(ctx, name, stack_id),
    "output": lambda reads, ctx, name, stack_id: reads.get_output(ctx, name, stack_id, "o"),
}


@pytest.mark.parametrize("read", sorted(READS))
def test_another_tenants_stack_is_not_found(
        read: str, writes: StackWrites, reads: StackReads, ctx: RequestContext,
        other: RequestContext) -> None:
    stack_id = create(writes, ctx, "web")

    with pytest.raises(EntityNotFound) as caught:
        READS[read](reads, other, "web", stack_id)

    assert caught.value.message == "The Stack (web) could not be found."


@pytest.mark.parametrize("name_or_id", ["web", "id"])
def test_another_tenants_stack_is_not_looked_up(
        name_or_id: str, writes: StackWrites, reads: StackReads, ctx: RequestContext,
        other: RequestContext) -> None:
    stack_id = create(writes, ctx, "web")
    with pytest.raises(EntityNotFound):
        reads.lookup(other, stack_id if name_or_id == "id" else "web")


@pytest.mark.parametrize("read", sorted(READS))
def test_a_name_that_is_not_the_stacks_is_not_found(
        read: str, writes: StackWrites, reads: StackReads, ctx: RequestContext) -> None:
    stack_id = create(writes, ctx, "web")
    create(writes, ctx, "db")

    with pytest.raises(EntityNotFound) as caught:
        READS[read](reads, ctx, "db", stack_id)

    assert caught.value.message == "The Stack (db) could not be found."


def test_an_id_that_is_no_uuid_is_not_found(
        writes: StackWrites, reads: StackReads, ctx: RequestContext) -> None:
    create(writes, ctx, "web")
    with pytest.raises(EntityNotFound) as caught:
        reads.get(ctx, "web", "web")
    assert caught.value.message == "The Stack (web) could not be found."


# --- one stack ------------------------------------------------------------------------------


def test_a_stack_shows_its_parameters_as_text_with_hidden_ones_masked(
        writes: StackWrites, reads: StackReads, ctx: RequestContext) -> None:
    stack_id = create(writes, ctx, "web", TYPED, parameters={"password": "hunter2"},
                      tags=["x", "y"], timeout_mins=5)

    record = reads.get(ctx, "web", stack_id)

    assert {k: v for k, v in record.parameters.items() if not k.startswith("OS::")} == {
        "password": MASK, "count": "3", "names": "a,b", "flag": "true", "data": '{"k": 1}'}
    assert (record.parameters["OS::stack_name"], record.parameters["OS::stack_id"],
            record.parameters["OS::project_id"]) == ("web", stack_id, ctx.tenant_id)
    assert (record.id, record.name, record.tenant_id) == (stack_id, "web", ctx.tenant_id)
    assert (record.action, record.status) == ("CREATE", "IN_PROGRESS")
    assert (record.tags, record.timeout_mins, record.description) == (
        ["x", "y"], 5, "No description")
    # Resolved while the create runs, as Heat does: a resource not made yet reads null.
    assert record.outputs == [
        {"output_key": "joined", "description": "the value", "output_value": None},
        {"output_key": "count", "description": "No description given", "output_value": 3}]
    assert record.deleted_at is None and record.parent is None


def test_the_template_and_files_are_as_stored(
        writes: StackWrites, reads: StackReads, ctx: RequestContext) -> None:
    files = {"child.yaml": PLAIN}
    stack_id = create(writes, ctx, "web", files=files)

    assert reads.get_template(ctx, "web", stack_id) == {
        "heat_template_version": "2018-08-31",
        "resources": {"r": {"type": "OS::Heat::None"}}}
    shown = reads.get_files(ctx, "web", stack_id)
    assert shown == files
    shown["child.yaml"] = "changed"  # a copy: the next read is not changed
    assert reads.get_files(ctx, "web", stack_id) == files


@pytest.mark.parametrize("version, key, default", [
    ("heat_template_version: 2018-08-31", "parameters", "default"),
    ("AWSTemplateFormatVersion: '2010-09-09'", "Parameters", "Default"),
], ids=["hot", "cfn"])
def test_the_template_and_its_source_mask_a_hidden_default_a_given_value_overrides(
        writes: StackWrites, reads: StackReads, ctx: RequestContext, version: str,
        key: str, default: str) -> None:
    # Heat shows the template as stored; Kiln masks the default by name, as every view
    # of a stored template does (engine.template.stored_parameters.masked_template).
    cfn = key == "Parameters"
    hidden = "NoEcho: 'true'" if cfn else "hidden: true"
    template = (f"{version}\n{key}:\n"
                f"  pw: {{{'Type: String' if cfn else 'type: string'}, {hidden}, "
                f"{default}: default-secret}}\n"
                f"{'Resources' if cfn else 'resources'}: "
                f"{{r: {{{'Type' if cfn else 'type'}: 'OS::Heat::None'}}}}\n")
    stack_id = create(writes, ctx, "web", template, parameters={"pw": "given-secret"})

    shown = reads.get_template(ctx, "web", stack_id)
    source = reads.get_source(ctx, "web", stack_id)

    assert shown[key]["pw"][default] == MASK
    assert "default-secret" not in repr(shown) and "default-secret" not in source.text
    assert "given-secret" not in repr(shown) and "given-secret" not in source.text


def test_a_source_is_rendered_once_while_its_template_is_unchanged(
        writes: StackWrites, reads: StackReads, ctx: RequestContext) -> None:
    first = create(writes, ctx, "web", TYPED, parameters={"password": "hunter2"})
    same = create(writes, ctx, "twin", TYPED, parameters={"password": "other"})
    changed = create(writes, ctx, "plain")

    rendered = reads.get_source(ctx, "web", first)

    # Kept by the stored template's digest: a poll of an unchanged stack, or a stack
    # with the same template, renders nothing.
    assert reads.get_source(ctx, "web", first) is rendered
    assert reads.get_source(ctx, "twin", same) is rendered
    assert reads.get_source(ctx, "plain", changed).text != rendered.text


def test_the_environment_has_every_section_with_hidden_values_masked(
        writes: StackWrites, reads: StackReads, ctx: RequestContext) -> None:
    stack_id = create(writes, ctx, "web", TYPED, parameters={"password": "hunter2"},
                      environment={"parameters": {"count": 4},
                                   "parameter_defaults": {"password": "default-secret",
                                                          "names": "c,d"}})

    environment = reads.get_environment(ctx, "web", stack_id)

    assert environment == {
        "parameters": {"password": MASK, "count": 4},
        "parameter_defaults": {"password": MASK, "names": "c,d"},
        "resource_registry": {"resources": {}},
        "encrypted_param_names": [],
        "event_sinks": []}


@pytest.mark.parametrize("version", ["AWSTemplateFormatVersion: '2010-09-09'",
                                     "HeatTemplateFormatVersion: '2012-12-12'"])
def test_a_cfn_stacks_environment_masks_its_noecho_values(
        writes: StackWrites, reads: StackReads, ctx: RequestContext, version: str) -> None:
    template = (f"{version}\n"
                "Parameters:\n"
                "  Password: {Type: String, NoEcho: 'true'}\n"
                "  Count: {Type: Number, Default: 3}\n"
                "Resources: {r: {Type: 'OS::Heat::None'}}\n")
    stack_id = create(writes, ctx, "cfn", template, parameters={"Password": "hunter2"},
                      environment={"parameters": {"Count": 4},
                                   "parameter_defaults": {"Password": "default-secret"}})

    environment = reads.get_environment(ctx, "cfn", stack_id)

    assert environment["parameters"] == {"Password": MASK, "Count": 4}
    assert environment["parameter_defaults"] == {"Password": MASK}
    assert reads.get(ctx, "cfn", stack_id).parameters["Password"] == MASK


def test_outputs_once_the_create_finished_and_one_by_its_key(
        writes: StackWrites, reads: StackReads, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    stack_id = create(writes, ctx, "web", TYPED, parameters={"password": "hunter2"})
    run(worker(db, registry, clock))

    outputs = reads.list_outputs(ctx, "web", stack_id)

    assert sorted(o["output_key"] for o in outputs) == ["count", "joined"]
    assert {tuple(o) for o in outputs} == {("output_key", "description")}  # none resolved
    assert reads.get_output(ctx, "web", stack_id, "joined") == {
        "output_key": "joined", "description": "the value", "output_value": f"secret:{MASK}"}
    with pytest.raises(OutputNotFound) as caught:
        reads.get_output(ctx, "web", stack_id, "nope")
    assert caught.value.message == "Specified output key nope not found."


def test_a_stack_read_without_its_outputs_has_none_and_the_same_parameters(
        writes: StackWrites, reads: StackReads, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    stack_id = create(writes, ctx, "web", TYPED, parameters={"password": "hunter2"})
    run(worker(db, registry, clock))

    full = reads.get(ctx, "web", stack_id)
    bare = reads.get(ctx, "web", stack_id, with_outputs=False)

    assert full.outputs and bare.outputs is None  # resolve_outputs=false: not read
    assert bare.parameters == full.parameters
    assert bare.parameters["password"] == MASK
    assert dataclasses.replace(bare, outputs=full.outputs) == full


def test_a_deleted_stack_is_read_by_its_id_without_outputs(
        writes: StackWrites, reads: StackReads, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    stack_id = create(writes, ctx, "web", TYPED, parameters={"password": "hunter2"})
    run(worker(db, registry, clock))
    writes.delete(ctx, "web", stack_id)
    run(worker(db, registry, clock))

    record = reads.get(ctx, "web", stack_id)

    assert (record.action, record.status, record.outputs) == ("DELETE", "COMPLETE", None)
    assert record.deleted_at == clock()
    for outputs in (lambda: reads.list_outputs(ctx, "web", stack_id),
                    lambda: reads.get_output(ctx, "web", stack_id, "joined")):
        with pytest.raises(EntityNotFound) as caught:  # Heat's _get_stack: live ones only
            outputs()
        assert caught.value.message == "The Stack (web) could not be found."


# --- live outputs ---------------------------------------------------------------------------

LIVE = """\
heat_template_version: 2018-08-31
resources:
  slow: {type: OS::Heat::TestResource, properties: {value: ready, attr_wait_secs: 30}}
  word: {type: OS::Heat::Value, properties: {value: 'a,b'}}
outputs:
  later: {value: {get_attr: [slow, output]}}
  word: {value: {get_attr: [word, value]}}
  fifth: {value: {str_split: [',', {get_attr: [word, value]}, 5]}}
  replaced: {value: {str_replace: {template: W!, params: {W: {get_attr: [word, value]}}}}}
"""


def test_an_output_whose_attribute_is_known_later_shows_it_once_it_is(
        writes: StackWrites, reads: StackReads, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    stack_id = create(writes, ctx, "web", LIVE)
    run(worker(db, registry, clock))
    assert reads.get(ctx, "web", stack_id).status == "COMPLETE"

    def later() -> Any:
        return reads.get_output(ctx, "web", stack_id, "later")["output_value"]

    assert later() is None  # attr_wait_secs: not known yet when the create completed
    clock.advance(29)
    assert later() is None
    clock.advance(1)
    assert later() == "ready"
    shown = {o["output_key"]: o for o in reads.get(ctx, "web", stack_id).outputs or []}
    assert shown["later"]["output_value"] == "ready"
    # An output that cannot be resolved carries Heat's output_error; the stack stays fine.
    assert shown["fifth"] == reads.get_output(ctx, "web", stack_id, "fifth") == {
        "output_key": "fifth", "description": "No description given", "output_value": None,
        "output_error": 'outputs.fifth.value.str_split: Incorrect index to "str_split" '
                        "should be between 0 and 1"}


def test_outputs_are_kept_until_a_row_they_read_changes_in_any_process(
        writes: StackWrites, reads: StackReads, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """The cache is keyed on what the rows hold: a write by any process (another API
    worker's signal, an engine) shows on the next read, however soon; values that read
    the clock are resolved on every read."""
    stack_id = create(writes, ctx, "web", LIVE)
    run(worker(db, registry, clock))
    resolved: list[tuple[str, ...]] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        resolved.append(tuple(kwargs["keys"] or ()))
        return resolve_outputs(*args, **kwargs)

    monkeypatch.setattr(stack_reads, "resolve_outputs", counted)

    def shown(key: str) -> Any:
        return reads.get_output(ctx, "web", stack_id, key)["output_value"]

    assert [shown("word"), shown("word")] == ["a,b", "a,b"]
    assert resolved == [("word",)]  # the second from the cache
    with db.transaction() as session:
        row = session.scalars(select(Resource).where(Resource.stack_id == stack_id,
                                                     Resource.name == "word")).one()
        row.properties = {"value": "c,d"}
    assert shown("word") == "c,d"
    assert resolved == [("word",), ("word",)]

    clock.advance(30)
    assert [shown("later"), shown("later")] == ["ready", "ready"]
    assert resolved[2:] == [("later",), ("later",)]  # it read the clock: never kept


def test_a_stack_whose_template_no_longer_builds_shows_the_outputs_last_stored(
        writes: StackWrites, reads: StackReads, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs) -> None:
    stack_id = create(writes, ctx, "web", TYPED, parameters={"password": "hunter2"})
    run(worker(db, registry, clock))
    with db.transaction() as session:  # as if a type it uses were uninstalled since
        stack = session.get(Stack, stack_id)
        assert stack is not None
        stack.template = {**stack.template, "resources": {"v": {"type": "Gone::Type"}}}

    assert reads.get_output(ctx, "web", stack_id, "joined") == {
        "output_key": "joined", "description": "the value", "output_value": f"secret:{MASK}"}
    assert [o["output_key"] for o in reads.list_outputs(ctx, "web", stack_id)] == [
        "joined", "count"]


PARENT_OF_SLOW = """\
heat_template_version: 2018-08-31
resources:
  inner: {type: slow.yaml}
outputs:
  through: {value: {get_attr: [inner, later]}}
"""
SLOW_CHILD = """\
heat_template_version: 2018-08-31
resources:
  slow: {type: OS::Heat::TestResource, properties: {value: deep, attr_wait_secs: 100}}
outputs:
  later: {value: {get_attr: [slow, output]}}
"""


def test_a_parent_output_reads_its_nested_stacks_output_live(
        writes: StackWrites, reads: StackReads, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    """As Heat's nested-stack resources read their child's show: not the copy of the
    child's outputs its resource took when the child settled."""
    stack_id = create(writes, ctx, "web", PARENT_OF_SLOW, files={"slow.yaml": SLOW_CHILD})
    run_nested(db, registry, clock)
    assert reads.get(ctx, "web", stack_id).status == "COMPLETE"

    assert reads.get_output(ctx, "web", stack_id, "through")["output_value"] is None
    clock.advance(100)
    assert reads.get_output(ctx, "web", stack_id, "through")["output_value"] == "deep"
    with db.read() as session:  # what the parent's resource copied is still the old one
        row = session.scalars(select(Resource).where(Resource.stack_id == stack_id)).one()
        assert row.data["outputs"] == {"later": None}


GROUP = """\
heat_template_version: 2018-08-31
resources:
  group:
    type: OS::Heat::ResourceGroup
    properties:
      count: 3
      resource_def: {type: member.yaml, properties: {word: 'm%index%'}}
outputs:
  words: {value: {get_attr: [group, word]}}
"""
MEMBER = """\
heat_template_version: 2018-08-31
parameters:
  word: {type: string}
resources:
  v: {type: OS::Heat::Value, properties: {value: {get_param: word}}}
outputs:
  word: {value: {get_attr: [v, value]}}
"""


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The id of each stack whose outputs are resolved from here on."""
    resolved: list[str] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        resolved.append(args[1].id)
        return resolve_outputs(*args, **kwargs)

    monkeypatch.setattr(stack_reads, "resolve_outputs", counting)
    return resolved


@pytest.fixture
def statements() -> Iterator[list[str]]:
    """Each statement sent from here on, through any engine: its first table."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        table = re.search(r"\bFROM (\w+)", statement)
        seen.append(table.group(1) if table else statement.split()[0])

    event.listen(Engine, "before_cursor_execute", record)
    yield seen
    event.remove(Engine, "before_cursor_execute", record)


def test_a_parents_outputs_are_kept_until_a_nested_stacks_row_changes(
        writes: StackWrites, reads: StackReads, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock, counted: list[str],
        statements: list[str]) -> None:
    """The nested stacks' rows are read on every show and their digests key the
    parent's outputs: a second show evaluates nothing, at any level; a member's row
    changed (as by another process) shows at once."""
    stack_id = create(writes, ctx, "web", GROUP, files={"member.yaml": MEMBER})
    run_nested(db, registry, clock)

    def words() -> Any:
        return reads.get_output(ctx, "web", stack_id, "words")["output_value"]

    assert words() == ["m0", "m1", "m2"]
    assert len(counted) == 5  # the members, the group's stack, the stack shown
    statements.clear()
    assert words() == ["m0", "m1", "m2"]
    assert len(counted) == 5  # all from the cache
    # The stack, then its group's stack, then the three members: each its stack and
    # the rows its outputs read.
    assert statements == ["stacks", "resources"] * 5

    shown, group, member = counted[:3]  # each counted as its resolving starts
    assert shown == stack_id
    with db.transaction() as session:
        row = session.scalars(select(Resource).where(Resource.stack_id == member)).one()
        row.properties = {"value": "changed"}
    after = words()
    assert "changed" in after and len({"m0", "m1", "m2"} & set(after)) == 2
    assert counted[5:] == [stack_id, group, member]  # the other members from the cache


def test_an_output_past_the_evaluation_budget_is_kept_for_the_caches_age(
        writes: StackWrites, reads: StackReads, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock, counted: list[str]) -> None:
    """Not resolved again on every read: each would spend the whole budget."""
    stack_id = create(writes, ctx, "web", LIVE)
    run(worker(db, registry, clock))
    no_time = dataclasses.replace(budget.limits(), evaluation_timeout_seconds=0)

    for _ in range(2):
        with budget.evaluation(no_time):
            shown = reads.get_output(ctx, "web", stack_id, "replaced")
        assert "took too long" in shown["output_error"]
    assert counted == [stack_id]


def test_a_database_failure_reading_a_nested_stack_fails_the_show(
        writes: StackWrites, reads: StackReads, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """A 503 as for any read the database fails (specs/live-outputs.rst), not an
    ``output_error``."""
    stack_id = create(writes, ctx, "web", PARENT_OF_SLOW, files={"slow.yaml": SLOW_CHILD})
    run_nested(db, registry, clock)

    def unavailable(*_: Any) -> Any:
        raise DatabaseUnavailable(reason="server closed the connection unexpectedly")

    monkeypatch.setattr(stack_rows, "shown_stack_by_id", unavailable)
    for show in (lambda: reads.get(ctx, "web", stack_id),
                 lambda: reads.get_output(ctx, "web", stack_id, "through")):
        with pytest.raises(DatabaseUnavailable):
            show()


def test_an_ir_not_built_yet_is_built_with_no_pooled_connection_held(
        writes: StackWrites, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """A large template takes a while to build: no other request should wait for a
    connection meanwhile. Once built, a show reads the stack and its rows on one."""
    stack_id = create(writes, ctx, "web", GROUP, files={"member.yaml": MEMBER})
    run_nested(db, registry, clock)
    cold = StoredIrs(registry.get, registry.constraint)
    held: list[int] = []
    open_connections = [0]

    def checkout(*_: Any) -> None:
        open_connections[0] += 1

    def checkin(*_: Any) -> None:
        open_connections[0] -= 1

    built = cold._build

    def build(stack: Any) -> Any:
        held.append(open_connections[0])
        return built(stack)

    monkeypatch.setattr(cold, "_build", build)
    event.listen(Pool, "checkout", checkout)
    event.listen(Pool, "checkin", checkin)
    try:
        fresh = StackReads(db, cold, registry, clock)
        shown = fresh.get(ctx, "web", stack_id).outputs or []
        assert shown[0]["output_value"] == ["m0", "m1", "m2"]
        assert held == [0] * 5  # the stack's, the group's and the three members'
        assert fresh.list_outputs(ctx, "web", stack_id) == [
            {"output_key": "words", "description": "No description given"}]
    finally:
        event.remove(Pool, "checkout", checkout)
        event.remove(Pool, "checkin", checkin)
    assert len(held) == 5  # built once each


# --- the list -------------------------------------------------------------------------------


def names(reads: StackReads, ctx: RequestContext, **query: Any) -> tuple[list[str], int]:
    page = reads.list_stacks(ctx, StackQuery(with_count=True, **query))
    assert page.count is not None
    return [r.name for r in page.stacks], page.count


@pytest.fixture
def three(writes: StackWrites, ctx: RequestContext, clock: Clock) -> dict[str, str]:
    """Stacks a, b and c, made a second apart, b tagged."""
    made = {}
    for name in ("a", "b", "c"):
        made[name] = create(writes, ctx, name, tags=["blue"] if name == "b" else [])
        clock.advance(1)
    return made


def test_the_list_is_newest_first_and_counts_every_match(
        three: dict[str, str], reads: StackReads, ctx: RequestContext) -> None:
    assert names(reads, ctx) == (["c", "b", "a"], 3)
    assert names(reads, ctx, sort_keys=("stack_name",)) == (
        ["a", "b", "c"], 3)
    page = reads.list_stacks(ctx, StackQuery())
    assert {r.parameters == {} for r in page.stacks} == {True}  # no IR is built for a list
    assert {r.outputs for r in page.stacks} == {None}  # nor outputs read
    assert page.count is None  # not counted unless asked


def test_the_lists_filters_pass_through_with_heats_names(
        three: dict[str, str], reads: StackReads, ctx: RequestContext) -> None:
    assert names(reads, ctx, filters={"name": ["a"], "stack_name": ["b"]}) == (["b", "a"], 2)
    assert names(reads, ctx, filters={"status": ["CREATE_IN_PROGRESS"]}) == (
        ["c", "b", "a"], 3)
    assert names(reads, ctx, filters={"status": ["COMPLETE"]}) == ([], 0)
    assert names(reads, ctx, filters={"id": [three["c"]]}) == (["c"], 1)
    assert names(reads, ctx, filters={"no_such_filter": ["x"]}) == (["c", "b", "a"], 3)
    assert names(reads, ctx, tags=("blue",)) == (["b"], 1)
    assert names(reads, ctx, not_tags_any=("blue",)) == (["c", "a"], 2)


def test_the_list_pages_after_a_marker_and_still_counts_every_match(
        three: dict[str, str], reads: StackReads, ctx: RequestContext) -> None:
    assert names(reads, ctx, limit=2) == (["c", "b"], 3)
    assert names(reads, ctx, limit=2, marker=three["b"]) == (["a"], 3)


def test_a_page_holds_the_default_without_a_limit_and_never_more_than_the_most(
        three: dict[str, str], db: Database, irs: StoredIrs, ctx: RequestContext,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    paged = StackReads(db, irs, registry, clock, StackPaging(default=2, maximum=2))

    def page(**query: Any) -> tuple[list[str], bool]:
        found = paged.list_stacks(ctx, StackQuery(**query))
        return [r.name for r in found.stacks], found.full

    assert page() == (["c", "b"], True)  # the default page, and another may follow
    assert page(limit=1000) == (["c", "b"], True)  # a larger limit gets the most
    assert page(limit=1) == (["c"], True)
    assert page(marker=three["b"]) == (["a"], False)  # the last page
    assert page(limit=0) == ([], False)
    # Heat's clients ask for the rest after the last, as python-heatclient's
    # stacks.list(limit=...) does: every stack, once.
    seen: list[str] = []
    marker = None
    while True:
        found = paged.list_stacks(ctx, StackQuery(limit=1000, marker=marker))
        seen += [r.name for r in found.stacks]
        if not found.stacks:
            break
        marker = found.stacks[-1].id
    assert seen == ["c", "b", "a"]


def test_the_default_page_is_at_most_the_most_a_page_holds() -> None:
    assert StackPaging(default=5, maximum=3).size(None) == 3
    assert StackPaging(default=5, maximum=3).size(2) == 2
    assert StackPaging().size(None) == StackPaging().maximum


def test_the_list_shows_another_tenants_stacks_only_with_all_tenants(
        three: dict[str, str], writes: StackWrites, reads: StackReads, ctx: RequestContext,
        other: RequestContext) -> None:
    create(writes, other, "theirs")

    assert names(reads, other) == (["theirs"], 1)
    assert names(reads, ctx)[1] == 3
    assert names(reads, ctx, all_tenants=True) == (["theirs", "c", "b", "a"], 4)


def test_the_list_shows_deleted_stacks_only_when_asked(
        three: dict[str, str], writes: StackWrites, reads: StackReads, ctx: RequestContext,
        db: Database, registry: ResourceTypeRegistry, clock: Clock) -> None:
    run(worker(db, registry, clock))
    writes.delete(ctx, "b", three["b"])
    run(worker(db, registry, clock))

    assert names(reads, ctx) == (["c", "a"], 2)
    assert names(reads, ctx, show_deleted=True) == (["c", "b", "a"], 3)


def test_the_list_leaves_nested_stacks_out_unless_asked(
        writes: StackWrites, reads: StackReads, ctx: RequestContext, db: Database,
        registry: ResourceTypeRegistry, clock: Clock) -> None:
    parent_id = create(writes, ctx, "parent", (
        "heat_template_version: 2018-08-31\nresources:\n  child:\n    type: OS::Heat::Stack\n"
        "    properties: {template: {get_file: child.yaml}}\n"),
        files={"child.yaml": PLAIN})
    run_nested(db, registry, clock)

    assert names(reads, ctx) == (["parent"], 1)
    page = reads.list_stacks(ctx, StackQuery(show_nested=True, with_count=True))
    assert page.count == 2
    [parent, child] = sorted(page.stacks, key=lambda r: r.name != "parent")
    assert (parent.status, child.status) == ("COMPLETE", "COMPLETE")
    assert child.parent == parent_id
    assert child.name.startswith("parent-child-")
