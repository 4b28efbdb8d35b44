"""``AWS::IAM::Role``; the physical id is the role's name."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from typing import Any, ClassVar

from engine.schema import INTEGER, LIST, MAP, STRING, Attribute, Property, Range
from plugins.resources.aws.common import TAGS, AwsResource, drop_none, in_template_order


class Role(AwsResource):
    """An IAM role. The trust policy, description, session length, managed policies and
    tags change in place; the name and path replace it. Deleting detaches its managed
    policies first, as IAM requires."""

    service: ClassVar[str] = "iam"
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "RoleName": Property(STRING, "The role's name; a stable name of Kiln's when unset."),
        "Path": Property(STRING, "The role's path.", default="/"),
        "AssumeRolePolicyDocument": Property(MAP, "Who may assume the role.", required=True,
                                             update_allowed=True),
        "Description": Property(STRING, "What the role is for.", update_allowed=True),
        "MaxSessionDuration": Property(INTEGER, "Seconds, 3600-43200.", update_allowed=True,
                                       constraints=(Range(3600, 43200),)),
        "ManagedPolicyArns": Property(LIST, "Managed policies to attach.",
                                      update_allowed=True, schema=Property(STRING)),
        "Tags": TAGS,
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "Arn": Attribute("The role's ARN.", "string"),
        "RoleId": Attribute("The role's stable id.", "string"),
    }

    def _name(self) -> str:
        return str(self.properties.get("RoleName") or self.stable_name(64, r"A-Za-z0-9+=,.@_-"))

    def find(self) -> str | None:
        name = self._name()
        role = self.present(lambda: self.client().get_role(RoleName=name))
        if role is not None:
            self._remember(role["Role"])
        return name if role is not None else None

    def create(self) -> str:
        role = self.client().create_role(**drop_none({
            "RoleName": self._name(), "Path": self.properties["Path"],
            "AssumeRolePolicyDocument": json.dumps(self.properties["AssumeRolePolicyDocument"]),
            "Description": self.properties.get("Description"),
            "MaxSessionDuration": self.properties.get("MaxSessionDuration"),
            "Tags": self.all_tags()}))["Role"]
        self._remember(role)
        for arn in self.properties.get("ManagedPolicyArns") or []:
            self.client().attach_role_policy(RoleName=role["RoleName"], PolicyArn=arn)
        return str(role["RoleName"])

    def update(self, prop_diff: Mapping[str, Any]) -> None:
        name = self.physical_id
        if "AssumeRolePolicyDocument" in prop_diff:
            self.client().update_assume_role_policy(
                RoleName=name,
                PolicyDocument=json.dumps(self.properties["AssumeRolePolicyDocument"]))
        if "Description" in prop_diff or "MaxSessionDuration" in prop_diff:
            self.client().update_role(RoleName=name, **drop_none({
                "Description": self.properties.get("Description") or "",
                "MaxSessionDuration": self.properties.get("MaxSessionDuration")}))
        if "ManagedPolicyArns" in prop_diff:
            attached = set(self._attached())
            wanted = set(self.properties.get("ManagedPolicyArns") or [])
            for arn in sorted(attached - wanted):
                self.client().detach_role_policy(RoleName=name, PolicyArn=arn)
            for arn in sorted(wanted - attached):
                self.client().attach_role_policy(RoleName=name, PolicyArn=arn)
        self.retag(prop_diff, self._live_tags,
                   remove=lambda keys: self.client().untag_role(RoleName=name, TagKeys=keys),
                   put=lambda tags: self.client().tag_role(RoleName=name, Tags=tags))

    def delete(self, physical_id: str) -> None:
        for arn in self._attached(physical_id):
            self.client().detach_role_policy(RoleName=physical_id, PolicyArn=arn)
        self.client().delete_role(RoleName=physical_id)

    def observe(self) -> Mapping[str, Any] | None:
        found = self.present(lambda: self.client().get_role(RoleName=self.physical_id))
        if found is None:
            return None
        role = found["Role"]
        document = role.get("AssumeRolePolicyDocument")
        if isinstance(document, str):  # IAM returns it URL-encoded in some SDKs
            document = json.loads(urllib.parse.unquote(document))
        return {
            "Path": role.get("Path"), "AssumeRolePolicyDocument": document,
            "Description": role.get("Description"),
            "MaxSessionDuration": role.get("MaxSessionDuration"),
            "ManagedPolicyArns": in_template_order(
                self._attached(), self.properties.get("ManagedPolicyArns") or []),
            "Tags": self.observed_tags(self._live_tags()),
        }

    def _attached(self, name: str | None = None) -> list[str]:
        found = self.client().list_attached_role_policies(RoleName=name or self.physical_id)
        return [p["PolicyArn"] for p in found.get("AttachedPolicies", [])]

    def _live_tags(self) -> list[dict[str, str]]:
        return list(self.client().list_role_tags(RoleName=self.physical_id).get("Tags") or [])

    def _remember(self, role: Mapping[str, Any]) -> None:
        self.data.update(arn=role.get("Arn"), role_id=role.get("RoleId"))

    def get_attribute(self, name: str) -> Any:
        return {"Arn": self.data.get("arn"), "RoleId": self.data.get("role_id")}.get(name)
