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
    deletion_policy: str = "Delete"
    external_id: Any = None  # a parsed value: the physical id of a thing to take over


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
