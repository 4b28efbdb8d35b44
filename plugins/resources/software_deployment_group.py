"""``OS::Heat::SoftwareDeploymentGroup`` and ``OS::Heat::StructuredDeploymentGroup`` (and
their old names ``OS::Heat::SoftwareDeployments``, ``OS::Heat::StructuredDeployments``):
one deployment per server of a map, as a child stack, as Heat builds them on its
ResourceGroup.

Each entry of ``servers`` (name → server id) is a member of that name, an
``OS::Heat::SoftwareDeployment`` (or ``StructuredDeployment``) with the group's other
properties and that server. The attributes are maps by member name: ``deploy_stdouts``,
``deploy_stderrs`` and ``deploy_status_codes``, and any other name (a config's output) is
each member's attribute of that name.

As Heat's (a ResourceGroup there too), ``update_policy`` takes ``batch_create`` and
``rolling_update`` (``max_batch_size``, ``pause_time``; no ``min_in_service``): a create
or an update (of any property, Heat's ``res_def_changed``) in batches of members, in the
order ``servers`` lists them, with ResourceGroup's rollout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from engine.resources.base import Token, select_attribute
from engine.schema import DEPRECATED, INTEGER, MAP, NUMBER, Attribute, Property, Range
from engine.vocabulary import Action
from plugins.resources.resource_group import ResourceGroup, _child_template, _Members
from plugins.resources.software_deployment import (
    DEPLOYMENT_PROPERTIES,
    STATUS_CODE,
    STDERR,
    STDOUT,
    StructuredDeployment,
    check_transport,
)

#: The group's attribute → each member's.
MEMBER_ATTRIBUTES = {"deploy_stdouts": STDOUT, "deploy_stderrs": STDERR,
                     "deploy_status_codes": STATUS_CODE}
_DEPLOYMENT_KEYS = ("config", "input_values", "actions", "name", "signal_transport")


class SoftwareDeploymentGroup(ResourceGroup):
    """This resource associates a group of servers with some configuration.

    The configuration is to be deployed to all servers in the group.

    The properties work in a similar way to OS::Heat::SoftwareDeployment, and in addition
    to the attributes documented, you may pass any attribute supported by
    OS::Heat::SoftwareDeployment, including those exposing arbitrary outputs, and return a
    map of deployment names to the specified attribute.
    """

    support_version: ClassVar[str] = "5.0.0"
    member_type: ClassVar[str] = "OS::Heat::SoftwareDeployment"
    member_keys: ClassVar[tuple[str, ...]] = _DEPLOYMENT_KEYS

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "servers": Property(
            MAP,
            "A map of names and server IDs to apply configuration to. The name is "
            "arbitrary and is used as the Heat resource name for the corresponding "
            "deployment.",
            required=True, update_allowed=True,
        ),
        **{key: DEPLOYMENT_PROPERTIES[key] for key in _DEPLOYMENT_KEYS},
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "deploy_stdouts": Attribute(
            "A map of Nova names and captured stdouts from the configuration execution "
            "to each server.", type=MAP),
        "deploy_stderrs": Attribute(
            "A map of Nova names and captured stderrs from the configuration execution "
            "to each server.", type=MAP),
        "deploy_status_codes": Attribute(
            "A map of Nova names and returned status code from the configuration "
            "execution.", type=MAP),
    }

    update_policy_schema: ClassVar[Mapping[str, Property]] = {
        "rolling_update": Property(MAP, schema={
            "max_batch_size": Property(INTEGER, "The maximum number of deployments to "
                                                "replace at once.",
                                       default=1, constraints=(Range(1, None),)),
            "pause_time": Property(NUMBER, "The number of seconds to wait between batches "
                                           "of updates.",
                                   default=0, constraints=(Range(0, None),)),
        }),
        "batch_create": ResourceGroup.update_policy_schema["batch_create"],
    }

    @classmethod
    def validate_properties(cls, properties: Mapping[str, Any]) -> None:
        check_transport(properties)

    def needs_replacement(self, prop_diff: Mapping[str, Any]) -> bool:
        return False  # the child stack is updated in place, as Heat updates it

    def removed(self) -> list[str]:
        return []  # no removal policies

    def _size(self) -> int:
        return len(self.properties.get("servers") or {})

    def _names(self, size: int) -> list[str]:
        return [str(name) for name in self.properties.get("servers") or {}][:size]

    def _member(self, name: str) -> dict[str, Any]:
        servers = {str(key): value for key, value in
                   (self.properties.get("servers") or {}).items()}
        common = {key: self.properties.get(key) for key in self.member_keys
                  if self.properties.get(key) is not None}
        return {"type": self.member_type, "properties": {**common, "server": servers[name]}}

    def child_definition(self) -> tuple[Any, str, Mapping[str, Any], int | None]:
        members = {name: self._member(name) for name in self.members()}
        return _child_template(members), self._file(), {}, None

    def _file(self) -> str:
        return f"{self.name}.deployments"

    def handle_update(self, prop_diff: Mapping[str, Any]) -> Token:
        # Any property is the members' definition (Heat's res_def_changed is always true).
        policy = self.update_policy.get("rolling_update")
        if not policy:
            return super(ResourceGroup, self).handle_update(prop_diff)
        return self._start_rollout(Action.UPDATE, len(self._existing()),
                                   policy["max_batch_size"], 0, policy["pause_time"])

    def get_attribute_path(self, name: str, path: Sequence[Any]) -> Any:
        # No removed_rsrc_list of its own: every name but the three is the members'.
        return _Members.get_attribute_path(self, name, path)

    def _group_attribute(self, name: str, path: Sequence[Any], names: list[str],
                         refs: Mapping[str, Any], member_attribute: Any) -> Any:
        if name in ("refs", "attributes"):
            return super()._group_attribute(name, path, names, refs, member_attribute)
        wanted = MEMBER_ATTRIBUTES.get(name, name)
        return select_attribute({n: member_attribute(n, [wanted]) for n in names}, path)


class StructuredDeploymentGroup(SoftwareDeploymentGroup):
    """This resource associates a group of servers with some configuration.

    This resource works similar as OS::Heat::SoftwareDeploymentGroup, but for structured
    resources.
    """

    member_type: ClassVar[str] = "OS::Heat::StructuredDeployment"
    member_keys: ClassVar[tuple[str, ...]] = (*_DEPLOYMENT_KEYS, "input_key",
                                              "input_values_validate")
    properties_schema: ClassVar[Mapping[str, Property]] = {
        **SoftwareDeploymentGroup.properties_schema,
        "input_key": StructuredDeployment.properties_schema["input_key"],
        "input_values_validate":
            StructuredDeployment.properties_schema["input_values_validate"],
    }


class SoftwareDeployments(SoftwareDeploymentGroup):
    """This resource associates a group of servers with some configuration.

    The old name of OS::Heat::SoftwareDeploymentGroup, which Heat hides since 7.0.0.
    """

    support_status: ClassVar[str] = DEPRECATED
    support_version: ClassVar[str] = "2014.2"
    support_message: ClassVar[str] = "Please use OS::Heat::SoftwareDeploymentGroup instead."


class StructuredDeployments(StructuredDeploymentGroup):
    """This resource associates a group of servers with some configuration.

    The old name of OS::Heat::StructuredDeploymentGroup, which Heat hides since 7.0.0.
    """

    support_status: ClassVar[str] = DEPRECATED
    support_version: ClassVar[str] = "2014.2"
    support_message: ClassVar[str] = "Please use OS::Heat::StructuredDeploymentGroup instead."
