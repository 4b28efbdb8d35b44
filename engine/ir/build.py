"""Template -> IR: resolve types through an injected lookup, check every reference, find
cycles, and check every property whose value is already known.

Pure: no database, no clock. ``lookup`` raises ``ResourceTypeNotFound`` for an unknown
type (the registry's ``get`` does). Every error found is collected; the first is raised
with a note of how many more there were, so a tenant fixes a template in few rounds.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine import budget
from engine.budget import MAX_NESTED_DEPTH
from engine.errors import CircularDependency, KilnError, Location, StackValidationFailed
from engine.ir.conditions import ConditionDecider
from engine.ir.graph import find_cycle
from engine.ir.model import OutputNode, ResolvedStack, ResourceNode, TypeSchema
from engine.ir.provider import ProviderType, provider_type
from engine.schema import (
    MAX_DEPTH,
    Custom,
    CustomCheck,
    bind_constraints,
    coerce_properties,
    nested_deeper,
)
from engine.template.environment import TEMPLATE_SUFFIXES, Environment, child_registry
from engine.template.functions import (
    Deferred,
    Function,
    invalid_reference,
    iter_references,
    or_null,
    resolve,
    resource_dependencies,
    select_branches,
    substitute_facade,
)
from engine.template.loader import load
from engine.template.model import ResourceDefinition, Template, deletion_policy_name
from engine.template.parameters import ParameterSchema, resolve_values

TypeLookup = Callable[[str], TypeSchema]
ConstraintLookup = Callable[[str], CustomCheck]


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

    def attribute(self, resource: str, attribute: str, path: Sequence[Any] = ()) -> Any:
        raise Deferred(resource)

    def attributes(self, resource: str) -> Any:
        raise Deferred(resource)


@budget.within_evaluation
def build(
    template: Template,
    user_parameters: Mapping[str, Any],
    pseudo_parameters: Mapping[str, Any],
    lookup: TypeLookup,
    *,
    require_all: bool = True,
    environment: Environment | None = None,
    constraints: ConstraintLookup | None = None,
    nested_depth: int = 0,
    facade: Mapping[str, Any] | None = None,
) -> ResolvedStack:
    """``environment`` gives the parameter defaults and the resource registry; its
    ``parameters`` are already merged into ``user_parameters`` by the caller.
    ``constraints`` finds the custom constraints parameters name."""
    environment = environment or Environment()
    template = dataclasses.replace(template, parameters=bind_custom_constraints(
        template.parameters, constraints))
    prefix = "AWS::" if template.version.is_cfn else "OS::"
    parameters = {k: v for k, v in pseudo_parameters.items() if k.startswith(prefix)}
    parameters.update(resolve_values(template.parameters, user_parameters,
                                     require_all=require_all,
                                     defaults=environment.parameter_defaults))
    decide = ConditionDecider(
        template.conditions, StaticScope(parameters),
        {name: template.location(("conditions", name)) for name in template.conditions})
    decide.decide_all()
    # A resource whose condition is false is not part of the stack at all; one whose
    # condition cannot be decided yet (validate without values) is kept.
    definitions = {name: d for name, d in template.resources.items()
                   if decide(d.condition) is not False}
    excluded = frozenset(template.resources) - frozenset(definitions)

    errors: list[KilnError] = []
    types: dict[str, TypeSchema] = {}
    implementations: dict[str, str] = {}
    providers: dict[str, ProviderType] = {}
    for name, definition in definitions.items():
        try:
            implementations[name] = environment.resolve_type(definition.type, name)
            if implementations[name].endswith(TEMPLATE_SUFFIXES):
                if nested_depth >= MAX_NESTED_DEPTH:
                    raise StackValidationFailed(
                        reason=f"Recursion depth exceeds {MAX_NESTED_DEPTH}.")
                providers[name] = provider_type(implementations[name], template.files)
                types[name] = providers[name]
            else:
                types[name] = lookup(implementations[name])
        except KilnError as exc:
            errors.append(exc.at(template.location(("resources", name, "type"))))

    nodes: dict[str, ResourceNode] = {}
    for name, definition in definitions.items():
        try:
            definition = _decided(definition, decide, facade)
        except KilnError as exc:
            errors.append(exc)
            definition = dataclasses.replace(definition, properties={}, external_id=None,
                                             update_policy=None, deletion_policy="Delete")
        definition = dataclasses.replace(definition, deletion_policy=_deletion_policy(
            definition, template, parameters, errors))
        definitions[name] = definition
        errors.extend(_check_references(definition.properties, parameters, template, types,
                                        f"resources.{name}", excluded))
        for required in definition.depends_on:
            if required not in template.resources:
                errors.append(StackValidationFailed(
                    template.location(("resources", name, "depends_on")),
                    reason=f'"{required}" (in resources.{name}.depends_on) is not a '
                           'resource in the template'))
        if name in types:
            errors.extend(_check_properties(definition, types[name], parameters, template))
        external_id = _external_id(definition, template, parameters, errors)
        update_policy = (_update_policy(definition, types[name], parameters, template, errors)
                         if name in types else {})
        if definition.deletion_policy == "Snapshot":
            # No Kiln type can snapshot yet; Heat refuses the policy for such types too.
            errors.append(StackValidationFailed(
                template.location(("resources", name, "deletion_policy")),
                reason='"Snapshot" deletion policy not supported'))
        nodes[name] = ResourceNode(
            name=name,
            # The type that runs: what the environment's registry maps the written one to.
            type_name=implementations.get(name, definition.type),
            properties=definition.properties,
            # A depends_on naming a resource its condition left out is dropped, as the
            # resource itself is.
            requires=(frozenset(definition.depends_on) - excluded)
            | resource_dependencies(definition.properties),
            metadata=definition.metadata,
            description=definition.description,
            location=definition.location,
            deletion_policy=definition.deletion_policy,
            external_id=external_id,
            update_policy=update_policy,
        )

    outputs: dict[str, OutputNode] = {}
    for name, output in template.outputs.items():
        enabled = decide(output.condition) is not False
        try:
            # An output an ``if`` leaves out is null, as in Heat.
            value = or_null(substitute_facade(select_branches(output.value, decide), facade)
                            ) if enabled else None
        except KilnError as exc:
            errors.append(exc)
            value = None
        errors.extend(_check_references(value, parameters, template, types,
                                        f"outputs.{name}", excluded))
        outputs[name] = OutputNode(name, value, output.description, output.location)

    for name, provider in providers.items():
        if not errors:
            errors.extend(_check_provider(
                provider, nodes[name], parameters, pseudo_parameters, lookup, environment,
                constraints, nested_depth, facade_of(definitions[name], parameters)))

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


def _decided(definition: ResourceDefinition, decide: Any,
             facade: Mapping[str, Any] | None) -> ResourceDefinition:
    """``definition`` with each ``if`` in its properties, ``external_id`` and update
    policy replaced by the branch taken. What an ``if`` leaves out is not given: a
    property or policy key is dropped, a whole ``external_id`` or policy is none, as
    Heat resolves them."""
    def decided(value: Any) -> Any:
        return or_null(substitute_facade(select_branches(value, decide), facade))

    return dataclasses.replace(definition, properties=decided(definition.properties),
                               external_id=decided(definition.external_id),
                               update_policy=decided(definition.update_policy),
                               deletion_policy=decided(definition.deletion_policy))


def _deletion_policy(definition: ResourceDefinition, template: Template,
                     parameters: Mapping[str, Any], errors: list[KilnError]) -> str:
    """The policy's name. A function in it is resolved with the parameters, as Heat
    resolves it when it reads the definition; none (an ``if`` that left it out, or
    validate without the parameter's value) is ``Delete``."""
    policy = definition.deletion_policy
    if not isinstance(policy, Function):
        return "Delete" if policy is None else str(policy)
    where = template.location(("resources", definition.name, "deletion_policy"))
    unknown = _check_references(policy, parameters, template, {},
                                f"resources.{definition.name}", frozenset())
    wrong = [ref.name for ref in iter_references(policy) if ref.kind == "resource"]
    if unknown:
        errors.extend(unknown)
        return "Delete"
    if wrong:
        errors.append(StackValidationFailed(where, reason=(
            f"The deletion policy may use only parameters, not {wrong[0]}")))
        return "Delete"
    try:
        value = resolve(policy, StaticScope(parameters))
    except Deferred:
        return "Delete"
    except KilnError as exc:
        errors.append(exc.at(where))
        return "Delete"
    if value is None:
        return "Delete"
    name = deletion_policy_name(value, template.version)
    if name is None:
        errors.append(StackValidationFailed(where, reason=(
            f'Invalid deletion policy "{value}"')))
        return "Delete"
    return name


def _external_id(definition: ResourceDefinition, template: Template,
                 parameters: Mapping[str, Any], errors: list[KilnError]) -> str | None:
    """The resource's ``external_id``, which must be known before anything runs (Heat
    resolves it when the definition is read) and excludes ``depends_on``."""
    if definition.external_id is None:
        return None
    where = template.location(("resources", definition.name, "external_id"))
    try:
        value = resolve(definition.external_id, StaticScope(parameters))
    except Deferred:
        return None  # validate without the parameter's value: checked when it is given
    except KilnError as exc:
        errors.append(exc.at(where))
        return None
    if not isinstance(value, str) or not value:
        errors.append(StackValidationFailed(where, reason=(
            f"Resource {definition.name} external_id type must be string")))
        return None
    if definition.depends_on:
        errors.append(StackValidationFailed(where, reason=(
            f"Invalid dependency with external {definition.type} resource: {value}")))
    return value


def _update_policy(definition: ResourceDefinition, schema: TypeSchema,
                   parameters: Mapping[str, Any], template: Template,
                   errors: list[KilnError]) -> dict[str, Any]:
    """The resource's update policy checked against its type's schema and typed. Like
    ``external_id`` it must be known before anything runs: Heat makes no dependency for
    it, so a resource's attribute there would be read before the resource exists."""
    path = ("resources", definition.name, "update_policy")
    written = definition.update_policy or {}
    if isinstance(written, Function):
        # A whole policy from a function (a json parameter; an ``if`` not decided yet):
        # known from parameters only, like each key of a written one.
        where = template.location(path)
        wrong = [ref for ref in iter_references(written) if ref.kind == "resource"]
        if wrong:
            errors.append(StackValidationFailed(where, reason=(
                f"The update policy may use only parameters, not {wrong[0].name}")))
            return {}
        try:
            written = resolve(written, StaticScope(parameters))
        except Deferred:
            return {}
        except KilnError as exc:
            errors.append(exc.at(where))
            return {}
        if written is None:
            written = {}
        if not isinstance(written, Mapping):
            errors.append(StackValidationFailed(where, reason=(
                f"Resource {definition.name} update_policy type must be object")))
            return {}
    known: dict[str, Any] = {}
    for key, value in written.items():
        where = template.location((*path, key))
        if key not in schema.update_policy_schema:
            errors.append(StackValidationFailed(where, reason=f"Unknown Property {key}"))
            continue
        wrong = [ref for ref in iter_references(value)
                 if ref.kind != "param"
                 or (ref.name not in parameters and ref.name not in template.parameters)]
        if wrong:
            errors.append(
                invalid_reference(wrong[0], ".".join(path)) if wrong[0].kind == "param"
                else StackValidationFailed(where, reason=(
                    f"The update policy may use only parameters, not {wrong[0].name}")))
            continue
        try:
            value = resolve(value, StaticScope(parameters))
            if value is not None:
                known[key] = schema.update_policy_schema[key].coerce(value, key)
        except Deferred:
            return {}  # validate without the parameter's value: checked when it is given
        except KilnError as exc:
            errors.append(StackValidationFailed(where, reason=exc.message))
    try:
        return coerce_properties(schema.update_policy_schema, known, "")
    except KilnError:
        return {}  # what is wrong was reported key by key above


def facade_of(definition: ResourceDefinition, parameters: Mapping[str, Any]
              ) -> dict[str, Any]:
    """What ``resource_facade`` gives in the nested stack of ``definition``'s resource."""
    try:
        update_policy = resolve(definition.update_policy or {}, StaticScope(parameters))
    except (Deferred, KilnError):
        update_policy = {}  # not known yet, or refused where the policy is checked
    return {"metadata": definition.metadata, "deletion_policy": definition.deletion_policy,
            "update_policy": update_policy}


def _check_provider(provider: ProviderType, node: ResourceNode,
                    parameters: Mapping[str, Any], pseudo: Mapping[str, Any],
                    lookup: TypeLookup, environment: Environment,
                    constraints: ConstraintLookup | None, depth: int,
                    facade: Mapping[str, Any]) -> list[KilnError]:
    """Build the nested template with the property values known now, as the nested
    stack will be built: its errors name the nested file and line."""
    scope = StaticScope(parameters)
    known: dict[str, Any] = {}
    for key, value in (node.properties or {}).items():
        try:
            known[key] = resolve(value, scope)
        except Deferred:
            continue
        except KilnError:
            continue  # reported against the parent template already
    inherited = Environment(parameter_defaults=environment.parameter_defaults,
                            resource_registry=child_registry(environment.resource_registry,
                                                             node.name))
    try:
        build(provider.template, {k: v for k, v in known.items() if v is not None}, pseudo,
              lookup, require_all=False, environment=inherited, constraints=constraints,
              nested_depth=depth + 1, facade=facade)
    except KilnError as exc:
        return [exc]
    return []


def bind_custom_constraints(schemas: Mapping[str, ParameterSchema],
                            constraints: ConstraintLookup | None
                            ) -> dict[str, ParameterSchema]:
    """``schemas`` with each ``custom_constraint`` bound to its registered check; a name
    nobody registered is refused where the parameter is declared."""
    lookup = constraints if constraints is not None else _unregistered
    bound: dict[str, ParameterSchema] = {}
    for name, schema in schemas.items():
        if not any(isinstance(c, Custom) for c, _ in schema.constraints):
            bound[name] = schema
            continue
        try:
            checks = bind_constraints(tuple(c for c, _ in schema.constraints), lookup)
        except KeyError as exc:
            raise StackValidationFailed(schema.location, reason=(
                f'Parameter \'{name}\' is invalid: the custom constraint '
                f'"{exc.args[0]}" is not registered')) from None
        descriptions = (d for _, d in schema.constraints)
        bound[name] = dataclasses.replace(
            schema, constraints=tuple(zip(checks, descriptions, strict=True)))
    return bound


def _unregistered(name: str) -> CustomCheck:
    raise KeyError(name)


def _check_references(value: Any, parameters: Mapping[str, Any], template: Template,
                      types: Mapping[str, TypeSchema], where: str,
                      excluded: frozenset[str]) -> list[KilnError]:
    errors: list[KilnError] = []
    for ref in iter_references(value):
        if ref.kind == "param":
            if ref.name not in parameters and ref.name not in template.parameters:
                errors.append(invalid_reference(ref, where))
        elif ref.kind == "condition":
            continue  # checked against the conditions section when parsed
        elif ref.name not in template.resources:
            errors.append(invalid_reference(ref, where))
        elif ref.name in excluded:
            # Heat's error for a resource its condition left out, as for one never written.
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
                      parameters: Mapping[str, Any], template: Template
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
                    template.location((*path, key)),
                    reason=f"Unknown Property {key}"))
            continue
        try:
            known[key] = resolve(value, scope)
        except Deferred:
            deferred = True
            continue
        except KilnError as exc:
            errors.append(exc.at(template.location((*path, key))))
            continue
        if known[key] is None:
            continue  # null means unset, as in coerce_properties: the default applies
        try:
            schema.properties_schema[key].coerce(known[key], key)
        except KilnError as exc:
            errors.append(StackValidationFailed(template.location((*path, key)),
                                                reason=exc.message))
    for key, prop in schema.properties_schema.items():
        if prop.required and props.get(key) is None:
            errors.append(StackValidationFailed(
                template.location(path if props else path[:-1]),
                reason=f"Property {key} not assigned"))
    if not errors and not deferred:
        # Everything is known before anything runs: the type's own cross-property checks
        # can answer the tenant now rather than fail the create later.
        try:
            schema.validate_properties(coerce_properties(
                schema.properties_schema, known, "",
                allow_unknown=schema.allow_unknown_properties))
        except KilnError as exc:
            errors.append(StackValidationFailed(template.location(path),
                                                reason=exc.message))
    return errors


def _raise(errors: list[KilnError]) -> None:
    first = errors[0]
    if len(errors) > 1:
        more = "; ".join(str(e) for e in errors[1:4])
        first.message += f" (and {len(errors) - 1} more: {more})"
        first.args = (str(first),)
    raise first


# How deep a property's value may nest when it runs: a template's depth with a json
# parameter's inside it. Each is bounded where it enters, but get_attr can wrap one
# resource's value in the next one's, and a chain of resources would otherwise grow a value
# without bound, past what storing it and every walk of it (the lifecycle views, redaction)
# can recurse through: a resource, and then its stack's delete, that fail for good.
MAX_PROPERTY_DEPTH = 2 * MAX_DEPTH


@budget.within_evaluation
def properties_for_runtime(node: ResourceNode, schema: TypeSchema, scope: Any) -> dict[str, Any]:
    """Evaluate a resource's properties with live values and type them (in the worker)."""
    values = resolve(node.properties, scope)
    try:
        if isinstance(values, Mapping):
            for key, value in values.items():
                if nested_deeper(value, MAX_PROPERTY_DEPTH):
                    raise StackValidationFailed(
                        reason=f"Property error: {key}: the value nests deeper than "
                               f"{MAX_PROPERTY_DEPTH} levels")
        return coerce_properties(schema.properties_schema, values, "",
                                 allow_unknown=schema.allow_unknown_properties)
    except KilnError as exc:
        raise exc.at(Location(path=f"resources.{node.name}.properties",
                              file=node.location.file, line=node.location.line)) from None



# The region CFN's AWS::Region names: Heat's default (a real region comes with the AWS
# resource types).
CFN_REGION = "ap-southeast-1"


def pseudo_parameters(stack_id: str, stack_name: str, tenant_id: str) -> dict[str, str]:
    """Both formats' pseudo parameters; ``build`` keeps the ones of the template's."""
    quote = urllib.parse.quote
    return {"OS::stack_id": stack_id, "OS::stack_name": stack_name,
            "OS::project_id": tenant_id,
            "AWS::StackId": f"arn:openstack:heat::{quote(tenant_id, safe='')}:stacks/"
                            f"{quote(stack_name, safe='')}/{quote(stack_id, safe='')}",
            "AWS::StackName": stack_name, "AWS::Region": CFN_REGION}


def build_from_document(doc: Any, user_parameters: Mapping[str, Any],
                        pseudo: Mapping[str, Any], lookup: TypeLookup, *,
                        require_all: bool = True,
                        files: Mapping[str, Any] | None = None,
                        environment: Mapping[str, Any] | None = None,
                        constraints: ConstraintLookup | None = None,
                        facade: Mapping[str, Any] | None = None) -> ResolvedStack:
    """Template document -> IR in one call (shape checks, then references and graph);
    ``files``, ``environment`` and (for a nested stack) ``facade`` are the stack's, as
    stored."""
    return build(load(doc, files), user_parameters, pseudo, lookup, require_all=require_all,
                 environment=Environment.from_dict(environment), constraints=constraints,
                 facade=facade)
