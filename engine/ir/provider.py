"""Template ("provider") resources: a resource whose type is a template file.

The file's parameters are the resource's properties and its outputs the resource's
attributes, so the IR checks a provider resource like any other; the nested template is
also built, with the property values known so far, so an error in it is reported at
create time naming the nested file and line (``web.yaml:14 resources.port…``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from engine.errors import StackValidationFailed
from engine.schema import ANY, BOOLEAN, NUMBER, STRING, Attribute, Property
from engine.template.loader import load
from engine.template.model import Template
from engine.template.parse import document

# A parameter type as the property that feeds it; the nested stack converts the rest
# (a list or its comma-separated text, a map or its JSON) exactly as a parameter does.
_PROPERTY_TYPES = {"string": STRING, "number": NUMBER, "boolean": BOOLEAN}


@dataclasses.dataclass(frozen=True)
class ProviderType:
    """A ``TypeSchema`` read from a template file."""

    name: str
    template: Template
    properties_schema: Mapping[str, Property]
    attributes_schema: Mapping[str, Attribute]
    allow_unknown_properties: bool = False
    allow_unknown_attributes: bool = False
    # A template resource takes no update policy (Heat's have none either).
    update_policy_schema: Mapping[str, Property] = dataclasses.field(default_factory=dict)

    def validate_properties(self, properties: Mapping[str, Any]) -> None:
        return None  # the nested template itself is built by engine.ir.build


def provider_type(name: str, files: Mapping[str, Any]) -> ProviderType:
    if files.get(name) is None:
        raise StackValidationFailed(reason=f'Could not fetch remote template "{name}": it is '
                                           'not in the request\'s "files"')
    template = load(document(files[name], name), files)
    properties = {
        param: Property(_PROPERTY_TYPES.get(schema.type, ANY), schema.description,
                        default=schema.default if schema.has_default else None,
                        required=not schema.has_default, update_allowed=True)
        for param, schema in template.parameters.items()}
    attributes = {output: Attribute(definition.description)
                  for output, definition in template.outputs.items()}
    return ProviderType(name, template, properties, attributes)
