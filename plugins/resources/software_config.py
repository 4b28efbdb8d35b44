"""``OS::Heat::SoftwareConfig``, ``OS::Heat::StructuredConfig`` and
``OS::Heat::SoftwareComponent``: immutable configs in the tenant's software_configs.

Each config is a row of Heat's software_configs API (``Runtime.software_configs``), named
by a uuid4 as in Heat, which is the physical id: ``openstack software config show <id>``
shows it and a deployment reads it. The resource also keeps the config in its private
``data``, in that API's shape (``name``, ``group``, ``config``, ``inputs``, ``outputs``,
``options``): the ``config`` attribute is read from there (attributes never reach the
store), and so stacks created before configs had rows keep answering ``get_attr``.
``CloudConfig`` and ``MultipartMime`` build on the same base.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

from engine.errors import StackValidationFailed
from engine.resources.base import Resource, Token
from engine.schema import (
    CONFIG_INPUT_SCHEMA,
    CONFIG_OUTPUT_SCHEMA,
    LIST,
    MAP,
    STRING,
    Attribute,
    Length,
    Property,
    config_input_record,
    config_output_record,
    typed_config_default,
)
from engine.vocabulary import Action

UNGROUPED = "Heat::Ungrouped"
#: The group of a SoftwareComponent's config: a deployment of it runs the configs of
#: the action at hand (Heat's in-instance hook for components reads it so).
COMPONENT_GROUP = "component"

GROUP = Property(
    STRING,
    "Namespace to group this software config by when delivered to a server. This may "
    "imply what configuration tool is going to perform the configuration.",
    # Kiln's bound (the column's; Heat's database refuses more with a 500).
    default=UNGROUPED, constraints=(Length(max=255),),
)

OPTIONS = Property(
    MAP,
    "Map containing options specific to the configuration management tool used by this "
    "resource.",
)

INPUTS = Property(
    LIST,
    "Schema representing the inputs that this software config is expecting.",
    schema=Property(MAP, schema=CONFIG_INPUT_SCHEMA),
)

OUTPUTS = Property(
    LIST,
    "Schema representing the outputs that this software config will produce.",
    schema=Property(MAP, schema=CONFIG_OUTPUT_SCHEMA),
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
        config_id = self.physical_id or str(uuid.uuid4())
        record = self.data
        # The row under the id recorded (a resumed create's is found and kept).
        self.runtime.software_configs().create_config(
            config_id=config_id, name=record.get("name"), group=record.get("group"),
            config=record.get("config"), inputs=record.get("inputs") or [],
            outputs=record.get("outputs") or [], options=record.get("options"))
        if self.physical_id is None:
            self.set_physical_id(config_id)
        return None

    def handle_delete(self) -> Token:
        # A config of a stack created before configs had rows has none: nothing to do.
        if self.physical_id is not None:
            self.runtime.software_configs().delete_config(self.physical_id)
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
            "inputs": [config_input_record(i) for i in properties.get("inputs") or []],
            "outputs": [config_output_record(o) for o in properties.get("outputs") or []],
            "options": properties.get("options") or {},
        }


class SoftwareConfig(StoredConfig):
    """A resource for describing and storing software configuration.

    The config is immutable: any change to the definition makes a new config and deletes
    the old one. Inputs and outputs describe what the config script consumes and
    produces. ``get_resource`` gives the config's id (``openstack software config show``
    shows it) and ``get_attr [c, config]`` the config itself.
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
            typed_config_default(item, f"inputs[{index}].default")


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


CONFIG_ACTIONS = (Action.CREATE, Action.DELETE, Action.UPDATE, Action.SUSPEND, Action.RESUME)


class SoftwareComponent(StoredConfig):
    """A resource for describing and storing a software component.

    This resource is similar to OS::Heat::SoftwareConfig. In contrast to SoftwareConfig
    which allows for storing only one configuration (e.g. one script), SoftwareComponent
    allows for storing multiple configurations to address handling of all lifecycle hooks
    (CREATE, UPDATE, SUSPEND, RESUME, DELETE) for a software component in one place.
    """

    support_version: ClassVar[str] = "2014.2"

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "configs": Property(
            LIST,
            "The list of configurations for the different lifecycle actions of the "
            "represented software component.",
            required=True, constraints=(Length(min=1),),
            schema=Property(MAP, schema={
                "actions": Property(
                    LIST,
                    "Lifecycle actions to which the configuration applies. The string "
                    "values provided for this property can include the standard resource "
                    "actions CREATE, DELETE, UPDATE, SUSPEND and RESUME supported by Heat.",
                    default=[Action.CREATE, Action.UPDATE], constraints=(Length(min=1),),
                    schema=Property(STRING)),
                "config": SoftwareConfig.properties_schema["config"],
                "tool": Property(
                    STRING,
                    "The configuration tool used to actually apply the configuration on a "
                    "server. This string property has to be understood by in-instance "
                    "tools running inside deployed servers.",
                    required=True),
            }),
        ),
        "inputs": INPUTS,
        "outputs": OUTPUTS,
        "options": OPTIONS,
    }

    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "configs": Attribute(
            "The list of configurations for the different lifecycle actions of the "
            "represented software component.", type=LIST),
    }

    @classmethod
    def validate_properties(cls, properties: Mapping[str, Any]) -> None:
        # One config per action: nothing would say in which order to run two.
        seen: set[str] = set()
        for entry in properties.get("configs") or []:
            actions = entry.get("actions") or []
            if any(action in seen for action in actions):
                raise StackValidationFailed(
                    reason="Defining more than one configuration for the same action in "
                           "SoftwareComponent is not allowed.")
            seen.update(actions)
        for index, item in enumerate(properties.get("inputs") or []):
            typed_config_default(item, f"inputs[{index}].default")

    def render_config(self) -> Any:
        # The configs list rides in the config's ``config``, as Heat stores it.
        return {"configs": [dict(entry) for entry in self.properties["configs"]]}

    def config_group(self) -> str:
        return COMPONENT_GROUP

    def get_attribute(self, name: str) -> Any:
        if name == "configs" and self.physical_id is not None:
            config = self.data.get("config")
            return config.get("configs") if isinstance(config, Mapping) else None
        return None
