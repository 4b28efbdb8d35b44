"""HOT documents: version, sections and keys -> definitions with function trees.

Checks here are about the *shape* of the document (known sections, known keys, right
kinds of values). Whether names refer to things that exist, types are installed and the
graph is acyclic is decided in ``engine.ir.build``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.errors import StackValidationFailed
from engine.template.functions import (
    Function,
    ParseContext,
    parse_condition,
    parse_update_policy,
    parse_value,
)
from engine.template.model import (
    DELETION_POLICIES,
    OutputDefinition,
    ResourceDefinition,
    Template,
    deletion_policy_name,
)
from engine.template.parameters import ParameterSchema, parse_schemas
from engine.template.parse import SourceDocument
from engine.template.versions import HotVersion

SECTIONS = {"heat_template_version", "description", "parameter_groups", "parameters",
            "resources", "outputs", "conditions"}
RESOURCE_KEYS = {"type", "properties", "metadata", "depends_on", "deletion_policy",
                 "update_policy", "description", "condition", "external_id"}
OUTPUT_KEYS = {"value", "description", "condition"}
# Keys that appeared in 2016-10-14 (newton); older versions refuse them as Heat does.
_NEWTON_SECTIONS = {"conditions"}
_NEWTON_RESOURCE_KEYS = {"condition", "external_id"}


def load(doc: SourceDocument, version: HotVersion, files: Mapping[str, Any] | None = None
         ) -> Template:
    """A HOT document of ``version`` (found by ``engine.template.loader``); ``files``
    answers ``get_file``."""
    data = doc.data
    for key in data:
        if key not in SECTIONS or (key in _NEWTON_SECTIONS and not version.has_conditions):
            raise StackValidationFailed(doc.location((str(key),)),
                                        reason=f"The template section is invalid: {key}")
    conditions = _section(doc, data.get("conditions"), "conditions")
    resources = data.get("resources")
    ctx = ParseContext(doc=doc, version=version, files=files or {},
                       conditions=frozenset(str(k) for k in conditions),
                       resource_names=frozenset(str(k) for k in resources)
                       if isinstance(resources, Mapping) else frozenset())
    parameters = parse_schemas(doc, data.get("parameters"), version)
    return Template(
        doc=doc,
        version=version,
        description=str(data.get("description") or ""),
        parameters=parameters,
        resources=_resources(ctx, data.get("resources")),
        outputs=_outputs(ctx, data.get("outputs")),
        conditions={str(name): parse_condition(ctx, body, ("conditions", str(name)),
                                               named=False)
                    for name, body in conditions.items()},
        parameter_groups=_parameter_groups(doc, data.get("parameter_groups"), parameters),
        files=files or {},
    )


def _section(doc: SourceDocument, data: Any, name: str) -> Mapping[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise StackValidationFailed(doc.location((name,)),
                                    reason=f'The template section "{name}" must be a map')
    return data


def _resources(ctx: ParseContext, data: Any) -> dict[str, ResourceDefinition]:
    doc, version = ctx.doc, ctx.version
    result = {}
    for name, body in _section(doc, data, "resources").items():
        path = ("resources", str(name))
        if not isinstance(body, Mapping):
            raise StackValidationFailed(doc.location(path),
                                        reason=f'Resource "{name}" must be a map')
        for key in body:
            if key not in RESOURCE_KEYS or (key in _NEWTON_RESOURCE_KEYS
                                            and not version.has_conditions):
                raise StackValidationFailed(doc.location((*path, str(key))),
                                            reason=f'"{key}" is not a valid keyword inside a '
                                                   'resource definition')
        kind = body.get("type")
        if not isinstance(kind, str) or not kind:
            raise StackValidationFailed(doc.location((*path, "type")),
                                        reason=f'Resource "{name}" has no type')
        depends = body.get("depends_on") or []
        depends = [depends] if isinstance(depends, str) else depends
        if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
            raise StackValidationFailed(doc.location((*path, "depends_on")),
                                        reason="depends_on must be a resource name or a list "
                                               "of them")
        properties = parse_value(ctx, body.get("properties") or {}, (*path, "properties"))
        # NOTE: checked after parsing: {get_param: p} is a map of text but a call once
        # parsed, and the IR needs a map of property names.
        if not isinstance(properties, Mapping):
            raise StackValidationFailed(doc.location((*path, "properties")),
                                        reason="properties must be a map")
        result[str(name)] = ResourceDefinition(
            name=str(name), type=kind,
            properties=properties,
            depends_on=tuple(depends),
            # Kept as written: it is served back as the tenant wrote it, and evaluated
            # where it is read (engine.services.resource_requests.static_metadata).
            metadata=body.get("metadata") or {},
            description=str(body.get("description") or ""),
            location=doc.location(path),
            condition=(parse_condition(ctx, body["condition"], (*path, "condition"))
                       if "condition" in body else True),
            deletion_policy=_deletion_policy(ctx, body.get("deletion_policy"), path),
            external_id=parse_value(ctx, body.get("external_id"), (*path, "external_id")),
            update_policy=parse_update_policy(ctx, body.get("update_policy"),
                                              (*path, "update_policy")),
        )
    return result


def _deletion_policy(ctx: ParseContext, value: Any, path: tuple[str, ...]) -> Any:
    """The policy as Heat spells it; lower case is accepted from 2016-10-14, as in Heat.
    A function (of parameters) is kept parsed, for the IR to decide."""
    if value is None:
        return "Delete"
    where = (*path, "deletion_policy")
    if isinstance(value, Mapping):
        parsed = parse_value(ctx, value, where)
        if isinstance(parsed, Function):
            return parsed
        raise StackValidationFailed(ctx.doc.location(where), reason=(
            f"Resource {path[1]} deletion_policy type must be string"))
    policy = deletion_policy_name(value, ctx.version)
    if policy is None:
        raise StackValidationFailed(
            ctx.doc.location(where),
            reason=f'Invalid deletion policy "{value}"; must be one of '
                   f'{", ".join(DELETION_POLICIES)}')
    return policy


def _outputs(ctx: ParseContext, data: Any) -> dict[str, OutputDefinition]:
    doc, version = ctx.doc, ctx.version
    result = {}
    for name, body in _section(doc, data, "outputs").items():
        path = ("outputs", str(name))
        if not isinstance(body, Mapping) or "value" not in body:
            raise StackValidationFailed(doc.location(path),
                                        reason=f'Output "{name}" must be a map with a value')
        for key in body:
            if key not in OUTPUT_KEYS or (key == "condition" and not version.has_conditions):
                raise StackValidationFailed(doc.location((*path, str(key))),
                                            reason=f'"{key}" is not a valid keyword inside an '
                                                   'output definition')
        result[str(name)] = OutputDefinition(
            name=str(name),
            value=parse_value(ctx, body["value"], (*path, "value")),
            description=str(body.get("description") or "No description given"),
            location=doc.location(path),
            condition=(parse_condition(ctx, body["condition"], (*path, "condition"))
                       if "condition" in body else True),
        )
    return result


def _parameter_groups(doc: SourceDocument, data: Any,
                      parameters: Mapping[str, ParameterSchema]
                      ) -> tuple[Mapping[str, Any], ...]:
    """Heat's checks: a list of maps, each with a list of declared parameters, and no
    parameter in two groups."""
    if data is None:
        return ()
    if not isinstance(data, list):
        raise StackValidationFailed(doc.location(("parameter_groups",)),
                                    reason="The parameter_groups should be a list.")
    seen: dict[str, int] = {}
    for index, group in enumerate(data):
        path = ("parameter_groups", index)
        names = group.get("parameters") if isinstance(group, Mapping) else None
        if not isinstance(group, Mapping) or names is None:
            raise StackValidationFailed(doc.location(path), reason=(
                "Parameters must be provided for each Parameter Group."))
        if not isinstance(names, list):
            raise StackValidationFailed(doc.location((*path, "parameters")),
                                        reason="The grouped parameters should be a list.")
        for position, name in enumerate(names):
            where = doc.location((*path, "parameters", position))
            # A name that is not text (a map, a list) names no parameter, as in Heat's
            # list lookups; it must not reach the set and dict lookups below.
            if isinstance(name, str) and name in seen:
                raise StackValidationFailed(where, reason=(
                    f"The {name} parameter must be assigned to one parameter group only."))
            if not isinstance(name, str) or name not in parameters:
                raise StackValidationFailed(where, reason=(
                    f"The grouped parameter {name} does not reference a valid parameter."))
            seen[name] = index
    return tuple(data)
