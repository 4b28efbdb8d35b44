"""The nested stacks a previewed create would make, as far as a preview can know them.

Heat's preview lists a nested-stack resource (a group, a chain, an ``OS::Heat::Stack``, a
template resource) as the resources of the stack it would make, and Kiln's asks the
lifecycle plugins about each such stack as its own create will (``stack_dry_runs``). A
child is defined as the worker defines it (``engine.worker.nested``): the resource's own
``child_definition`` from its properties, the parent's files, ``resource_registry`` and
``parameter_defaults`` inherited, never its parameters, the owning resource as
``resource_facade``.

A resource's child is not previewed (the resource is listed as itself, and no plugin is
asked about its stack) when a property it is given is known only at run time (a
``get_attr``: a template resource's such properties are left out instead, as when its
template is checked at build, and its stack then lacks those parameters), when the child's
template does not build (an ``OS::Heat::Stack``'s template is checked only when its child
is created), past the nesting depth, and once the tree previewed so far holds
``[api] max_resources_per_stack`` resources.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from engine import budget
from engine.budget import MAX_NESTED_DEPTH
from engine.clock import Clock
from engine.db.stack_trees import TreeMember
from engine.errors import KilnError
from engine.ir.build import build_from_document, pseudo_parameters
from engine.ir.model import ResolvedStack, ResourceNode, TypeSchema
from engine.resources.nested import ChildStackResource, TemplateResource
from engine.resources.read_only import ReadOnlyRuntime
from engine.resources.registry import ResourceTypeRegistry
from engine.services.lifecycle import ProposedStack
from engine.template.environment import Environment, child_registry
from engine.template.parameters import hidden_values
from engine.template.parse import document
from engine.vocabulary import Action

#: A resource's properties as a preview knows them (typed, defaults applied), and the
#: names of those given but known only at run time.
KnownProperties = Callable[[ResourceNode, TypeSchema, ResolvedStack],
                           tuple[Mapping[str, Any], frozenset[str]]]


@dataclasses.dataclass(frozen=True)
class ProposedChild:
    """A stack a previewed one would make, with the stacks it would make in turn."""

    resource: str  # the parent's resource that makes it
    stack: ProposedStack
    ir: ResolvedStack
    lineage: tuple[TreeMember, ...]  # from the root down to this stack
    secrets: tuple[str, ...]  # hidden values of this stack and every stack above it
    children: Mapping[str, ProposedChild]  # by resource

    @property
    def path(self) -> str:
        """The resources that make it, from the root down: ``group/0``."""
        return "/".join(member.parent_resource or "" for member in self.lineage[1:])


def walk(children: Mapping[str, ProposedChild]) -> Iterator[ProposedChild]:
    """Every stack of ``children``'s trees, each before the stacks it makes."""
    for child in children.values():
        yield child
        yield from walk(child.children)


class NestedPreviews:
    def __init__(self, registry: ResourceTypeRegistry, clock: Clock,
                 known_properties: KnownProperties) -> None:
        self._registry = registry
        self._clock = clock
        self._known_properties = known_properties

    def children(self, stack: ProposedStack, ir: ResolvedStack, lineage: Sequence[TreeMember],
                 secrets: tuple[str, ...]) -> dict[str, ProposedChild]:
        """The stacks ``stack`` (built as ``ir``, at the end of ``lineage``) would make,
        by the resource that makes each, and theirs in turn."""
        room = _Room(budget.limits().max_resources_per_stack - len(ir.resources))
        return self._children(stack, ir, tuple(lineage), secrets, room)

    def child(self, stack: ProposedStack, ir: ResolvedStack, name: str,
              lineage: Sequence[TreeMember], secrets: tuple[str, ...]) -> ProposedChild | None:
        """The stack resource ``name`` of ``stack`` would make, and those it would make in
        turn; None when the preview cannot tell."""
        room = _Room(budget.limits().max_resources_per_stack - len(ir.resources))
        return self._child(stack, ir, name, tuple(lineage), secrets, room)

    def definition(self, stack: ProposedStack, ir: ResolvedStack, name: str, *,
                   child_id: str, child_name: str, data: Mapping[str, Any]
                   ) -> tuple[ProposedStack, ResolvedStack] | None:
        """The definition an update of ``stack`` to ``ir`` would give the existing child
        ``child_id`` of resource ``name`` (whose stored data is ``data``), and its IR;
        None when the preview cannot tell."""
        return self._define(stack, ir, name, child_id=child_id, child_name=child_name,
                            data=data)

    def _children(self, stack: ProposedStack, ir: ResolvedStack,
                  lineage: tuple[TreeMember, ...], secrets: tuple[str, ...],
                  room: _Room) -> dict[str, ProposedChild]:
        children: dict[str, ProposedChild] = {}
        for name in ir.resources:
            child = self._child(stack, ir, name, lineage, secrets, room)
            if child is not None:
                children[name] = child
        return children

    def _child(self, parent: ProposedStack, ir: ResolvedStack, name: str,
               lineage: tuple[TreeMember, ...], secrets: tuple[str, ...], room: _Room
               ) -> ProposedChild | None:
        if len(lineage) > MAX_NESTED_DEPTH or room.left <= 0:
            return None  # the create itself would stop there
        defined = self._define(parent, ir, name)
        if defined is None:
            return None
        stack, child_ir = defined
        room.left -= len(child_ir.resources)
        own = hidden_values(child_ir.parameter_schemas, child_ir.parameters)
        child_lineage = (*lineage, TreeMember(stack.id, stack.name, name))
        child_secrets = tuple(sorted({*secrets, *own}, key=len, reverse=True))
        return ProposedChild(
            resource=name, stack=stack, ir=child_ir, lineage=child_lineage,
            secrets=child_secrets,
            children=self._children(stack, child_ir, child_lineage, child_secrets, room))

    def _define(self, parent: ProposedStack, ir: ResolvedStack, name: str, *,
                child_id: str | None = None, child_name: str | None = None,
                data: Mapping[str, Any] | None = None
                ) -> tuple[ProposedStack, ResolvedStack] | None:
        """Resource ``name``'s child as the worker would define it, and its IR."""
        node = ir.resources[name]
        cls = self._registry.get(node.type_name)  # the build checked every type
        if not issubclass(cls, ChildStackResource):
            return None
        properties, unknown = self._known_properties(node, cls, ir)
        if unknown and not issubclass(cls, TemplateResource):
            return None
        known = {key: value for key, value in properties.items()
                 if key not in unknown and value is not None}
        resource = cls(name, known, _PreviewRuntime(parent, name, self._clock),
                       data=dict(data or {}))
        try:
            template, template_file, parameters, timeout = resource.child_definition()
            doc = document(template, template_file)
            inherited = Environment.from_dict(parent.environment)
            stack = ProposedStack(
                # As Heat's preview names a child that does not exist yet.
                name=child_name or f"{parent.name}-{name}",
                tenant_id=parent.tenant_id, template=doc.data, parameters=dict(parameters),
                environment={"parameter_defaults": dict(inherited.parameter_defaults),
                             "resource_registry": child_registry(
                                 inherited.resource_registry, name),
                             "parameters": dict(parameters)},
                files=parent.files, facade=_facade(parent.template, name, node),
                timeout_mins=timeout or parent.timeout_mins)
            if child_id is not None:
                stack = dataclasses.replace(stack, id=child_id, action=Action.UPDATE)
            child_ir = build_from_document(
                doc, parameters, pseudo_parameters(stack.id, stack.name, stack.tenant_id),
                self._registry.get, require_all=not unknown, files=stack.files,
                environment=stack.environment, constraints=self._registry.constraint,
                facade=stack.facade)
        except (KilnError, KeyError, TypeError, ValueError):
            # What the worker would fail the resource with when it defines the child; a
            # preview shows the resource as itself.
            return None
        return stack, child_ir


@dataclasses.dataclass
class _Room:
    """How many more resources the previewed tree may hold."""

    left: int


class _PreviewRuntime(ReadOnlyRuntime):
    """What a nested-stack resource reads to define its child in a preview: the parent's
    files (``runtime.nested.template_file``); every write is refused."""

    def __init__(self, parent: ProposedStack, name: str, clock: Clock) -> None:
        super().__init__(parent, _Row(0, name), clock)
        self.nested = _Files(parent.files)


@dataclasses.dataclass(frozen=True)
class _Row:
    id: int
    name: str
    generation: int = 0


class _Files:
    def __init__(self, files: Mapping[str, Any]) -> None:
        self._files = files

    def template_file(self, name: str) -> Any:
        if name not in self._files:
            raise KeyError(f'The template "{name}" is not in the stack\'s files')
        return self._files[name]


def _facade(template: Mapping[str, Any], name: str, node: ResourceNode) -> dict[str, Any]:
    """The owning resource as the child's ``resource_facade`` shows it (the worker's
    ``WorkerNestedStacks._facade``, the deletion policy as the build decided it)."""
    written = ((template.get("resources") or {}) if isinstance(template, Mapping)
               else {}).get(name) or {}
    if not isinstance(written, Mapping):
        written = {}
    return {"metadata": written.get("metadata", written.get("Metadata")) or {},
            "deletion_policy": str(node.deletion_policy).capitalize(),
            "update_policy": written.get("update_policy", written.get("UpdatePolicy")) or {}}
