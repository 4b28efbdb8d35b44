"""Stack reads: lookups, one stack, the list, and a stack's template (as stored, and as
text with its lines), environment, files and outputs. Hidden parameter values are masked
in everything shown: a hidden parameter's template default too, where Heat shows the
template as stored (specs/api-reads.rst)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from engine.context import RequestContext
from engine.db import stack_list
from engine.db.models import StackOutput
from engine.db.session import Database
from engine.errors import OutputNotFound
from engine.ir.stored import StoredIrs
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
    def __init__(self, db: Database, irs: StoredIrs, paging: StackPaging = StackPaging()
                 ) -> None:
        self._db = db
        self._irs = irs
        self._paging = paging
        self._renderings = Renderings()

    def lookup(self, ctx: RequestContext, name_or_id: str) -> tuple[str, str]:
        """(name, id) of a stack named by id (deleted ones too) or by live name: those
        two columns alone, for the redirect every Heat client follows to the stack's own
        URL."""
        with self._db.lookups() as reads:
            stack = stack_by_name_or_id(reads, ctx, name_or_id)
        return stack.name, stack.id

    def get(self, ctx: RequestContext, name: str, stack_id: str, *,
            with_outputs: bool = True) -> StackRecord:
        """The stack, its parameters masked; its outputs unless not ``with_outputs``, or
        the stack is deleted (the record's are then None). What it reads is what it
        shows, in one statement with no transaction around it (``Database.lookups``):
        the columns, and the definition as text, by whose digest the stack's IR (its
        parameters' schemas) is found without decoding the template once it was
        built."""
        with self._db.lookups() as reads:
            shown = shown_stack(reads, ctx, name, stack_id, with_outputs=with_outputs)
        outputs = (shown.outputs or [] if with_outputs and not shown.stack.deleted_at
                   else None)
        return stack_record(self._irs.if_valid_stored(shown.definition), shown.stack,
                            outputs=outputs)

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
                     ) -> list[StackOutput]:
        return list(self.get(ctx, name, stack_id).outputs or [])

    def get_output(self, ctx: RequestContext, name: str, stack_id: str, key: str
                   ) -> StackOutput:
        for output in self.list_outputs(ctx, name, stack_id):
            if output["output_key"] == key:
                return output
        raise OutputNotFound(key=key)
