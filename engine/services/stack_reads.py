"""Stack reads: lookups, one stack, the list, and a stack's template (as stored, and as
text with its lines), environment, files and outputs. Hidden parameter values are masked
in everything shown: a hidden parameter's template default too, where Heat shows the
template as stored (specs/api-reads.rst). Outputs are resolved on each read that shows
their values, from the stored resources (specs/live-outputs.rst)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
from collections.abc import Mapping
from typing import Any, NamedTuple

from engine.budget import MAX_NESTED_DEPTH
from engine.clock import Clock
from engine.context import RequestContext
from engine.db import resource_rows, stack_list, stack_rows
from engine.db.resource_rows import RowText
from engine.db.session import Database, DbLookups
from engine.db.stack_list import ListedStack
from engine.errors import EntityNotFound, OutputNotFound
from engine.ir.model import ResolvedStack
from engine.ir.stored import StoredIrs
from engine.resources.outputs import OutputCache, StackOutput, resolve_outputs
from engine.resources.registry import ResourceTypeRegistry
from engine.services import listing
from engine.services.records import StackRecord, stack_record
from engine.services.stack_lookup import named_stack, shown_stack, stack_by_name_or_id
from engine.template.environment import Environment
from engine.template.rendering import RenderedTemplate, Renderings
from engine.template.stored_parameters import masked_environment, masked_template


@dataclasses.dataclass(frozen=True)
class StackQuery:
    filters: Mapping[str, list[str]] = dataclasses.field(default_factory=dict)
    show_deleted: bool = False
    limit: int | None = None
    marker: str | None = None
    sort_keys: tuple[str, ...] = ()
    sort_dir: str | None = None  # None: newest first, or ascending by known sort keys
    all_tenants: bool = False
    tags: tuple[str, ...] = ()  # has every one
    tags_any: tuple[str, ...] = ()  # has at least one
    not_tags: tuple[str, ...] = ()  # lacks at least one
    not_tags_any: tuple[str, ...] = ()  # has none
    show_nested: bool = False  # nested stacks too (they are left out, as in Heat)
    with_count: bool = False  # count every match too


@dataclasses.dataclass(frozen=True)
class StackPaging:
    """How many stacks one page of the list holds: ``default`` when the request gives no
    ``limit``, never more than ``maximum`` ([api] default_stacks_per_page and
    max_stacks_per_page)."""

    default: int = 1000
    maximum: int = 1000

    def size(self, limit: int | None) -> int:
        return min(self.maximum, self.default if limit is None else limit)


@dataclasses.dataclass(frozen=True)
class StackPage:
    stacks: list[StackRecord]
    count: int | None  # every match, when the query asked (with_count)
    full: bool  # as many as a page holds: another may follow after the last


class StackReads:
    def __init__(self, db: Database, irs: StoredIrs, registry: ResourceTypeRegistry,
                 clock: Clock, paging: StackPaging = StackPaging()) -> None:
        self._db = db
        self._irs = irs
        self._registry = registry
        self._clock = clock
        self._paging = paging
        self._renderings = Renderings()
        self._outputs = OutputCache()

    def lookup(self, ctx: RequestContext, name_or_id: str) -> tuple[str, str]:
        """(name, id) of a stack named by id (deleted ones too) or by live name: those
        two columns alone, for the redirect every Heat client follows to the stack's own
        URL."""
        with self._db.lookups() as reads:
            stack = stack_by_name_or_id(reads, ctx, name_or_id)
        return stack.name, stack.id

    def get(self, ctx: RequestContext, name: str, stack_id: str, *,
            with_outputs: bool = True) -> StackRecord:
        """The stack, its parameters masked; its outputs resolved now unless not
        ``with_outputs``, or the stack is deleted (the record's are then None). What it
        reads is what it shows, in one statement with no transaction around it
        (``Database.lookups``): the columns, and the definition as text, by whose digest
        the stack's IR (its parameters' schemas) is found without decoding the template
        once it was built; then, for the outputs, the rows they read."""
        read = None
        with self._db.lookups() as reads:
            shown = shown_stack(reads, ctx, name, stack_id)
            ir = self._irs.if_valid_stored(shown.definition)
            if with_outputs and not shown.stack.deleted_at:
                # On the same connection: checking one out costs as much as the read.
                read = self._read_outputs(reads, shown.stack, ir)
        outputs = None if read is None else self._resolved(read)
        return stack_record(ir, shown.stack, outputs=outputs)

    def list_stacks(self, ctx: RequestContext, query: StackQuery) -> StackPage:
        """One page of the tenant's stacks (every tenant's with ``all_tenants``): the
        query's ``limit`` of them, or the default page without one, never more than the
        most a page holds (Heat's clients ask for the rest after the last, by
        ``marker``, when they asked for more). Filters follow Heat's names; unknown
        ones are ignored."""
        tags = stack_list.TagFilter(all=query.tags, any=query.tags_any, not_all=query.not_tags,
                                    not_any=query.not_tags_any)
        size = self._paging.size(query.limit)
        with self._db.read() as session:
            rows, count = stack_list.list_stacks(
                session, None if query.all_tenants else ctx.tenant_id,
                filters=listing.stack_filters(query.filters), show_deleted=query.show_deleted,
                limit=size, marker=query.marker, sort_keys=query.sort_keys,
                sort_dir=query.sort_dir, tags=tags, show_nested=query.show_nested,
                count=query.with_count)
            records = [stack_record(None, row) for row in rows]
        return StackPage(records, count, full=bool(records) and len(records) == size)

    def get_template(self, ctx: RequestContext, name: str, stack_id: str) -> Any:
        """The stored template, hidden parameters' defaults masked."""
        with self._db.read() as session:
            template = named_stack(session, ctx, name, stack_id).template
        return masked_template(template)

    def get_source(self, ctx: RequestContext, name: str, stack_id: str) -> RenderedTemplate:
        """The stored template as YAML text with the lines of its resources, parameters
        and outputs (Kiln's rendering: the tenant's own text is not kept), hidden
        parameters' defaults masked."""
        with self._db.read() as session:
            template = named_stack(session, ctx, name, stack_id).template
        # NOTE: rendered outside the transaction: a large template takes a while.
        return self.rendered(template)

    def rendered(self, template: Any) -> RenderedTemplate:
        """A stored template's rendering (``get_source``), rendered once while this
        process has it cached: the console's graph asks for its lines on every poll."""
        return self._renderings.render(template)

    def get_environment(self, ctx: RequestContext, name: str, stack_id: str
                        ) -> dict[str, Any]:
        """The stack's environment as Heat shows it: every section, the parameters the
        user gave, and hidden values masked."""
        with self._db.read() as session:
            stack = named_stack(session, ctx, name, stack_id)
        shown = Environment.from_dict(stack.environment).as_dict()
        shown["parameters"] = dict(stack.parameters or {})
        return masked_environment(stack.template, shown)

    def get_files(self, ctx: RequestContext, name: str, stack_id: str) -> dict[str, Any]:
        with self._db.read() as session:
            return dict(named_stack(session, ctx, name, stack_id).files or {})

    def list_outputs(self, ctx: RequestContext, name: str, stack_id: str
                     ) -> list[dict[str, str]]:
        """Each output's key and description, none resolved (Heat's ``list_outputs``);
        a deleted stack is not found, as in Heat."""
        with self._db.lookups() as reads:
            stack, ir = self._live_stack(reads, ctx, name, stack_id)
            if ir is None:
                return [{"output_key": o["output_key"], "description": o["description"]}
                        for o in stack_rows.stored_outputs(reads, stack.id)]
        return [{"output_key": key, "description": output.description}
                for key, output in ir.outputs.items()]

    def get_output(self, ctx: RequestContext, name: str, stack_id: str, key: str
                   ) -> StackOutput:
        """One output resolved now, alone (Heat's ``show_output``)."""
        with self._db.lookups() as reads:
            stack, ir = self._live_stack(reads, ctx, name, stack_id)
            if ir is not None and key not in ir.outputs:
                raise OutputNotFound(key=key)
            read = self._read_outputs(reads, stack, ir, key)
        for output in self._resolved(read):
            if output["output_key"] == key:
                return output
        raise OutputNotFound(key=key)

    def _live_stack(self, reads: DbLookups, ctx: RequestContext, name: str, stack_id: str
                    ) -> tuple[ListedStack, ResolvedStack | None]:
        shown = shown_stack(reads, ctx, name, stack_id)
        if shown.stack.deleted_at is not None:
            raise EntityNotFound(entity="Stack", name=name)
        return shown.stack, self._irs.if_valid_stored(shown.definition)

    def _read_outputs(self, reads: DbLookups, stack: ListedStack, ir: ResolvedStack | None,
                      key: str | None = None) -> _OutputsRead:
        """What resolving the stack's outputs (``key``'s alone when given) reads: the
        rows they name, or, for a stack whose template no longer builds (a type
        uninstalled since), the outputs its last operation stored."""
        if ir is None:
            return _OutputsRead(stack, ir, key, [], stack_rows.stored_outputs(reads, stack.id))
        names = self._outputs.resources(ir, key) if ir.outputs else ()
        rows = resource_rows.rows_as_text(reads, stack.id, names) if names else []
        return _OutputsRead(stack, ir, key, rows, [])

    def _resolved(self, read: _OutputsRead, depth: int = 0) -> list[StackOutput]:
        """The outputs resolved from what was read, or found in the cache by a digest of
        it; the stored ones when the template no longer builds."""
        stack, ir, key, rows = read.stack, read.ir, read.key, read.rows
        if ir is None:
            return [_stored_output(o) for o in read.stored]
        if not ir.outputs:
            return []
        digest = hashlib.sha256(pickle.dumps((key, rows), protocol=5)).hexdigest()
        cached = self._outputs.get(stack.id, ir, digest)
        if cached is not None:
            return cached
        resolved = resolve_outputs(
            ir, stack, {row.name: _decoded(row) for row in rows}, self._registry,
            self._clock, keys=None if key is None else (key,),
            children=(lambda child: self._child_outputs(stack.tenant_id, child, depth + 1)))
        self._outputs.put(stack.id, ir, digest, resolved)
        return resolved.outputs

    def _child_outputs(self, tenant_id: str, stack_id: str, depth: int
                       ) -> dict[str, Any] | None:
        """A nested stack's outputs resolved now, for its parent's resource to read (as
        Heat's nested-stack resources read their child's show); None past the deepest
        nesting there can be, or when the child is gone."""
        if depth > MAX_NESTED_DEPTH:
            return None
        with self._db.lookups() as reads:
            shown = stack_rows.shown_stack_by_id(reads, tenant_id, stack_id)
            if shown is None or shown.stack.deleted_at is not None:
                return None
            read = self._read_outputs(reads, shown.stack,
                                      self._irs.if_valid_stored(shown.definition))
        return {o["output_key"]: o["output_value"] for o in self._resolved(read, depth)}


class _OutputsRead(NamedTuple):
    """What one read of a stack's outputs found (``StackReads._read_outputs``)."""

    stack: ListedStack
    ir: ResolvedStack | None
    key: str | None  # the one output asked for; None: all of them
    rows: list[RowText]
    stored: list[dict[str, Any]]  # the outputs last stored, when there is no IR


class _Row(NamedTuple):
    """A resource row decoded, as ``engine.resources.outputs.RowFacts``."""

    id: int
    name: str
    type: str
    physical_id: str | None
    generation: int
    properties: Any
    data: Mapping[str, Any] | None


def _decoded(row: RowText) -> _Row:
    return _Row(row.id, row.name, row.type, row.physical_id, row.generation,
                None if row.properties is None else json.loads(row.properties),
                None if row.data is None else json.loads(row.data))


def _stored_output(stored: Mapping[str, Any]) -> StackOutput:
    output: StackOutput = {"output_key": stored["output_key"],
                           "description": stored["description"],
                           "output_value": stored.get("output_value")}
    if "output_error" in stored:
        output["output_error"] = stored["output_error"]
    return output
