"""``OS::Heat::ResourceGroup`` and ``OS::Heat::ResourceChain``: many resources from one
definition (or a list of types), as a child stack.

The child's template is generated: members named ``"0"``, ``"1"``, … (a chain's depend
each on the one before), and outputs that carry every member's reference id and all of
its attributes, so the group's attributes are read from its own data once the child
settles.

A group's ``update_policy`` makes a create (``batch_create``) or an update that changes
``resource_def`` (``rolling_update``) a *rollout*: a series of child-stack operations,
one per batch (``group_rollout``), with an optional pause between them. Its progress is
kept in the resource's data, so a worker that takes the step over carries on from the
batch it reached.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from engine.errors import GroupMemberNotFound, InvalidTemplateAttribute
from engine.resources.base import Token, select_attribute
from engine.resources.nested import ChildStackResource, nested_stacks
from engine.schema import (
    BOOLEAN,
    INTEGER,
    LIST,
    MAP,
    NUMBER,
    STRING,
    AllowedValues,
    Attribute,
    Length,
    Property,
    Range,
    ResourceLimit,
)
from engine.vocabulary import Action
from plugins.resources.group_rollout import batch_members, batches

# The version of the generated child template: one with get_attr's all-attributes form.
_CHILD_VERSION = "2016-10-14"


# The token of a rollout's steps (the other tokens are the base class's).
ROLLOUT = "ROLLOUT"


def _child_template(members: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "heat_template_version": _CHILD_VERSION,
        "resources": dict(members),
        "outputs": {
            # Keyed by member: a rollout's template lists its members in the order it
            # replaces them, not by index.
            "refs_map": {"value": {name: {"get_resource": name} for name in members}},
            "attributes": {"value": {name: {"get_attr": [name]} for name in members}},
        },
    }


class _Members(ChildStackResource):
    """The attributes a group and a chain share, as Heat 27 reads them: ``resource.<n>``
    is member ``n``'s reference id, or with an attribute after it (``resource.0.name``
    or ``[group, resource.0, name, path…]``) that member's attribute; ``refs`` every
    member's reference id; ``attributes`` with a path every member's attribute by name;
    any other name every member's attribute of that name, as a list."""

    allow_unknown_attributes: ClassVar[bool] = True

    def members(self) -> list[str]:
        raise NotImplementedError

    def get_attribute(self, name: str) -> Any:
        return self.get_attribute_path(name, ())

    def all_attributes(self) -> dict[str, Any]:
        # ``attributes`` names no value without a path: Heat leaves it out here.
        return {name: self.get_attribute(name) for name in self.attributes_schema
                if name not in ("show", "attributes")}

    def get_attribute_path(self, name: str, path: Sequence[Any]) -> Any:
        if name == "attributes" and not path:
            raise InvalidTemplateAttribute(resource=self.name, key=name)
        if not self.physical_id:
            return None
        outputs = self.outputs()
        names = self.members()
        refs: Mapping[str, Any] = outputs.get("refs_map") or {}
        attributes: Mapping[str, Mapping[str, Any]] = outputs.get("attributes") or {}

        def member_attribute(member: str, attribute_path: Sequence[Any]) -> Any:
            value = (attributes.get(member) or {}).get(attribute_path[0])
            return select_attribute(value, attribute_path[1:])

        if name.startswith("resource."):
            _, member, *rest = name.split(".", 2)
            if member not in names:
                raise GroupMemberNotFound(member=member, group=self.name)
            attribute_path = [*rest, *path]
            return member_attribute(member, attribute_path) if attribute_path \
                else refs.get(member)
        return self._group_attribute(name, path, names, refs, member_attribute)

    def _group_attribute(self, name: str, path: Sequence[Any], names: list[str],
                         refs: Mapping[str, Any], member_attribute: Any) -> Any:
        if name == "refs":
            return select_attribute([refs.get(n) for n in names], path)
        if name == "attributes":
            return {n: member_attribute(n, path) for n in names}
        return [member_attribute(n, [name, *path]) for n in names]


class ResourceGroup(_Members):
    """Creates one or more identically configured nested resources.

    ``resource_def`` is the member's definition; ``index_var`` in its properties becomes
    each member's index. ``removal_policies`` name members to remove first when the
    count goes down; their names are not used again."""

    support_version: ClassVar[str] = "2014.1"

    properties_schema: ClassVar[Mapping[str, Property]] = {
        # No more members than a stack may hold, refused before any is built.
        "count": Property(INTEGER, "The number of resources to create.", default=1,
                          update_allowed=True, constraints=(Range(0, None), ResourceLimit())),
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
    update_policy_schema: ClassVar[Mapping[str, Property]] = {
        "rolling_update": Property(MAP, schema={
            "min_in_service": Property(INTEGER, "The minimum number of resources in service "
                                                "while rolling updates are being executed.",
                                       default=0, constraints=(Range(0, None),)),
            "max_batch_size": Property(INTEGER, "The maximum number of resources to replace "
                                                "at once.",
                                       default=1, constraints=(Range(1, None),)),
            "pause_time": Property(NUMBER, "The number of seconds to wait between batches "
                                           "of updates.",
                                   default=0, constraints=(Range(0, None),)),
        }),
        "batch_create": Property(MAP, schema={
            "max_batch_size": Property(INTEGER, "The maximum number of resources to create "
                                                "at once.",
                                       default=1, constraints=(Range(1, None),)),
            "pause_time": Property(NUMBER, "The number of seconds to wait between batches.",
                                   default=0, constraints=(Range(0, None),)),
        }),
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
        return self._names(self._size())

    def _size(self) -> int:
        """How many members the group is to have."""
        return int(self.properties.get("count", 1))

    def _names(self, size: int) -> list[str]:
        """The first ``size`` member names, skipping those removal policies named."""
        removed, index = set(self.removed()), 0
        names: list[str] = []
        while len(names) < size:
            if str(index) not in removed:
                names.append(str(index))
            index += 1
        return names

    def _member(self, name: str) -> dict[str, Any]:
        """Member ``name``'s definition: ``resource_def`` with its index filled in."""
        definition = self.properties["resource_def"]
        index_var = self.properties.get("index_var") or "%index%"
        member: dict[str, Any] = {"type": definition["type"]}
        if definition.get("properties"):
            member["properties"] = _substitute(definition["properties"], index_var, name)
        if definition.get("metadata"):
            member["metadata"] = definition["metadata"]
        return member

    def child_definition(self) -> tuple[Any, str, Mapping[str, Any], int | None]:
        self.data["removed"] = self.removed()
        members = {name: self._member(name) for name in self.members()}
        return _child_template(members), self._file(), {}, None

    def _file(self) -> str:
        return f"{self.name}.group"

    # --- rollouts: batch_create and rolling_update ----------------------------------------

    def handle_create(self) -> Token:
        policy = self.update_policy.get("batch_create")
        if not policy or not self._size():
            return super().handle_create()
        return self._start_rollout(Action.CREATE, 0, policy["max_batch_size"], 0,
                                   policy["pause_time"])

    def check_create_complete(self, token: Token) -> bool:
        return self._rolled_out() if token == ROLLOUT else super().check_create_complete(token)

    def handle_update(self, prop_diff: Mapping[str, Any]) -> Token:
        policy = self.update_policy.get("rolling_update")
        if not policy or "resource_def" not in prop_diff:
            return super().handle_update(prop_diff)
        return self._start_rollout(Action.UPDATE, len(self._existing()),
                                   policy["max_batch_size"], policy["min_in_service"],
                                   policy["pause_time"])

    def check_update_complete(self, token: Token) -> bool:
        return self._rolled_out() if token == ROLLOUT else super().check_update_complete(token)

    def _start_rollout(self, action: str, current: int, batch_size: int,
                       min_in_service: int, pause: float) -> Token:
        self.data["removed"] = self.removed()
        plan = batches(self._size(), current, batch_size, min_in_service)
        self.data["rollout"] = {"action": action, "batches": plan, "index": 0,
                                "pause": pause, "resume_at": None}
        self._send_batch()
        return ROLLOUT

    def _rolled_out(self) -> bool:
        """One look at the rollout: start the next batch when this one has settled (and
        any pause has passed); True when the last one has."""
        # NOTE: the progress is replaced, never changed in place: the worker saves the
        # data when it differs from what it saved last, compared one level deep.
        rollout = dict(self.data["rollout"])
        if rollout["resume_at"] is not None:
            if self.runtime.now() < rollout["resume_at"]:
                return False
            self.data["rollout"] = {**rollout, "resume_at": None}
            self._send_batch()
            return False
        first = rollout["action"] == Action.CREATE and rollout["index"] == 0
        if not self._settled(Action.CREATE if first else Action.UPDATE):
            return False
        if rollout["index"] == len(rollout["batches"]) - 1:
            del self.data["rollout"]
            return True
        rollout["index"] += 1
        if rollout["pause"] > 0:
            self.data["rollout"] = {**rollout, "resume_at": self.runtime.now() + rollout["pause"]}
            return False
        self.data["rollout"] = rollout
        self._send_batch()
        return False

    def _send_batch(self) -> None:
        """Start the child operation of the rollout's current batch."""
        rollout = self.data["rollout"]
        capacity, new = rollout["batches"][rollout["index"]]
        members = batch_members(self._names(capacity), self._size(),
                                self._existing(), capacity, new, self._member)
        nested = nested_stacks(self)
        if self.physical_id is None:
            child_id = nested.create(self.physical_resource_name(), _child_template(members),
                                     {}, template_file=self._file())
            self.set_physical_id(child_id)
        else:
            nested.update(self.physical_id, _child_template(members), {},
                          template_file=self._file())

    def _existing(self) -> dict[str, Mapping[str, Any]]:
        """The members the child has now, but those removal policies named."""
        if self.physical_id is None:
            return {}
        removed = set(self.removed())
        definitions = nested_stacks(self).resource_definitions(self.physical_id)
        return {name: body for name, body in definitions.items() if name not in removed}

    # Heat reads no path into removed_rsrc_list or refs_map: it answers the whole value.
    def get_attribute_path(self, name: str, path: Sequence[Any]) -> Any:
        if name == "removed_rsrc_list":
            return list(self.data.get("removed") or [])
        return super().get_attribute_path(name, path)

    def _group_attribute(self, name: str, path: Sequence[Any], names: list[str],
                         refs: Mapping[str, Any], member_attribute: Any) -> Any:
        if name == "refs_map":
            return {n: refs.get(n) for n in names}
        return super()._group_attribute(name, path, names, refs, member_attribute)


class ResourceChain(_Members):
    """Creates one resource of each listed type; unless ``concurrent``, each depends on
    the one before it."""

    support_version: ClassVar[str] = "6.0.0"

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "resources": Property(LIST, "The list of resource types to create. This list may "
                                    "contain type names or aliases defined in the resource "
                                    "registry.", required=True, update_allowed=True,
                              schema=Property(STRING), constraints=(ResourceLimit(),)),
        "concurrent": Property(BOOLEAN, "If true, the resources in the chain will be created "
                                        "concurrently.", default=False, update_allowed=True),
        "resource_properties": Property(MAP, "Properties to pass to each resource being "
                                             "created in the chain.", default={},
                                        update_allowed=True),
    }
    # Heat's chain has no refs_map (nor removed_rsrc_list): such a name is the members'.
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "refs": Attribute("A list of resource IDs for the resources in the chain.",
                          type=LIST),
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
