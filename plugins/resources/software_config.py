"""``OS::Heat::SoftwareConfig`` and ``OS::Heat::StructuredConfig``: stored config objects.

Heat keeps a software config in its ``software_configs`` API; Kiln has no such API, so a
config lives in the resource's private ``data``, in the shape that API shows it (``name``,
``group``, ``config``, ``inputs``, ``outputs``, ``options``), and its id, a uuid4 as in
Heat, is the physical id. ``CloudConfig`` and ``MultipartMime`` build on the same base.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from engine.errors import StackValidationFailed
from engine.resources.base import Resource, Token
from engine.schema import (
    ANY,
    BOOLEAN,
    LIST,
    MAP,
    NUMBER,
    STRING,
    AllowedValues,
    Attribute,
    Property,
)

UNGROUPED = "Heat::Ungrouped"

#: Heat's software-config I/O types: template parameter types, CFN spelling.
IO_TYPES = ("String", "Number", "CommaDelimitedList", "Json", "Boolean")

GROUP = Property(
    STRING,
    "Namespace to group this software config by when delivered to a server. This may "
    "imply what configuration tool is going to perform the configuration.",
    default=UNGROUPED,
)

OPTIONS = Property(
    MAP,
    "Map containing options specific to the configuration management tool used by this "
    "resource.",
)

INPUTS = Property(
    LIST,
    "Schema representing the inputs that this software config is expecting.",
    schema=Property(
        MAP,
        schema={
            "name": Property(STRING, "Name of the input.", required=True),
            "description": Property(STRING, "Description of the input."),
            "type": Property(
                STRING, "Type of the value of the input.",
                default="String", constraints=(AllowedValues(IO_TYPES),),
            ),
            "default": Property(ANY, "Default value for the input if none is specified."),
            "replace_on_change": Property(
                BOOLEAN,
                "Replace the deployment instead of updating it when the input value "
                "changes.",
                default=False,
            ),
        },
    ),
)

OUTPUTS = Property(
    LIST,
    "Schema representing the outputs that this software config will produce.",
    schema=Property(
        MAP,
        schema={
            "name": Property(STRING, "Name of the output.", required=True),
            "description": Property(STRING, "Description of the output."),
            "type": Property(
                STRING, "Type of the value of the output.",
                default="String", constraints=(AllowedValues(IO_TYPES),),
            ),
            "error_output": Property(
                BOOLEAN,
                "Denotes that the deployment is in an error state if this output has a "
                "value.",
                default=False,
            ),
        },
    ),
)

CONFIG_ATTRIBUTES: Mapping[str, Attribute] = {
    "config": Attribute("The config value of the software config.", type=STRING),
}


class StoredConfig(Resource):
    """Base of the config types: stores one immutable config, named by a uuid4.

    A subclass says what the config is (:meth:`render_config`) and in which group. None
    of the properties is update_allowed, so any change makes a new config (a replacement),
    as Heat's immutable software configs do.
    """

    support_version: ClassVar[str] = "2014.1"
    attributes_schema: ClassVar[Mapping[str, Attribute]] = CONFIG_ATTRIBUTES

    def render_config(self) -> Any:
        """The config as stored and as the ``config`` attribute shows it."""
        return self.properties["config"]

    def config_group(self) -> str:
        return str(self.properties["group"])

    def handle_create(self) -> Token:
        # A resumed create already has its config: rendering again could differ (a MIME
        # boundary is random) from what was recorded with the id.
        if self.physical_id is None:
            self.data.update(self._record())
            self.set_physical_id(str(uuid.uuid4()))
        return None

    def get_attribute(self, name: str) -> Any:
        # Heat reads the config back through its id: null until the config exists.
        if name == "config" and self.physical_id is not None:
            return self.data.get("config")
        return None

    def _record(self) -> dict[str, Any]:
        """The config in the shape of Heat's software_configs API (the id apart)."""
        properties = self.properties
        return {
            "name": self.physical_resource_name(),
            "group": self.config_group(),
            "config": self.render_config(),
            "inputs": [_input_record(i) for i in properties.get("inputs") or []],
            "outputs": [_output_record(o) for o in properties.get("outputs") or []],
            "options": properties.get("options") or {},
        }


class SoftwareConfig(StoredConfig):
    """A resource for describing and storing software configuration.

    The config is immutable: any change to the definition makes a new config and deletes
    the old one. Inputs and outputs describe what the config script consumes and
    produces. Kiln stores the config with the resource (there is no software_configs
    API); ``get_resource`` gives its id and ``get_attr [c, config]`` the config itself.
    """

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "group": GROUP,
        "config": Property(
            STRING,
            "Configuration script or manifest which specifies what actual configuration "
            "is performed.",
        ),
        "options": OPTIONS,
        "inputs": INPUTS,
        "outputs": OUTPUTS,
    }

    @classmethod
    def validate_properties(cls, properties: Mapping[str, Any]) -> None:
        # Heat's config API refuses an input whose default does not fit its type.
        for index, item in enumerate(properties.get("inputs") or []):
            _typed_default(item, f"inputs[{index}].default")


class StructuredConfig(SoftwareConfig):
    """A resource which has same logic with OS::Heat::SoftwareConfig.

    Its ``config`` is a map rather than a string, for configuration tools whose syntax is
    YAML or JSON; the ``config`` attribute returns the map.
    """

    properties_schema: ClassVar[Mapping[str, Property]] = {
        **SoftwareConfig.properties_schema,
        "config": Property(
            MAP,
            "Map representing the configuration data structure which will be serialized "
            "to JSON format.",
        ),
    }


def _input_record(item: Mapping[str, Any]) -> dict[str, Any]:
    # As Heat persists an input: unset keys left out, replace_on_change only when set.
    record = {k: v for k, v in item.items() if v is not None and k != "replace_on_change"}
    if "default" in record:
        record["default"] = _typed_default(item, "default")
    if item.get("replace_on_change"):
        record["replace_on_change"] = True
    return record


def _output_record(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if v is not None}


def _typed_default(item: Mapping[str, Any], path: str) -> Any:
    """An input's default converted to the input's type; raises when it cannot be."""
    value, kind = item.get("default"), item.get("type") or "String"
    # NOTE: Heat once typed every default as a string, and still lets "" through for any
    # type so that old configs keep working.
    if value is None or (value == "" and kind != "String"):
        return value
    if kind == "String":
        return Property(STRING).coerce(value, path)
    if kind == "Number":
        return Property(NUMBER).coerce(value, path)
    if kind == "Boolean":
        return Property(BOOLEAN).coerce(value, path)
    if kind == "CommaDelimitedList":
        # Heat splits on commas and keeps the spaces.
        if isinstance(value, str):
            return value.split(",")
        if isinstance(value, Sequence):
            return list(value)
        raise StackValidationFailed(
            reason=f"Property error: {path}: Value '{value}' is not a list")
    # Json: a map, or a string or list kept as JSON text, as Heat converts them.
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        return json.dumps(value)
    raise StackValidationFailed(reason=f"Property error: {path}: Value '{value}' is not a map")
