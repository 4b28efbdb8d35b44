"""``OS::Heat::ResourceGroup`` and ``OS::Heat::ResourceChain``: many resources from one
definition (or a list of types), as a child stack.

The child's template is generated: members named ``"0"``, ``"1"``, … (a chain's depend
each on the one before), and outputs that carry every member's reference id and all of
its attributes, so the group's attributes are read from its own data once the child
settles.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from engine.resources.nested import ChildStackResource
from engine.schema import (
    BOOLEAN,
    INTEGER,
    LIST,
    MAP,
    STRING,
    AllowedValues,
    Attribute,
    Length,
    Property,
    Range,
)

# The version of the generated child template: one with get_attr's all-attributes form.
_CHILD_VERSION = "2016-10-14"


def _child_template(members: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "heat_template_version": _CHILD_VERSION,
        "resources": dict(members),
        "outputs": {
            "refs": {"value": [{"get_resource": name} for name in members]},
            "attributes": {"value": {name: {"get_attr": [name]} for name in members}},
        },
    }


class _Members(ChildStackResource):
    """The attributes a group and a chain share."""

    allow_unknown_attributes: ClassVar[bool] = True

    def members(self) -> list[str]:
        raise NotImplementedError

    def get_attribute(self, name: str) -> Any:
        if not self.physical_id:
            return None
        outputs = self.outputs()
        names = self.members()
        refs = dict(zip(names, outputs.get("refs") or [], strict=False))
        attributes: Mapping[str, Mapping[str, Any]] = outputs.get("attributes") or {}
        if name == "refs":
            return [refs.get(n) for n in names]
        if name == "refs_map":
            return refs
        if name == "attributes":
            # get_attr: [group, attributes, <attr>] -> {member: value}
            keys = {key for member in attributes.values() for key in (member or {})}
            return {key: {n: (attributes.get(n) or {}).get(key) for n in names}
                    for key in keys}
        if name.startswith("resource."):
            _, member, *rest = name.split(".", 2)
            if not rest:
                return refs.get(member)
            return (attributes.get(member) or {}).get(rest[0])
        return [(attributes.get(n) or {}).get(name) for n in names]


class ResourceGroup(_Members):
    """Creates one or more identically configured nested resources.

    ``resource_def`` is the member's definition; ``index_var`` in its properties becomes
    each member's index. ``removal_policies`` name members to remove first when the
    count goes down; their names are not used again."""

    support_version: ClassVar[str] = "2014.1"

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "count": Property(INTEGER, "The number of resources to create.", default=1,
                          update_allowed=True, constraints=(Range(0, None),)),
        "index_var": Property(STRING, "A variable that this resource will use to replace "
                                      "with the current index of a given resource in the "
                                      "group.", default="%index%", update_allowed=True,
                              constraints=(Length(3, None),)),
        "resource_def": Property(MAP, "Resource definition for the resources in the group.",
                                 required=True, update_allowed=True, schema={
                                     "type": Property(STRING, "The type of the resources in "
                                                              "the group.", required=True),
                                     "properties": Property(MAP, "Property values for the "
                                                                 "resources in the group."),
                                     "metadata": Property(MAP, "Supplied metadata for the "
                                                               "resources in the group."),
                                 }),
        "removal_policies": Property(
            LIST, "Policies for removal of resources on update.", default=[],
            update_allowed=True, schema=Property(MAP, schema={
                "resource_list": Property(LIST, "List of resources to be removed when "
                                                "doing an update which requires removal of "
                                                "specific resources.", default=[]),
            })),
        "removal_policies_mode": Property(
            STRING, "How to handle changes to removal_policies on update.", default="append",
            update_allowed=True, constraints=(AllowedValues(("append", "update")),)),
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "refs": Attribute("A list of resource IDs for the resources in the group.",
                          type=LIST),
        "refs_map": Attribute("A map of resource names to IDs for the resources in the "
                              "group.", type=MAP),
        "attributes": Attribute("A map of resource names to the specified attribute of "
                                "each individual resource.", type=MAP),
        "removed_rsrc_list": Attribute("A list of removed resource names.", type=LIST),
    }

    def removed(self) -> list[str]:
        """Members removal policies named, in the order named: never used again."""
        named = [str(n) for policy in self.properties.get("removal_policies") or []
                 for n in (policy or {}).get("resource_list") or []]
        if self.properties.get("removal_policies_mode") == "update":
            kept: list[str] = []
        else:
            kept = list(self.data.get("removed") or [])
        return kept + [n for n in named if n not in kept]

    def members(self) -> list[str]:
        removed, index = set(self.removed()), 0
        names: list[str] = []
        while len(names) < self.properties.get("count", 1):
            if str(index) not in removed:
                names.append(str(index))
            index += 1
        return names

    def child_definition(self) -> tuple[Any, str, Mapping[str, Any], int | None]:
        self.data["removed"] = self.removed()
        definition = self.properties["resource_def"]
        index_var = self.properties.get("index_var") or "%index%"
        members = {}
        for name in self.members():
            member: dict[str, Any] = {"type": definition["type"]}
            if definition.get("properties"):
                member["properties"] = _substitute(definition["properties"], index_var, name)
            if definition.get("metadata"):
                member["metadata"] = definition["metadata"]
            members[name] = member
        return _child_template(members), f"{self.name}.group", {}, None

    def get_attribute(self, name: str) -> Any:
        if name == "removed_rsrc_list":
            return list(self.data.get("removed") or [])
        return super().get_attribute(name)


class ResourceChain(_Members):
    """Creates one resource of each listed type; unless ``concurrent``, each depends on
    the one before it."""

    support_version: ClassVar[str] = "6.0.0"

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "resources": Property(LIST, "The list of resource types to create. This list may "
                                    "contain type names or aliases defined in the resource "
                                    "registry.", required=True, update_allowed=True,
                              schema=Property(STRING)),
        "concurrent": Property(BOOLEAN, "If true, the resources in the chain will be created "
                                        "concurrently.", default=False, update_allowed=True),
        "resource_properties": Property(MAP, "Properties to pass to each resource being "
                                             "created in the chain.", default={},
                                        update_allowed=True),
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "refs": Attribute("A list of resource IDs for the resources in the chain.",
                          type=LIST),
        "refs_map": Attribute("A map of resource names to IDs for the resources in the "
                              "chain.", type=MAP),
        "attributes": Attribute("A map of resource names to the specified attribute of "
                                "each individual resource.", type=MAP),
    }

    def members(self) -> list[str]:
        return [str(i) for i in range(len(self.properties.get("resources") or []))]

    def child_definition(self) -> tuple[Any, str, Mapping[str, Any], int | None]:
        types = self.properties.get("resources") or []
        members: dict[str, dict[str, Any]] = {}
        for index, kind in enumerate(types):
            member: dict[str, Any] = {"type": kind}
            if self.properties.get("resource_properties"):
                member["properties"] = dict(self.properties["resource_properties"])
            if index and not self.properties.get("concurrent"):
                member["depends_on"] = [str(index - 1)]
            members[str(index)] = member
        return _child_template(members), f"{self.name}.chain", {}, None


def _substitute(value: Any, index_var: str, index: str) -> Any:
    if isinstance(value, str):
        return value.replace(index_var, index)
    if isinstance(value, Mapping):
        return {_substitute(k, index_var, index): _substitute(v, index_var, index)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, index_var, index) for v in value]
    return value
