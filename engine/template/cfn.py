"""CloudFormation documents (``AWSTemplateFormatVersion: 2010-09-09`` and Heat's
``HeatTemplateFormatVersion: 2012-12-12``) -> the same definitions a HOT template gives.

Sections, resource keys and parameter keys are CFN's; the function trees, conditions and
everything after (``engine.ir.build``) are shared with HOT. Only the AWS format has
``Conditions`` and ``Fn::If``, as in Heat.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from engine.budget import compile_pattern
from engine.errors import StackValidationFailed
from engine.schema import AllowedPattern, AllowedValues, Constraint, Length, Range
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
from engine.template.parameters import ParameterSchema
from engine.template.parse import SourceDocument
from engine.template.versions import HotVersion

SECTIONS = ("AWSTemplateFormatVersion", "HeatTemplateFormatVersion", "Description",
            "Mappings", "Parameters", "Resources", "Outputs", "Conditions")
RESOURCE_KEYS = ("Type", "Properties", "Metadata", "DependsOn", "DeletionPolicy",
                 "UpdatePolicy", "Description", "Condition")
OUTPUT_KEYS = ("Description", "Value", "Condition")
PARAMETER_KEYS = ("Type", "Default", "NoEcho", "AllowedValues", "AllowedPattern",
                  "MaxLength", "MinLength", "MaxValue", "MinValue", "Description",
                  "ConstraintDescription", "Label")
PARAMETER_TYPES = {"String": "string", "Number": "number",
                   "CommaDelimitedList": "comma_delimited_list", "Json": "json",
                   "Boolean": "boolean"}
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
        parameters={str(name): _parameter(doc, str(name), body)
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


def _parameter(doc: SourceDocument, name: str, body: Any) -> ParameterSchema:
    """A CFN parameter as the schema a HOT one gives: Type, NoEcho and the Min/Max,
    Allowed* keys become the HOT type, ``hidden`` and constraints."""
    path = ("Parameters", name)
    loc = doc.location(path)
    if not isinstance(body, Mapping):
        raise StackValidationFailed(loc, reason=f"Invalid parameter ({name}), expected a "
                                                "mapping")
    for key in body:
        if key not in PARAMETER_KEYS:
            raise StackValidationFailed(doc.location((*path, str(key))), reason=(
                f"Invalid key '{key}' for parameter ({name})"))
    if "Type" not in body:
        raise StackValidationFailed(loc, reason=f"Missing parameter type for parameter: "
                                                f"{name}")
    kind = PARAMETER_TYPES.get(body["Type"])
    if kind is None:
        raise StackValidationFailed(doc.location((*path, "Type")),
                                    reason=f"Invalid type ({body['Type']})")
    description = str(body.get("ConstraintDescription") or "")
    constraints = tuple((c, description) for c in _constraints(doc, path, body))
    schema = ParameterSchema(
        name=name, type=kind, default=body.get("Default"), has_default="Default" in body,
        hidden=str(body.get("NoEcho", "")).lower() == "true",
        label=str(body.get("Label") or ""), description=str(body.get("Description") or ""),
        constraints=constraints, location=loc)
    if schema.has_default and schema.default is not None:
        schema.convert(schema.default)
    return schema


def _constraints(doc: SourceDocument, path: tuple[str, ...], body: Mapping[str, Any]
                 ) -> list[Constraint]:
    def bad(key: str, reason: str) -> StackValidationFailed:
        return StackValidationFailed(doc.location((*path, key)), reason=reason)

    found: list[Constraint] = []
    if "MinLength" in body or "MaxLength" in body:
        try:
            low, high = (_integral(body.get(k)) for k in ("MinLength", "MaxLength"))
        except ValueError:
            raise bad("MinLength" if "MinLength" in body else "MaxLength",
                      "min/max length must be integral") from None
        found.append(Length(low, high))
    if "MinValue" in body or "MaxValue" in body:
        try:
            low_v, high_v = (_numeric(body.get(k)) for k in ("MinValue", "MaxValue"))
        except ValueError:
            raise bad("MinValue" if "MinValue" in body else "MaxValue",
                      "min/max must be numeric") from None
        found.append(Range(low_v, high_v))
    if "AllowedValues" in body:
        if not isinstance(body["AllowedValues"], list):
            raise bad("AllowedValues", "AllowedValues must be a list")
        found.append(AllowedValues(tuple(body["AllowedValues"])))
    if "AllowedPattern" in body:
        if not isinstance(body["AllowedPattern"], str):
            raise bad("AllowedPattern", "AllowedPattern must be a string")
        try:
            compile_pattern(body["AllowedPattern"])
        except re.error as exc:
            raise bad("AllowedPattern", f"Invalid AllowedPattern: {exc}") from None
        found.append(AllowedPattern(body["AllowedPattern"],
                                    location=doc.location((*path, "AllowedPattern"))))
    return found


def _integral(value: Any) -> int | None:
    if value is None:
        return None
    number = float(value)
    if not number.is_integer():
        raise ValueError(value)
    return int(number)


def _numeric(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return int(number) if number.is_integer() else number
