"""EC2 networking: ``AWS::EC2::VPC``, ``Subnet``, ``InternetGateway``,
``VPCGatewayAttachment`` and ``SecurityGroup``; and :class:`Ec2Resource`, what every EC2
type shares (``ec2_compute`` has instances and volumes).

EC2 ids are the physical ids. Every taggable thing is tagged when it is made
(``TagSpecifications``, in the same call), so a create interrupted after the call finds
it again by its ``kiln:resource`` tag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from engine.errors import BackendResourceGone
from engine.schema import BOOLEAN, INTEGER, LIST, MAP, STRING, AllowedValues, Attribute, Property
from plugins.resources.aws.common import (
    RESOURCE_TAG,
    TAGS,
    AwsResource,
    drop_none,
    in_template_order,
)

#: States in which a described thing counts as gone.
GONE_STATES = frozenset({"terminated", "shutting-down", "deleted", "deleting"})


class Ec2Resource(AwsResource):
    """An EC2 thing described by ``describe_<noun>s`` and tagged as ``tag_type``."""

    service: ClassVar[str] = "ec2"
    #: The ``TagSpecifications`` resource type (``"vpc"``); "" when it takes no tags.
    tag_type: ClassVar[str] = ""
    #: e.g. ``("describe_vpcs", "VpcIds", "Vpcs")``.
    describe_call: ClassVar[tuple[str, str, str]] = ("", "", "")

    def lookup(self, physical_id: str | None = None) -> dict[str, Any] | None:
        """The thing as EC2 describes it; None when it is gone."""
        call, ids, key = self.describe_call
        target = physical_id or self.physical_id
        found = self.present(lambda: getattr(self.client(), call)(**{ids: [target]})[key])
        items = [item for item in found or [] if _state(item) not in GONE_STATES]
        return items[0] if items else None

    def find(self) -> str | None:
        if not self.tag_type:
            return None
        call, _, key = self.describe_call
        found = getattr(self.client(), call)(Filters=[
            {"Name": f"tag:{RESOURCE_TAG}", "Values": [self.physical_resource_name()]}])[key]
        live = [item for item in found if _state(item) not in GONE_STATES]
        return str(live[0][self.id_key()]) if live else None

    def id_key(self) -> str:
        return self.describe_call[2][:-1] + "Id"  # "Vpcs" -> "VpcId"

    def tag_specifications(self) -> list[dict[str, Any]]:
        return [{"ResourceType": self.tag_type, "Tags": self.all_tags()}]

    def update_tags(self, prop_diff: Mapping[str, Any],
                    live: Mapping[str, Any] | None = None) -> None:
        """Retag from ``live`` (the thing as described), described now when not given."""
        ids = [self.physical_id]
        self.retag(prop_diff, lambda: ((live or self.lookup() or {}).get("Tags") or []),
                   remove=lambda keys: self.client().delete_tags(
                       Resources=ids, Tags=[{"Key": k} for k in keys]),
                   put=lambda tags: self.client().create_tags(Resources=ids, Tags=tags))

    def update(self, prop_diff: Mapping[str, Any]) -> None:
        self.update_tags(prop_diff)

    def observed(self, item: Mapping[str, Any], fields: Mapping[str, str]) -> dict[str, Any]:
        """``{property: item[field]}`` plus the tags."""
        values: dict[str, Any] = {prop: item.get(field) for prop, field in fields.items()}
        if self.tag_type:
            values["Tags"] = self.observed_tags(item.get("Tags") or [])
        return values


def _state(item: Mapping[str, Any]) -> str:
    state = item.get("State")
    return str(state.get("Name") if isinstance(state, Mapping) else state or "")


class VPC(Ec2Resource):
    """A VPC. A change of ``CidrBlock`` or ``InstanceTenancy`` replaces it; the DNS
    switches and tags change in place."""

    tag_type: ClassVar[str] = "vpc"
    describe_call: ClassVar[tuple[str, str, str]] = ("describe_vpcs", "VpcIds", "Vpcs")
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "CidrBlock": Property(STRING, "The VPC's IPv4 range.", required=True),
        "InstanceTenancy": Property(STRING, "default or dedicated.", default="default",
                                    constraints=(AllowedValues(("default", "dedicated")),)),
        "EnableDnsSupport": Property(BOOLEAN, "DNS resolution in the VPC.",
                                     update_allowed=True),
        "EnableDnsHostnames": Property(BOOLEAN, "DNS host names for instances.",
                                       update_allowed=True),
        "Tags": TAGS,
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "CidrBlock": Attribute("The VPC's IPv4 range.", "string"),
        "DefaultSecurityGroup": Attribute("The VPC's default security group.", "string"),
        "VpcId": Attribute("The VPC's id.", "string"),
    }

    def create(self) -> str:
        vpc = self.client().create_vpc(
            CidrBlock=self.properties["CidrBlock"],
            InstanceTenancy=self.properties["InstanceTenancy"],
            TagSpecifications=self.tag_specifications())["Vpc"]
        vpc_id = str(vpc["VpcId"])
        self._set_dns(vpc_id, self.properties)
        return vpc_id

    def created(self) -> bool:
        vpc = self.lookup()
        if vpc is None:
            raise BackendResourceGone(service="ec2", operation="DescribeVpcs", code="NotFound",
                                      reason=f"{self.physical_id} vanished while created")
        groups = self.client().describe_security_groups(Filters=[
            {"Name": "vpc-id", "Values": [self.physical_id]},
            {"Name": "group-name", "Values": ["default"]}])["SecurityGroups"]
        if groups:
            self.data["default_security_group"] = groups[0]["GroupId"]
        return vpc.get("State") == "available"

    def update(self, prop_diff: Mapping[str, Any]) -> None:
        self._set_dns(str(self.physical_id), prop_diff)
        super().update(prop_diff)

    def _set_dns(self, vpc_id: str, values: Mapping[str, Any]) -> None:
        # One attribute per call: EC2's ModifyVpcAttribute takes only one.
        for name in ("EnableDnsSupport", "EnableDnsHostnames"):
            if values.get(name) is not None:
                self.client().modify_vpc_attribute(VpcId=vpc_id,
                                                   **{name: {"Value": bool(values[name])}})

    def delete(self, physical_id: str) -> None:
        self.client().delete_vpc(VpcId=physical_id)

    def observe(self) -> Mapping[str, Any] | None:
        vpc = self.lookup()
        if vpc is None:
            return None
        observed = self.observed(vpc, {"CidrBlock": "CidrBlock",
                                       "InstanceTenancy": "InstanceTenancy"})
        for name in ("EnableDnsSupport", "EnableDnsHostnames"):
            answer = self.client().describe_vpc_attribute(VpcId=self.physical_id,
                                                          Attribute=name[0].lower() + name[1:])
            observed[name] = answer[name]["Value"]
        return observed

    def get_attribute(self, name: str) -> Any:
        return {"CidrBlock": self.properties.get("CidrBlock"), "VpcId": self.physical_id,
                "DefaultSecurityGroup": self.data.get("default_security_group")}.get(name)


class Subnet(Ec2Resource):
    """A subnet of a VPC. ``MapPublicIpOnLaunch`` and tags change in place; anything
    else replaces it. With no ``AvailabilityZone`` EC2 chooses one (the placement plugin
    may choose instead, see specs/aws-resources.rst)."""

    tag_type: ClassVar[str] = "subnet"
    describe_call: ClassVar[tuple[str, str, str]] = ("describe_subnets", "SubnetIds",
                                                     "Subnets")
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "VpcId": Property(STRING, "The VPC of the subnet.", required=True),
        "CidrBlock": Property(STRING, "The subnet's IPv4 range.", required=True),
        "AvailabilityZone": Property(STRING, "The subnet's availability zone; unset, the "
                                     "placement plugin's rack for it, else EC2's choice."),
        "MapPublicIpOnLaunch": Property(BOOLEAN, "Give instances public addresses.",
                                        update_allowed=True),
        "Tags": TAGS,
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "AvailabilityZone": Attribute("The subnet's availability zone.", "string"),
        "CidrBlock": Attribute("The subnet's IPv4 range.", "string"),
        "VpcId": Attribute("The subnet's VPC.", "string"),
    }

    def create(self) -> str:
        subnet = self.client().create_subnet(**drop_none({
            "VpcId": self.properties["VpcId"], "CidrBlock": self.properties["CidrBlock"],
            "AvailabilityZone": self.zone(),
            "TagSpecifications": self.tag_specifications()}))["Subnet"]
        self.data["availability_zone"] = subnet.get("AvailabilityZone")
        if self.properties.get("MapPublicIpOnLaunch") is not None:
            self._map_public(str(subnet["SubnetId"]))
        return str(subnet["SubnetId"])

    def update(self, prop_diff: Mapping[str, Any]) -> None:
        if "MapPublicIpOnLaunch" in prop_diff:
            self._map_public(str(self.physical_id))
        super().update(prop_diff)

    def _map_public(self, subnet_id: str) -> None:
        self.client().modify_subnet_attribute(
            SubnetId=subnet_id,
            MapPublicIpOnLaunch={"Value": bool(self.properties.get("MapPublicIpOnLaunch"))})

    def delete(self, physical_id: str) -> None:
        self.client().delete_subnet(SubnetId=physical_id)

    def observe(self) -> Mapping[str, Any] | None:
        subnet = self.lookup()
        if subnet is None:
            return None
        return self.observed(subnet, {
            "VpcId": "VpcId", "CidrBlock": "CidrBlock", "AvailabilityZone": "AvailabilityZone",
            "MapPublicIpOnLaunch": "MapPublicIpOnLaunch"})

    def get_attribute(self, name: str) -> Any:
        return {"AvailabilityZone": self.data.get("availability_zone"),
                "CidrBlock": self.properties.get("CidrBlock"),
                "VpcId": self.properties.get("VpcId")}.get(name)


class InternetGateway(Ec2Resource):
    """An internet gateway; attach it with ``AWS::EC2::VPCGatewayAttachment``."""

    tag_type: ClassVar[str] = "internet-gateway"
    describe_call: ClassVar[tuple[str, str, str]] = (
        "describe_internet_gateways", "InternetGatewayIds", "InternetGateways")
    properties_schema: ClassVar[Mapping[str, Property]] = {"Tags": TAGS}

    def create(self) -> str:
        return str(self.client().create_internet_gateway(
            TagSpecifications=self.tag_specifications()
        )["InternetGateway"]["InternetGatewayId"])

    def delete(self, physical_id: str) -> None:
        self.client().delete_internet_gateway(InternetGatewayId=physical_id)

    def observe(self) -> Mapping[str, Any] | None:
        gateway = self.lookup()
        return None if gateway is None else self.observed(gateway, {})


class VPCGatewayAttachment(Ec2Resource):
    """An internet gateway attached to a VPC; any change replaces the attachment. Its
    physical id is ``<gateway>:<vpc>`` (EC2 gives attachments no id)."""

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "VpcId": Property(STRING, "The VPC.", required=True),
        "InternetGatewayId": Property(STRING, "The gateway to attach.", required=True),
    }

    def _pair(self, physical_id: str | None = None) -> tuple[str, str]:
        gateway, vpc = (physical_id or self.physical_id or ":").split(":", 1)
        return gateway, vpc

    def create(self) -> str:
        gateway, vpc = self.properties["InternetGatewayId"], self.properties["VpcId"]
        if not self._attached(gateway, vpc):  # attaching twice is an error in EC2
            self.client().attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)
        return f"{gateway}:{vpc}"

    def _attached(self, gateway: str, vpc: str) -> bool:
        found = self.present(lambda: self.client().describe_internet_gateways(
            InternetGatewayIds=[gateway])["InternetGateways"])
        return any(a.get("VpcId") == vpc for g in found or [] for a in g.get("Attachments", []))

    def delete(self, physical_id: str) -> None:
        gateway, vpc = self._pair(physical_id)
        if self._attached(gateway, vpc):
            self.client().detach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)

    def observe(self) -> Mapping[str, Any] | None:
        gateway, vpc = self._pair()
        if not self._attached(gateway, vpc):
            return None
        return {"VpcId": vpc, "InternetGatewayId": gateway}


RULE = {
    "IpProtocol": Property(STRING, "tcp, udp, icmp or -1 (all).", required=True),
    "FromPort": Property(INTEGER, "First port (ICMP type)."),
    "ToPort": Property(INTEGER, "Last port (ICMP code)."),
    "CidrIp": Property(STRING, "An IPv4 range the rule admits."),
    "SourceSecurityGroupId": Property(STRING, "A security group the rule admits "
                                      "(ingress)."),
    "DestinationSecurityGroupId": Property(STRING, "A security group the rule admits "
                                           "(egress)."),
}


class SecurityGroup(Ec2Resource):
    """A security group of a VPC. Rules change in place (revoked and authorised by
    difference) as do tags; the name, description or VPC replace it."""

    tag_type: ClassVar[str] = "security-group"
    describe_call: ClassVar[tuple[str, str, str]] = ("describe_security_groups", "GroupIds",
                                                     "SecurityGroups")
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "GroupDescription": Property(STRING, "What the group is for.", required=True),
        "GroupName": Property(STRING, "The group's name; a stable name of Kiln's when "
                              "unset."),
        "VpcId": Property(STRING, "The VPC of the group.", required=True),
        "SecurityGroupIngress": Property(LIST, "Inbound rules.", update_allowed=True,
                                         schema=Property(MAP, schema=RULE)),
        "SecurityGroupEgress": Property(LIST, "Outbound rules; unset keeps EC2's "
                                        "allow-all.", update_allowed=True,
                                        schema=Property(MAP, schema=RULE)),
        "Tags": TAGS,
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "GroupId": Attribute("The group's id.", "string"),
        "VpcId": Attribute("The group's VPC.", "string"),
    }

    def id_key(self) -> str:
        return "GroupId"

    def create(self) -> str:
        group_id = str(self.client().create_security_group(
            GroupName=self.properties.get("GroupName") or self.stable_name(255),
            Description=self.properties["GroupDescription"], VpcId=self.properties["VpcId"],
            TagSpecifications=self.tag_specifications())["GroupId"])
        self._set_rules(group_id, self.lookup(group_id) or {}, create=True)
        return group_id

    def update(self, prop_diff: Mapping[str, Any]) -> None:
        live = self.lookup() or {}
        self._set_rules(str(self.physical_id), live, create=False, changed=prop_diff)
        self.update_tags(prop_diff, live)

    def _set_rules(self, group_id: str, live: Mapping[str, Any], *, create: bool,
                   changed: Mapping[str, Any] | None = None) -> None:
        for prop, field, kind in (("SecurityGroupIngress", "IpPermissions", "ingress"),
                                  ("SecurityGroupEgress", "IpPermissionsEgress", "egress")):
            wanted = self.properties.get(prop)
            if wanted is None or (changed is not None and prop not in changed):
                continue
            have = {_key(r) for r in _rules(live.get(field) or [], prop)}
            want = {_key(r) for r in wanted}
            revoke = [_permission(dict(k)) for k in sorted(have - want)]
            grant = [_permission(dict(k)) for k in sorted(want - have)]
            if revoke:
                getattr(self.client(), f"revoke_security_group_{kind}")(
                    GroupId=group_id, IpPermissions=revoke)
            if grant:
                getattr(self.client(), f"authorize_security_group_{kind}")(
                    GroupId=group_id, IpPermissions=grant)

    def delete(self, physical_id: str) -> None:
        self.client().delete_security_group(GroupId=physical_id)

    def observe(self) -> Mapping[str, Any] | None:
        group = self.lookup()
        if group is None:
            return None
        observed = self.observed(group, {"GroupDescription": "Description",
                                         "VpcId": "VpcId"})
        for prop, field in (("SecurityGroupIngress", "IpPermissions"),
                            ("SecurityGroupEgress", "IpPermissionsEgress")):
            observed[prop] = in_template_order(_rules(group.get(field) or [], prop),
                                               self.properties.get(prop) or [], key=_key)
        return observed

    def get_attribute(self, name: str) -> Any:
        return {"GroupId": self.physical_id, "VpcId": self.properties.get("VpcId")}.get(name)


def _key(rule: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """A rule as a hashable value, in the template's form, unset fields left out."""
    values = {k: rule.get(k) for k in RULE if rule.get(k) is not None}
    values["IpProtocol"] = str(values.get("IpProtocol", "-1"))
    if values["IpProtocol"] == "-1":
        values.pop("FromPort", None), values.pop("ToPort", None)
    return tuple(sorted(values.items()))


def _rules(permissions: Sequence[Mapping[str, Any]], prop: str) -> list[dict[str, Any]]:
    """EC2's ``IpPermissions`` as template rules of ``prop``, one per range or group."""
    group_field = ("DestinationSecurityGroupId" if prop == "SecurityGroupEgress"
                   else "SourceSecurityGroupId")
    rules: list[dict[str, Any]] = []
    for permission in permissions:
        base = drop_none({"IpProtocol": permission.get("IpProtocol"),
                          "FromPort": permission.get("FromPort"),
                          "ToPort": permission.get("ToPort")})
        if base.get("IpProtocol") == "-1":
            base = {"IpProtocol": "-1"}
        rules += [{**base, "CidrIp": r["CidrIp"]} for r in permission.get("IpRanges", [])]
        rules += [{**base, group_field: g["GroupId"]}
                  for g in permission.get("UserIdGroupPairs", [])]
    return rules


def _permission(rule: Mapping[str, Any]) -> dict[str, Any]:
    permission = drop_none({"IpProtocol": rule["IpProtocol"], "FromPort": rule.get("FromPort"),
                            "ToPort": rule.get("ToPort")})
    if rule.get("CidrIp"):
        permission["IpRanges"] = [{"CidrIp": rule["CidrIp"]}]
    group = rule.get("SourceSecurityGroupId") or rule.get("DestinationSecurityGroupId")
    if group:
        permission["UserIdGroupPairs"] = [{"GroupId": group}]
    return permission
