"""A parsed template, whatever its format (HOT or CFN): definitions with function trees.

``engine.template.hot`` and ``engine.template.cfn`` each check their format's shape and
produce these; ``engine.ir.build`` never needs to know which format it was.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from engine.errors import Location
from engine.template.parameters import ParameterSchema
from engine.template.parse import SourceDocument
from engine.template.versions import HotVersion


@dataclasses.dataclass(frozen=True)
class ResourceDefinition:
    name: str
    type: str
    properties: Any
    depends_on: tuple[str, ...]
    metadata: Any
    description: str
    location: Location
    condition: Any = True  # a parsed condition: bool, ConditionRef or a function
    # Heat's name of the policy, or a parsed function of parameters that engine.ir.build
    # decides (``{if: [c, Retain]}``, ``{get_param: policy}``), as Heat resolves it.
    deletion_policy: Any = "Delete"
    external_id: Any = None  # a parsed value: the physical id of a thing to take over
    update_policy: Any = None  # a parsed map, checked against the type's schema


DELETION_POLICIES = ("Delete", "Retain", "Snapshot")


def deletion_policy_name(value: Any, version: HotVersion) -> str | None:
    """The policy ``value`` names, as Heat spells it, or None when it names none; HOT
    accepts lower case from 2016-10-14 (Heat's ``deletion_policies`` of that version)."""
    lower = not version.is_cfn and version.has_conditions
    for policy in DELETION_POLICIES:
        if value == policy or (lower and value == policy.lower()):
            return policy
    return None


@dataclasses.dataclass(frozen=True)
class OutputDefinition:
    name: str
    value: Any
    description: str
    location: Location
    condition: Any = True


@dataclasses.dataclass(frozen=True)
class Template:
    """A parsed template of any format: what the IR is built from."""

    doc: SourceDocument
    version: HotVersion
    description: str
    parameters: Mapping[str, ParameterSchema]
    resources: Mapping[str, ResourceDefinition]
    outputs: Mapping[str, OutputDefinition]
    conditions: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    parameter_groups: tuple[Mapping[str, Any], ...] = ()
    # The request's files: get_file already read them; provider templates are read here.
    files: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def location(self, path: tuple[str, ...]) -> Location:
        """Where ``path``, written with HOT's section and key names (``("resources",
        name, "properties", key)``), is in this template's own format."""
        if self.version.is_cfn and path:
            path = (_CFN_NAMES.get(path[0], path[0]), *path[1:])
            if path[0] == "Resources" and len(path) > 2:
                path = (*path[:2], _CFN_NAMES.get(path[2], path[2]), *path[3:])
        return self.doc.location(path)


# HOT's names of the sections and resource keys CFN spells otherwise.
_CFN_NAMES = {"resources": "Resources", "outputs": "Outputs", "parameters": "Parameters",
              "conditions": "Conditions", "type": "Type", "properties": "Properties",
              "metadata": "Metadata", "depends_on": "DependsOn",
              "deletion_policy": "DeletionPolicy", "update_policy": "UpdatePolicy",
              "condition": "Condition"}
