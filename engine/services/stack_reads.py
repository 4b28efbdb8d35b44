"""Stack reads: lookups, one stack, the list, and a stack's template (as stored, and as
text with its lines), environment, files and outputs. Hidden parameter values are masked
in everything shown: a hidden parameter's template default too, where Heat shows the
template as stored (specs/api-reads.rst). Outputs are resolved on each read that shows
their values, from the stored resources (specs/live-outputs.rst)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import pickle
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

from engine.budget import MAX_NESTED_DEPTH
from engine.clock import Clock
from engine.context import RequestContext
from engine.db import resource_rows, stack_list, stack_rows
from engine.db.resource_rows import RowText
from engine.db.session import Database, DbLookups
from engine.db.stack_list import ListedStack
from engine.db.stack_rows import ShownStack
from engine.errors import EntityNotFound, OutputNotFound
from engine.ir.model import ResolvedStack
from engine.ir.stored import StoredIrs
from engine.resources.outputs import (
    OutputCache,
    Resolved,
    StackOutput,
    nested_stack_id,
    resolve_outputs,
)
from engine.resources.registry import ResourceTypeRegistry
from engine.services import listing
from engine.services.records import StackRecord, stack_record
from engine.services.stack_lookup import named_stack, shown_stack, stack_by_name_or_id
from engine.template.environment import Environment
from engine.template.rendering import RenderedTemplate, Renderings
from engine.template.stored_parameters import masked_environment, masked_template

T = TypeVar("T")


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
        def read(reads: DbLookups, shown: ShownStack, ir: ResolvedStack | None
                 ) -> tuple[ShownStack, ResolvedStack | None, _OutputsRead | None]:
            if not with_outputs or shown.stack.deleted_at:
                return shown, ir, None
            return shown, ir, self._read_outputs(reads, shown.stack, ir)

        shown, ir, outputs = self._on_ir(
            lambda reads: shown_stack(reads, ctx, name, stack_id), read)
        return stack_record(ir, shown.stack, outputs=(
            None if outputs is None else self._resolved(self._with_children(outputs)).outputs))

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
        def read(reads: DbLookups, shown: ShownStack, ir: ResolvedStack | None
                 ) -> list[dict[str, str]]:
            if ir is not None:
                return [{"output_key": key, "description": output.description}
                        for key, output in ir.outputs.items()]
            return [{"output_key": o["output_key"], "description": o["description"]}
                    for o in stack_rows.stored_outputs(reads, shown.stack.id)]

        return self._on_ir(lambda reads: self._live_stack(reads, ctx, name, stack_id), read)

    def get_output(self, ctx: RequestContext, name: str, stack_id: str, key: str
                   ) -> StackOutput:
        """One output resolved now, alone (Heat's ``show_output``)."""
        def read(reads: DbLookups, shown: ShownStack, ir: ResolvedStack | None
                 ) -> _OutputsRead:
            if ir is not None and key not in ir.outputs:
                raise OutputNotFound(key=key)
            return self._read_outputs(reads, shown.stack, ir, key)

        outputs = self._on_ir(lambda reads: self._live_stack(reads, ctx, name, stack_id), read)
        for output in self._resolved(self._with_children(outputs)).outputs:
            if output["output_key"] == key:
                return output
        raise OutputNotFound(key=key)

    def _live_stack(self, reads: DbLookups, ctx: RequestContext, name: str, stack_id: str
                    ) -> ShownStack:
        shown = shown_stack(reads, ctx, name, stack_id)
        if shown.stack.deleted_at is not None:
            raise EntityNotFound(entity="Stack", name=name)
        return shown

    def _on_ir(self, find: Callable[[DbLookups], ShownStack],
               then: Callable[[DbLookups, ShownStack, ResolvedStack | None], T]) -> T:
        """``then`` of the stack ``find`` reads and its IR, on the connection it was read
        on (checking one out costs as much as a read) when the IR was built already; else
        the IR is built with no pooled connection held (a large template takes a while)
        and ``then`` runs on another."""
        with self._db.lookups() as reads:
            shown = find(reads)
            ir = self._irs.built_stored(shown.definition)
            if ir is not None:
                return then(reads, shown, ir)
        ir = self._irs.if_valid_stored(shown.definition)
        with self._db.lookups() as reads:
            return then(reads, shown, ir)

    def _read_outputs(self, reads: DbLookups, stack: ListedStack, ir: ResolvedStack | None,
                      key: str | None = None, depth: int = 0) -> _OutputsRead:
        """What resolving the stack's outputs (``key``'s alone when given) reads: the
        rows they name, or, for a stack whose template no longer builds (a type
        uninstalled since), the outputs its last operation stored."""
        if ir is None:
            return _OutputsRead(stack, ir, key, [], stack_rows.stored_outputs(reads, stack.id),
                                depth)
        names = self._outputs.resources(ir, key) if ir.outputs else ()
        rows = resource_rows.rows_as_text(reads, stack.id, names) if names else []
        return _OutputsRead(stack, ir, key, rows, [], depth)

    def _with_children(self, root: _OutputsRead) -> _OutputsRead:
        """``root`` with the nested stacks its rows are read too, and theirs, down to
        ``MAX_NESTED_DEPTH`` levels (as Heat's nested-stack resources read their child's
        show): a level's on one pooled connection, an IR not built yet built with none
        held and its rows read on another."""
        level = [root]
        while level:
            wanted = [(read, child) for read in level if read.depth < MAX_NESTED_DEPTH
                      for child in read.nested_ids(self._registry)]
            level, cold = [], []
            if not wanted:
                break
            with self._db.lookups() as reads:
                for parent, child_id in wanted:
                    shown = stack_rows.shown_stack_by_id(reads, parent.stack.tenant_id,
                                                         child_id)
                    if shown is None or shown.stack.deleted_at is not None:
                        parent.children[child_id] = None  # gone: its resource's copy
                        continue
                    ir = self._irs.built_stored(shown.definition)
                    if ir is None:
                        cold.append((parent, child_id, shown))
                        continue
                    child = self._read_outputs(reads, shown.stack, ir, depth=parent.depth + 1)
                    parent.children[child_id] = child
                    level.append(child)
            if cold:
                built = [self._irs.if_valid_stored(shown.definition) for _, _, shown in cold]
                with self._db.lookups() as reads:
                    for (parent, child_id, shown), ir in zip(cold, built, strict=True):
                        child = self._read_outputs(reads, shown.stack, ir,
                                                   depth=parent.depth + 1)
                        parent.children[child_id] = child
                        level.append(child)
        return root

    def _resolved(self, read: _OutputsRead) -> Resolved:
        """The outputs resolved from what was read, or found in the cache by its digest;
        the stored ones when the template no longer builds."""
        stack, ir = read.stack, read.ir
        if ir is None:
            return Resolved([_stored_output(o) for o in read.stored], volatile=False)
        if not ir.outputs:
            return Resolved([], volatile=False)
        cached = self._outputs.get(stack.id, ir, read.digest)
        if cached is not None:
            return Resolved(cached, volatile=False)
        resolved = resolve_outputs(
            ir, stack, {row.name: _decoded(row) for row in read.rows}, self._registry,
            self._clock, keys=None if read.key is None else (read.key,),
            children=lambda child_id: self._child(read, child_id))
        self._outputs.put(stack.id, ir, read.digest, resolved)
        return resolved

    def _child(self, read: _OutputsRead, child_id: str) -> Resolved | None:
        """A nested stack's outputs, for its parent's resource to read; None when it is
        gone or past the deepest nesting there can be (the resource keeps its copy)."""
        child = read.children.get(child_id)
        return None if child is None else self._resolved(child)


@dataclasses.dataclass(eq=False)
class _OutputsRead:
    """What one read of a stack's outputs found (``StackReads._read_outputs``), and of
    the nested stacks they read (``StackReads._with_children``)."""

    stack: ListedStack
    ir: ResolvedStack | None
    key: str | None  # the one output asked for; None: all of them
    rows: list[RowText]
    stored: list[dict[str, Any]]  # the outputs last stored, when there is no IR
    depth: int  # 0 for the stack shown, 1 for its nested stacks, and so on
    #: The nested stacks the rows are, by id, as read (None: gone); one not read (past
    #: the depth) is absent.
    children: dict[str, _OutputsRead | None] = dataclasses.field(default_factory=dict)

    def nested_ids(self, registry: ResourceTypeRegistry) -> list[str]:
        found = (nested_stack_id(row.type, row.physical_id, registry) for row in self.rows)
        return [child for child in found if child is not None]

    @functools.cached_property
    def digest(self) -> str:
        """What the outputs are resolved from, by which the cache finds them: the key
        asked for, the rows, and the nested stacks' own digests (their rows are stored
        elsewhere). Computed once the children were read."""
        children = sorted((child_id, None if child is None else child.digest)
                          for child_id, child in self.children.items())
        return hashlib.sha256(pickle.dumps((self.key, self.rows, self.stored, children),
                                           protocol=5)).hexdigest()


class _Row(NamedTuple):
    """A resource row decoded, as ``engine.resources.outputs.OutputRow``."""

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
