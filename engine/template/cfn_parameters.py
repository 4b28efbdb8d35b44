"""CloudFormation parameters (``Parameters`` of ``AWSTemplateFormatVersion`` and
``HeatTemplateFormatVersion`` documents) -> the schema a HOT parameter gives.

Apart from ``engine.template.cfn`` so that code reading a stored template's parameters
(``engine.template.stored_parameters``: the API's reads, kiln-manage) does not import the
function trees, and with them yaql, that only building a stack needs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from engine.budget import compile_pattern
from engine.errors import StackValidationFailed
from engine.schema import AllowedPattern, AllowedValues, Constraint, Length, Range
from engine.template.parameters import ParameterSchema
from engine.template.parse import SourceDocument

PARAMETER_KEYS = ("Type", "Default", "NoEcho", "AllowedValues", "AllowedPattern",
                  "MaxLength", "MinLength", "MaxValue", "MinValue", "Description",
                  "ConstraintDescription", "Label")
PARAMETER_TYPES = {"String": "string", "Number": "number",
                   "CommaDelimitedList": "comma_delimited_list", "Json": "json",
                   "Boolean": "boolean"}


def parameter_schema(doc: SourceDocument, name: str, body: Any) -> ParameterSchema:
    """A CFN parameter as the schema a HOT one gives: Type, NoEcho and the Min/Max,
    Allowed* keys become the HOT type, ``hidden`` and constraints. Also how a stored
    CFN template's parameters are read (``engine.template.stored_parameters``)."""
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
