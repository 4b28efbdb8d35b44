"""Template -> IR: resolve types through an injected lookup, check every reference, find
cycles, and check every property whose value is already known.

Pure: no database, no clock. ``lookup`` raises ``ResourceTypeNotFound`` for an unknown
type (the registry's ``get`` does). Every error found is collected; the first is raised
with a note of how many more there were, so a tenant fixes a template in few rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from engine.errors import CircularDependency, KilnError, Location, StackValidationFailed
from engine.ir.graph import find_cycle
from engine.ir.model import OutputNode, ResolvedStack, ResourceNode, TypeSchema
from engine.schema import coerce_properties
from engine.template.functions import (
    Deferred,
    invalid_reference,
    iter_references,
    resolve,
    resource_dependencies,
)
from engine.template.hot import HotTemplate, ResourceDefinition, load
from engine.template.parameters import resolve_values

TypeLookup = Callable[[str], TypeSchema]


class StaticScope:
    """Parameters are known before anything runs; resources are not."""

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self._parameters = parameters

    def param(self, name: str) -> Any:
        if name not in self._parameters:
            raise Deferred(name)  # an unknown parameter is reported by _check_references
        return self._parameters[name]

    def reference_id(self, resource: str) -> Any:
        raise Deferred(resource)

    def attribute(self, resource: str, attribute: str) -> Any:
        raise Deferred(resource)


def build(
    template: HotTemplate,
    user_parameters: Mapping[str, Any],
    pseudo_parameters: Mapping[str, Any],
    lookup: TypeLookup,
    *,
    require_all: bool = True,
) -> ResolvedStack:
    parameters = dict(pseudo_parameters)
    parameters.update(resolve_values(template.parameters, user_parameters,
                                     require_all=require_all))
    errors: list[KilnError] = []
    types: dict[str, TypeSchema] = {}
    for name, definition in template.resources.items():
        try:
            types[name] = lookup(definition.type)
        except KilnError as exc:
            errors.append(exc.at(template.doc.location(("resources", name, "type"))))

    nodes: dict[str, ResourceNode] = {}
    for name, definition in template.resources.items():
        errors.extend(_check_references(definition.properties, parameters, template, types,
                                        f"resources.{name}"))
        for required in definition.depends_on:
            if required not in template.resources:
                errors.append(StackValidationFailed(
                    template.doc.location(("resources", name, "depends_on")),
                    reason=f'"{required}" (in resources.{name}.depends_on) is not a '
                           'resource in the template'))
        if name in types:
            errors.extend(_check_properties(definition, types[name], parameters, template))
        nodes[name] = ResourceNode(
            name=name,
            type_name=definition.type,
            properties=definition.properties,
            requires=frozenset(definition.depends_on)
            | resource_dependencies(definition.properties),
            metadata=definition.metadata,
            description=definition.description,
            location=definition.location,
        )

    outputs: dict[str, OutputNode] = {}
    for name, output in template.outputs.items():
        errors.extend(_check_references(output.value, parameters, template, types,
                                        f"outputs.{name}"))
        outputs[name] = OutputNode(name, output.value, output.description, output.location)

    if not errors:
        cycle = find_cycle({name: node.requires for name, node in nodes.items()})
        if cycle:
            errors.append(CircularDependency(nodes[cycle[0]].location, cycle=" -> ".join(cycle)))
    if errors:
        _raise(errors)
    return ResolvedStack(
        description=template.description,
        parameter_schemas=template.parameters,
        parameters=parameters,
        resources=nodes,
        outputs=outputs,
    )


def _check_references(value: Any, parameters: Mapping[str, Any], template: HotTemplate,
                      types: Mapping[str, TypeSchema], where: str) -> list[KilnError]:
    errors: list[KilnError] = []
    for ref in iter_references(value):
        if ref.kind == "param":
            if ref.name not in parameters and ref.name not in template.parameters:
                errors.append(invalid_reference(ref, where))
        elif ref.name not in template.resources:
            errors.append(invalid_reference(ref, where))
        elif ref.attribute is not None and ref.name in types:
            schema = types[ref.name]
            if ref.attribute not in schema.attributes_schema and not (
                schema.allow_unknown_attributes
            ):
                errors.append(StackValidationFailed(
                    ref.location,
                    reason=f"The Referenced Attribute ({ref.name} {ref.attribute}) is incorrect."))
    return errors


def _check_properties(definition: ResourceDefinition, schema: TypeSchema,
                      parameters: Mapping[str, Any], template: HotTemplate
                      ) -> list[KilnError]:
    """Check unknown, missing and already-known property values against the type."""
    path = ("resources", definition.name, "properties")
    props = definition.properties
    known: dict[str, Any] = {}
    scope = StaticScope(parameters)
    errors: list[KilnError] = []
    deferred = False
    for key, value in props.items():
        if key not in schema.properties_schema:
            if not schema.allow_unknown_properties:
                errors.append(StackValidationFailed(
                    template.doc.location((*path, key)),
                    reason=f"Unknown Property {key}"))
            continue
        try:
            known[key] = resolve(value, scope)
        except Deferred:
            deferred = True
            continue
        except KilnError as exc:
            errors.append(exc.at(template.doc.location((*path, key))))
            continue
        if known[key] is None:
            continue  # null means unset, as in coerce_properties: the default applies
        try:
            schema.properties_schema[key].coerce(known[key], key)
        except KilnError as exc:
            errors.append(StackValidationFailed(template.doc.location((*path, key)),
                                                reason=exc.message))
    for key, prop in schema.properties_schema.items():
        if prop.required and props.get(key) is None:
            errors.append(StackValidationFailed(
                template.doc.location(path if props else path[:-1]),
                reason=f"Property {key} not assigned"))
    if not errors and not deferred:
        # Everything is known before anything runs: the type's own cross-property checks
        # can answer the tenant now rather than fail the create later.
        try:
            schema.validate_properties(coerce_properties(
                schema.properties_schema, known, "",
                allow_unknown=schema.allow_unknown_properties))
        except KilnError as exc:
            errors.append(StackValidationFailed(template.doc.location(path),
                                                reason=exc.message))
    return errors


def _raise(errors: list[KilnError]) -> None:
    first = errors[0]
    if len(errors) > 1:
        more = "; ".join(str(e) for e in errors[1:4])
        first.message += f" (and {len(errors) - 1} more: {more})"
        first.args = (str(first),)
    raise first


def properties_for_runtime(node: ResourceNode, schema: TypeSchema, scope: Any) -> dict[str, Any]:
    """Evaluate a resource's properties with live values and type them (in the worker)."""
    values = resolve(node.properties, scope)
    try:
        return coerce_properties(schema.properties_schema, values, "",
                                 allow_unknown=schema.allow_unknown_properties)
    except KilnError as exc:
        raise exc.at(Location(path=f"resources.{node.name}.properties",
                              file=node.location.file, line=node.location.line)) from None



def pseudo_parameters(stack_id: str, stack_name: str, tenant_id: str) -> dict[str, str]:
    return {"OS::stack_id": stack_id, "OS::stack_name": stack_name,
            "OS::project_id": tenant_id}


def build_from_document(doc: Any, user_parameters: Mapping[str, Any],
                        pseudo: Mapping[str, Any], lookup: TypeLookup, *,
                        require_all: bool = True) -> ResolvedStack:
    """Template document -> IR in one call (shape checks, then references and graph)."""
    return build(load(doc), user_parameters, pseudo, lookup, require_all=require_all)
