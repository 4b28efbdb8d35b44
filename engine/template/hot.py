"""HOT documents: version, sections and keys -> definitions with function trees.

Checks here are about the *shape* of the document (known sections, known keys, right
kinds of values). Whether names refer to things that exist, types are installed and the
graph is acyclic is decided in ``engine.ir.build``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from engine.errors import InvalidTemplateVersion, Location, StackValidationFailed
from engine.template.functions import parse_value
from engine.template.parameters import ParameterSchema, parse_schemas
from engine.template.parse import SourceDocument
from engine.template.versions import (
    CFN_KEYS,
    HOT_KEY,
    HotVersion,
    find_hot_version,
    known_hot_names,
)

SECTIONS = {"heat_template_version", "description", "parameter_groups", "parameters",
            "resources", "outputs", "conditions"}
RESOURCE_KEYS = {"type", "properties", "metadata", "depends_on", "deletion_policy",
                 "update_policy", "description", "condition", "external_id"}
OUTPUT_KEYS = {"value", "description", "condition"}
_NOT_YET = {
    "conditions": "The template section \"conditions\" is not supported by Kiln yet.",
    "condition": "The resource key \"condition\" is not supported by Kiln yet.",
    "external_id": "The resource key \"external_id\" is not supported by Kiln yet.",
}


@dataclasses.dataclass(frozen=True)
class ResourceDefinition:
    name: str
    type: str
    properties: Any
    depends_on: tuple[str, ...]
    metadata: Any
    description: str
    location: Location


@dataclasses.dataclass(frozen=True)
class OutputDefinition:
    name: str
    value: Any
    description: str
    location: Location


@dataclasses.dataclass(frozen=True)
class HotTemplate:
    doc: SourceDocument
    version: HotVersion
    description: str
    parameters: Mapping[str, ParameterSchema]
    resources: Mapping[str, ResourceDefinition]
    outputs: Mapping[str, OutputDefinition]


def load(doc: SourceDocument) -> HotTemplate:
    data = doc.data
    if not isinstance(data, Mapping):
        raise StackValidationFailed(doc.location(()),
                                    reason="Template not in valid format: it must be a map.")
    version = _version(doc, data)
    for key in data:
        if key not in SECTIONS:
            raise StackValidationFailed(doc.location((str(key),)),
                                        reason=f"The template section is invalid: {key}")
    if "conditions" in data:
        raise StackValidationFailed(doc.location(("conditions",)), reason=_NOT_YET["conditions"])
    return HotTemplate(
        doc=doc,
        version=version,
        description=str(data.get("description") or ""),
        parameters=parse_schemas(doc, data.get("parameters")),
        resources=_resources(doc, data.get("resources"), version),
        outputs=_outputs(doc, data.get("outputs"), version),
    )


def _version(doc: SourceDocument, data: Mapping[str, Any]) -> HotVersion:
    if HOT_KEY not in data:
        for key in CFN_KEYS:
            if key in data:
                raise StackValidationFailed(
                    doc.location((key,)),
                    reason=f"Template format {key} is not supported by Kiln yet; use HOT.")
        raise StackValidationFailed(
            doc.location(()), reason="Template not in valid format: Template format version "
                                     "not found.")
    version = find_hot_version(data[HOT_KEY])
    if version is None:
        raise InvalidTemplateVersion(doc.location((HOT_KEY,)),
                                     given=f"{HOT_KEY}: {data[HOT_KEY]}", key=HOT_KEY,
                                     known=known_hot_names())
    return version


def _section(doc: SourceDocument, data: Any, name: str) -> Mapping[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise StackValidationFailed(doc.location((name,)),
                                    reason=f'The template section "{name}" must be a map')
    return data


def _resources(doc: SourceDocument, data: Any, version: HotVersion
               ) -> dict[str, ResourceDefinition]:
    result = {}
    for name, body in _section(doc, data, "resources").items():
        path = ("resources", str(name))
        if not isinstance(body, Mapping):
            raise StackValidationFailed(doc.location(path),
                                        reason=f'Resource "{name}" must be a map')
        for key in body:
            if key not in RESOURCE_KEYS:
                raise StackValidationFailed(doc.location((*path, str(key))),
                                            reason=f'"{key}" is not a valid keyword inside a '
                                                   'resource definition')
            if key in _NOT_YET:
                raise StackValidationFailed(doc.location((*path, key)), reason=_NOT_YET[key])
        kind = body.get("type")
        if not isinstance(kind, str) or not kind:
            raise StackValidationFailed(doc.location((*path, "type")),
                                        reason=f'Resource "{name}" has no type')
        policy = body.get("deletion_policy", "Delete")
        if str(policy).lower() != "delete":
            raise StackValidationFailed(
                doc.location((*path, "deletion_policy")),
                reason=f'deletion_policy "{policy}" is not supported by Kiln yet')
        depends = body.get("depends_on") or []
        depends = [depends] if isinstance(depends, str) else depends
        if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
            raise StackValidationFailed(doc.location((*path, "depends_on")),
                                        reason="depends_on must be a resource name or a list "
                                               "of them")
        properties = parse_value(doc, body.get("properties") or {}, (*path, "properties"),
                                 version)
        # NOTE: checked after parsing: {get_param: p} is a map of text but a call once
        # parsed, and the IR needs a map of property names.
        if not isinstance(properties, Mapping):
            raise StackValidationFailed(doc.location((*path, "properties")),
                                        reason="properties must be a map")
        result[str(name)] = ResourceDefinition(
            name=str(name), type=kind,
            properties=properties,
            depends_on=tuple(depends),
            metadata=body.get("metadata") or {},
            description=str(body.get("description") or ""),
            location=doc.location(path),
        )
    return result


def _outputs(doc: SourceDocument, data: Any, version: HotVersion
             ) -> dict[str, OutputDefinition]:
    result = {}
    for name, body in _section(doc, data, "outputs").items():
        path = ("outputs", str(name))
        if not isinstance(body, Mapping) or "value" not in body:
            raise StackValidationFailed(doc.location(path),
                                        reason=f'Output "{name}" must be a map with a value')
        for key in body:
            if key not in OUTPUT_KEYS:
                raise StackValidationFailed(doc.location((*path, str(key))),
                                            reason=f'"{key}" is not a valid keyword inside an '
                                                   'output definition')
            if key == "condition":
                raise StackValidationFailed(doc.location((*path, key)),
                                            reason='The output key "condition" is not '
                                                   'supported by Kiln yet.')
        result[str(name)] = OutputDefinition(
            name=str(name),
            value=parse_value(doc, body["value"], (*path, "value"), version),
            description=str(body.get("description") or "No description given"),
            location=doc.location(path),
        )
    return result
