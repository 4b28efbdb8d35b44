"""CloudFormation documents (``AWSTemplateFormatVersion: 2010-09-09`` and Heat's
``HeatTemplateFormatVersion: 2012-12-12``) -> the same definitions a HOT template gives.

Sections, resource keys and parameter keys are CFN's; the function trees, conditions and
everything after (``engine.ir.build``) are shared with HOT. Only the AWS format has
``Conditions`` and ``Fn::If``, as in Heat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.errors import StackValidationFailed
from engine.template.cfn_parameters import parameter_schema
from engine.template.functions import (
    Function,
    ParseContext,
    parse_condition,
    parse_update_policy,
    parse_value,
)
from engine.template.model import (
    OutputDefinition,
    ResourceDefinition,
    Template,
    deletion_policy_name,
)
from engine.template.parse import SourceDocument
from engine.template.versions import HotVersion

SECTIONS = ("AWSTemplateFormatVersion", "HeatTemplateFormatVersion", "Description",
            "Mappings", "Parameters", "Resources", "Outputs", "Conditions")
RESOURCE_KEYS = ("Type", "Properties", "Metadata", "DependsOn", "DeletionPolicy",
                 "UpdatePolicy", "Description", "Condition")
OUTPUT_KEYS = ("Description", "Value", "Condition")
_CONDITIONAL = ("Conditions", "Condition")  # the AWS format's only


def load(doc: SourceDocument, version: HotVersion, files: Mapping[str, Any] | None = None
         ) -> Template:
    data = doc.data
    for key in data:
        if key not in SECTIONS or (key == "Conditions" and not version.has_conditions):
            raise StackValidationFailed(doc.location((str(key),)),
                                        reason=f"The template section is invalid: {key}")
    resources = _section(doc, data, "Resources")
    conditions = _section(doc, data, "Conditions")
    ctx = ParseContext(doc=doc, version=version, files=files or {},
                       conditions=frozenset(str(k) for k in conditions),
                       resource_names=frozenset(str(k) for k in resources),
                       mappings=_section(doc, data, "Mappings"))
    return Template(
        doc=doc, version=version,
        description=str(data.get("Description") or ""),
        parameters={str(name): parameter_schema(doc, str(name), body)
                    for name, body in _section(doc, data, "Parameters").items()},
        resources={str(name): _resource(ctx, str(name), body)
                   for name, body in resources.items()},
        outputs={str(name): _output(ctx, str(name), body)
                 for name, body in _section(doc, data, "Outputs").items()},
        conditions={str(name): parse_condition(ctx, body, ("Conditions", str(name)),
                                               named=False)
                    for name, body in conditions.items()},
        files=files or {},
    )


def _section(doc: SourceDocument, data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    section = data.get(name)
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise StackValidationFailed(doc.location((name,)),
                                    reason=f'The template section "{name}" must be a map')
    return section


def _resource(ctx: ParseContext, name: str, body: Any) -> ResourceDefinition:
    doc, path = ctx.doc, ("Resources", name)
    if not isinstance(body, Mapping):
        raise StackValidationFailed(doc.location(path), reason=(
            f"Resources must contain Resource. Found a [{type(body).__name__}] instead"))
    for key in body:
        # Heat lets unknown keys through in CFN; they are nearly always a misspelling
        # (``Propeties``) that would silently drop the properties, so Kiln refuses them.
        if key not in RESOURCE_KEYS or (key in _CONDITIONAL and not ctx.version.has_conditions):
            raise StackValidationFailed(doc.location((*path, str(key))), reason=(
                f'"{key}" is not a valid keyword inside a resource definition'))
    kind = body.get("Type")
    if not isinstance(kind, str) or not kind:
        raise StackValidationFailed(doc.location((*path, "Type")),
                                    reason="Each Resource must contain a Type key.")
    depends = body.get("DependsOn") or []
    depends = [depends] if isinstance(depends, str) else depends
    if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
        raise StackValidationFailed(doc.location((*path, "DependsOn")), reason=(
            f"Resource {name} DependsOn must be a list of strings"))
    properties = parse_value(ctx, body.get("Properties") or {}, (*path, "Properties"))
    if not isinstance(properties, Mapping):
        raise StackValidationFailed(doc.location((*path, "Properties")), reason=(
            f"Resource {name} Properties type must be object"))
    policy = body.get("DeletionPolicy", "Delete")
    if isinstance(policy, Mapping):
        # A function of parameters, decided with them when the IR is built (as Heat).
        policy = parse_value(ctx, policy, (*path, "DeletionPolicy"))
        if not isinstance(policy, Function):
            raise StackValidationFailed(doc.location((*path, "DeletionPolicy")), reason=(
                f"Resource {name} DeletionPolicy type must be string"))
    elif deletion_policy_name(policy, ctx.version) is None:
        raise StackValidationFailed(doc.location((*path, "DeletionPolicy")),
                                    reason=f'Invalid deletion policy "{policy}"')
    return ResourceDefinition(
        name=name, type=kind, properties=properties, depends_on=tuple(depends),
        metadata=body.get("Metadata") or {},
        description=str(body.get("Description") or ""),
        location=doc.location(path),
        condition=(parse_condition(ctx, body["Condition"], (*path, "Condition"))
                   if "Condition" in body else True),
        deletion_policy=policy,
        update_policy=parse_update_policy(ctx, body.get("UpdatePolicy"),
                                          (*path, "UpdatePolicy")),
    )


def _output(ctx: ParseContext, name: str, body: Any) -> OutputDefinition:
    doc, path = ctx.doc, ("Outputs", name)
    if not isinstance(body, Mapping):
        raise StackValidationFailed(doc.location(path), reason=(
            f"Output definitions must be a map. Found a {type(body).__name__} instead"))
    if "Value" not in body:
        raise StackValidationFailed(doc.location(path), reason=(
            "Each output definition must contain a Value key."))
    for key in body:
        if key not in OUTPUT_KEYS or (key in _CONDITIONAL and not ctx.version.has_conditions):
            raise StackValidationFailed(doc.location((*path, str(key))), reason=(
                f'"{key}" is not a valid keyword inside an output definition'))
    return OutputDefinition(
        name=name, value=parse_value(ctx, body["Value"], (*path, "Value")),
        description=str(body.get("Description") or "No description given"),
        location=doc.location(path),
        condition=(parse_condition(ctx, body["Condition"], (*path, "Condition"))
                   if "Condition" in body else True),
    )
