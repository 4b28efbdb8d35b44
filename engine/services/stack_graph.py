"""A stack's resources as a dependency graph (the console's, specs/console.rst): the
resource list (``StackResources.list_resources``, child stacks ``nested_depth`` levels
down) as nodes with keys unique across the tree, its ``required_by`` turned round as
edges, and each node's line in its own stack's rendered template (``StackReads.rendered``,
the ``/source`` text). A resource the stack's template declares but that has no row yet
(its operation is not planned: queued, or parked at an approval gate) is a node too,
INIT_COMPLETE as in Heat, with the IR's dependencies as its edges."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence

from engine.context import RequestContext
from engine.db.models import Stack
from engine.db.session import Database
from engine.ir.model import ResolvedStack
from engine.ir.stored import StoredIrs
from engine.services.records import ResourceRecord, StackRecord
from engine.services.stack_lookup import named_stack
from engine.services.stack_reads import StackReads
from engine.services.stack_resources import StackResources
from engine.vocabulary import Action, Status

#: Joins a child stack's resource name to the key of the resource that owns that stack.
KEY_SEPARATOR = "/"


def key_segment(name: str) -> str:
    """A resource name as one segment of a key: Kiln's resource names may hold ``/``
    (Heat's may not), so ``%`` and ``/`` are percent-encoded to keep keys unique."""
    return name.replace("%", "%25").replace(KEY_SEPARATOR, "%2F")


@dataclasses.dataclass(frozen=True)
class GraphNode:
    key: str  # the name at the top; "{parent key}/{name}" in a child stack (key_segment)
    resource: ResourceRecord
    stack_id: str  # the stack the resource is in
    parent: str | None  # the key of the resource that owns that stack; None at the top
    line: int | None  # in the /source text of the stack it is in; None: not in it
    # For a node from the template alone (no row yet): the IR's prerequisites, within
    # its stack. Empty for a row's node, whose edges are its prerequisites' required_by.
    requires: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True)
class StackGraph:
    stack: StackRecord
    nodes: list[GraphNode]
    edges: list[tuple[str, str]]  # (prerequisite key, dependent key), within one stack


class StackGraphs:
    def __init__(self, db: Database, irs: StoredIrs, reads: StackReads,
                 resources: StackResources) -> None:
        self._db = db
        self._irs = irs
        self._reads = reads
        self._resources = resources

    def graph(self, ctx: RequestContext, name: str, stack_id: str, nested_depth: int = 0
              ) -> StackGraph:
        # 404 for another tenant's; the graph shows no outputs, so none are resolved.
        stack = self._reads.get(ctx, name, stack_id, with_outputs=False)
        records = self._resources.list_resources(ctx, name, stack_id, {},
                                                 nested_depth=nested_depth)
        # A resource is (the id of the stack it is in, its name) across the tree.
        def home(record: ResourceRecord) -> str:
            return record.stack[1] if record.stack is not None else stack.id

        owners = {r.nested_stack[1]: (home(r), r.name)
                  for r in records if r.nested_stack is not None}

        def depth(stack_id: str) -> int:
            owner = owners.get(stack_id)
            return 0 if owner is None else depth(owner[0]) + 1

        # A child stack within nested_depth is in the tree even with no rows yet.
        stacks = ({stack.id: stack.name}
                  | {r.stack[1]: r.stack[0] for r in records if r.stack is not None}
                  | {r.nested_stack[1]: r.nested_stack[0] for r in records
                     if r.nested_stack is not None and depth(home(r)) < nested_depth})

        def key(stack_id: str, name: str) -> str:
            owner = owners.get(stack_id)
            segment = key_segment(name)
            return segment if owner is None else key(*owner) + KEY_SEPARATOR + segment

        rows = self._stored(ctx, stacks)
        # NOTE: rendered (or found in the renderings' cache) and built outside the
        # transaction: a large template takes a while.
        lines = {row.id: self._reads.rendered(row.template).lines["resources"]
                 for row in rows}
        planned = {(home(r), r.name) for r in records}
        homed = [(home(r), r, frozenset[str]()) for r in records] + [
            (sid, record, requires)
            for sid, (ir, created_at) in _templates(self._irs, rows).items()
            for record, requires in _unplanned(ir, created_at,
                                               {n for s, n in planned if s == sid})]
        nodes = []
        for sid, record, requires in homed:
            owner = owners.get(sid)
            nodes.append(GraphNode(key=key(sid, record.name), resource=record, stack_id=sid,
                                   parent=key(*owner) if owner is not None else None,
                                   line=lines[sid].get(record.name), requires=requires))
        edges = [(node.key, key(node.stack_id, dependent))
                 for node in nodes for dependent in node.resource.required_by]
        edges += [(key(node.stack_id, prerequisite), node.key)
                  for node in nodes for prerequisite in sorted(node.requires)]
        # A template-only node and a row can name the same edge from either end.
        return StackGraph(stack=stack, nodes=nodes, edges=list(dict.fromkeys(edges)))

    def _stored(self, ctx: RequestContext, stacks: Mapping[str, str]) -> list[Stack]:
        """The stored row of each stack in the tree, read in one transaction."""
        with self._db.read() as session:
            return [named_stack(session, ctx, sname, sid) for sid, sname in stacks.items()]


def _templates(irs: StoredIrs, rows: Sequence[Stack]
               ) -> dict[str, tuple[ResolvedStack, datetime.datetime]]:
    """The IR of each live stack in the tree; none for a deleted stack (its resources are
    gone, not waiting) or one that no longer validates (a type uninstalled since: its
    rows are all that is known)."""
    built = {row.id: (irs.if_valid(row), row.created_at)
             for row in rows if row.deleted_at is None}
    return {sid: (ir, created_at) for sid, (ir, created_at) in built.items()
            if ir is not None}


def _unplanned(ir: ResolvedStack, created_at: datetime.datetime, planned: set[str]
               ) -> list[tuple[ResourceRecord, frozenset[str]]]:
    """The template's resources with no row yet, as the row the plan will write for each
    (INIT_COMPLETE, no physical id), with its prerequisites from the IR."""
    dependents = ir.dependents()
    return [(ResourceRecord(
        name=name, type=node.type_name, action=Action.INIT, status=Status.COMPLETE,
        status_reason="", physical_id="", required_by=sorted(dependents[name]),
        description=node.description, attributes={},
        # The graph shows no times; the stack's stands in for the row's to come.
        created_at=created_at, updated_at=None), node.requires)
        for name, node in ir.resources.items() if name not in planned]
