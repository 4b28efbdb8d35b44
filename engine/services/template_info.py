"""What Kiln tells clients about templates: the versions and functions it accepts, and a
starting template generated from a resource type's schemas.

Everything here is computed from static data (``engine.template.versions`` and a resource
class), so nothing reads the database. The lists are Kiln's own, not Heat's: a version or a
function Kiln would refuse in a template is not offered here either.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from engine.errors import BadRequest, NotFound
from engine.resources.base import Resource
from engine.schema import (
    ANY,
    BOOLEAN,
    INTEGER,
    LIST,
    MAP,
    NUMBER,
    STRING,
    AllowedPattern,
    AllowedValues,
    Length,
    Property,
    Range,
)
from engine.template.functions import IMPLEMENTED
from engine.template.versions import CFN_VERSIONS, HOT_KEY, HOT_VERSIONS, HotVersion

TEMPLATE_TYPES = ("cfn", "hot")

# The one-line descriptions Heat gives its function classes, so that clients print the same
# text against either server. ``list_join`` changed class (and text) in 2015-10-15.
_SUBSTITUTIONS = "A function for performing string substitutions."
_DESCRIPTIONS: Mapping[str, str] = {
    "get_attr": "A function for resolving resource attributes.",
    "get_param": "A function for resolving parameter references.",
    "get_resource": "A function for resolving resource references.",
    "get_file": "A function for including a file inline.",
    "list_join": "A function for joining one or more lists of strings.",
    "str_replace": _SUBSTITUTIONS,
    "str_replace_strict": _SUBSTITUTIONS,
    "str_replace_vstrict": _SUBSTITUTIONS,
    "str_split": "A function for splitting delimited strings into a list.",
    "map_merge": "A function for merging maps.",
    "map_replace": "A function for performing substitutions on maps.",
    "resource_facade": "A function for retrieving data in a parent provider template.",
    "repeat": "A function for iterating over a list of items or a dict of keys.",
    "digest": "A function for performing digest operations.",
    "yaql": "A function for executing a yaql expression.",
    "if": "A function to return corresponding value based on condition evaluation.",
    "filter": "A function for filtering out values from lists.",
    # Heat's make_url class carries map_replace's docstring; clients print it as is.
    "make_url": "A function for performing substitutions on maps.",
    "list_concat": "A function for extending lists.",
    "list_concat_unique": "A function for extending lists with unique items.",
    "contains": "A function for checking whether specific value is in sequence.",
    "equals": "A function for comparing whether two values are equal.",
    "not": "A function that acts as a NOT operator on a condition.",
    "and": "A function that acts as an AND operator on conditions.",
    "or": "A function that acts as an OR operator on conditions.",
    "Ref": "A function for resolving parameters or resource references.",
    "Fn::FindInMap": "A function for resolving keys in the template mappings.",
    "Fn::GetAZs": "A function for retrieving the availability zones.",
    "Fn::GetAtt": "A function for resolving resource attributes.",
    "Fn::Select": "A function for selecting an item from a list or map.",
    "Fn::Join": "A function for joining strings.",
    "Fn::Split": "A function for splitting strings.",
    "Fn::Replace": _SUBSTITUTIONS,
    "Fn::Base64": "A placeholder function for converting to base64.",
    "Fn::MemberListToMap": ("A function to convert lists with enumerated keys and values "
                            "to mapping."),
    "Fn::ResourceFacade": "A function for retrieving data in a parent provider template.",
    "Fn::If": "A function to return corresponding value based on condition evaluation.",
    "Fn::Equals": "A function for comparing whether two values are equal.",
    "Fn::Not": "A function that acts as a NOT operator on a condition.",
    "Fn::And": "A function that acts as an AND operator on conditions.",
    "Fn::Or": "A function that acts as an OR operator on conditions.",
}
# Texts that changed with the implementing class in a later version: (since, older text).
_OLDER_DESCRIPTIONS: Mapping[str, tuple[str, str]] = {
    "list_join": ("2015-10-15", "A function for joining strings."),
    "repeat": ("2016-10-14", "A function for iterating over a list of items."),
}

# Property type -> parameter type of the generated template, per template format. Heat has
# no entry for its "Any" type (its generator fails); a JSON parameter carries any map or
# list, which is what an untyped property usually holds.
_HOT_PARAM_TYPES: Mapping[str, str] = {
    STRING: "string", NUMBER: "number", INTEGER: "number", BOOLEAN: "boolean",
    MAP: "json", LIST: "comma_delimited_list", ANY: "json",
}
_CFN_PARAM_TYPES: Mapping[str, str] = {
    STRING: "String", NUMBER: "Number", INTEGER: "Number", BOOLEAN: "Boolean",
    MAP: "Json", LIST: "CommaDelimitedList", ANY: "Json",
}
# Versions of the generated templates: Heat's choice, kept so that diffs against Heat's
# output stay empty.
_HOT_GENERATED_VERSION = "2016-10-14"
_CFN_GENERATED_VERSION = "2012-12-12"


@dataclasses.dataclass(frozen=True)
class TemplateVersionInfo:
    version: str  # "heat_template_version.2018-08-31"
    type: str  # "hot"
    aliases: tuple[str, ...]  # ("heat_template_version.rocky",)


@dataclasses.dataclass(frozen=True)
class TemplateFunctionInfo:
    name: str
    description: str


def template_versions() -> list[TemplateVersionInfo]:
    """The template versions Kiln accepts in Heat's order: the two CFN formats, then HOT
    oldest first."""
    return [TemplateVersionInfo(version=v.full_name, type="cfn" if v.is_cfn else "hot",
                                aliases=(f"{HOT_KEY}.{v.alias}",) if v.alias else ())
            for v in (*CFN_VERSIONS, *HOT_VERSIONS)]


def template_functions(version_name: str, *, with_condition: bool = False
                       ) -> list[TemplateFunctionInfo]:
    """The functions a template of ``version_name`` (``heat_template_version.<date>`` or
    ``….<alias>``) may call in Kiln today, sorted by name; ``with_condition`` adds the
    condition functions (Heat merges the two tables, so a name is listed once).

    Only functions Kiln evaluates are listed: the CFN functions of the oldest versions
    are refused at create with a 400 until the CFN format lands, so offering them would
    mislead.
    """
    version = _find_version(version_name)
    offered = version.functions | (version.condition_functions if with_condition
                                   else frozenset())
    names = sorted(offered & IMPLEMENTED)
    return [TemplateFunctionInfo(name, _description(name, version)) for name in names]


def parse_template_type(value: str | None) -> str:
    """``?template_type=`` as Heat reads it: absent means cfn, case does not matter."""
    if value is None:
        return "cfn"
    if value.lower() not in TEMPLATE_TYPES:
        raise BadRequest(reason=f'Template type is not supported: Invalid template type '
                                f'"{value}", valid types are: cfn, hot.')
    return value.lower()


def resource_template(type_name: str, cls: type[Resource], template_type: str
                      ) -> dict[str, Any]:
    """A template with one resource of ``type_name`` whose every property comes from a
    parameter of the same name, and one output per attribute plus ``OS::stack_id``.
    Heat's layout: the resource is named after the Python class. Heat also outputs the
    ``show`` attribute, which Kiln cannot resolve yet: left out, so that the HOT form
    creates a stack as it comes.

    The CFN form (Heat's default) is a ``HeatTemplateFormatVersion`` template, which Kiln
    accepts as input too.
    """
    resource_name = cls.__name__
    description = f"Initial template of {resource_name}"
    attributes = {name: attr.description for name, attr in cls.attributes_schema.items()}
    schema = cls.properties_schema
    if template_type == "hot":
        return {
            "heat_template_version": _HOT_GENERATED_VERSION,
            "description": description,
            "parameters": {name: _hot_parameter(prop) for name, prop in schema.items()},
            "resources": {resource_name: {
                "type": type_name,
                "properties": {name: {"get_param": name} for name in schema},
            }},
            "outputs": {
                **{name: {"value": {"get_attr": [resource_name, name]}, "description": text}
                   for name, text in attributes.items()},
                "OS::stack_id": {"value": {"get_resource": resource_name}},
            },
        }
    return {
        "HeatTemplateFormatVersion": _CFN_GENERATED_VERSION,
        "Description": description,
        "Parameters": {name: _cfn_parameter(prop) for name, prop in schema.items()},
        "Resources": {resource_name: {
            "Type": type_name,
            "Properties": {name: _cfn_property(name, prop) for name, prop in schema.items()},
        }},
        "Outputs": {
            **{name: {"Value": {"Fn::GetAtt": [resource_name, name]}, "Description": text}
               for name, text in attributes.items()},
            "OS::stack_id": {"Value": {"Ref": resource_name}},
        },
    }


def _find_version(version_name: str) -> HotVersion:
    key, _, value = version_name.partition(".")
    for version in (*CFN_VERSIONS, *HOT_VERSIONS):
        if version.key == key and value in (version.date, version.alias):
            return version
    # Heat's words are "Template with version <v> not found"; NotFound keeps Kiln's form.
    raise NotFound(what=f"Template with version {version_name}")


def _description(name: str, version: HotVersion) -> str:
    if name in _OLDER_DESCRIPTIONS and not version.since(_OLDER_DESCRIPTIONS[name][0]):
        return _OLDER_DESCRIPTIONS[name][1]
    return _DESCRIPTIONS.get(name, "")


def _hot_parameter(prop: Property) -> dict[str, Any]:
    param: dict[str, Any] = {"type": _HOT_PARAM_TYPES[prop.type]}
    if prop.description:
        param["description"] = prop.description
    if prop.default is not None:
        param["default"] = prop.default
    constraints = [d for d in (c.describe() for c in prop.constraints) if d]
    if constraints:
        param["constraints"] = constraints
    return param


def _cfn_parameter(prop: Property) -> dict[str, Any]:
    param: dict[str, Any] = {"Type": _CFN_PARAM_TYPES[prop.type]}
    if prop.description:
        param["Description"] = prop.description
    if prop.default is not None:
        param["Default"] = prop.default
    for constraint in prop.constraints:
        if isinstance(constraint, Length):
            param.update(_bounds(constraint.min, constraint.max, "MinLength", "MaxLength"))
        elif isinstance(constraint, Range):
            param.update(_bounds(constraint.min, constraint.max, "MinValue", "MaxValue"))
        elif isinstance(constraint, AllowedValues):
            param["AllowedValues"] = list(constraint.values)
        elif isinstance(constraint, AllowedPattern):
            param["AllowedPattern"] = constraint.pattern
    if prop.type == BOOLEAN:
        # A CFN parameter has no boolean check of its own: Heat spells the accepted words.
        param["AllowedValues"] = ["True", "true", "False", "false"]
    return param


def _cfn_property(name: str, prop: Property) -> dict[str, Any]:
    if prop.type == LIST:
        return {"Fn::Split": [",", {"Ref": name}]}
    return {"Ref": name}


def _bounds(low: float | None, high: float | None, low_key: str, high_key: str
            ) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if low is not None:
        found[low_key] = low
    if high is not None:
        found[high_key] = high
    return found
