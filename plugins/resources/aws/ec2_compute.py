"""EC2 compute: ``AWS::EC2::Instance``, ``AWS::EC2::Volume`` and
``AWS::EC2::VolumeAttachment``.

Each starts the work and returns; the worker polls ``describe_*`` until the state is
reached (running, available, in-use, terminated...), so no thread waits on EC2 and no
boto3 waiter blocks a worker. Instances suspend (stop) and resume (start).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, ClassVar

from engine.errors import BackendFailed
from engine.resources.base import Token
from engine.schema import BOOLEAN, INTEGER, LIST, STRING, Attribute, Property, Range
from plugins.resources.aws.common import TAGS, drop_none, in_template_order, patiently
from plugins.resources.aws.ec2 import Ec2Resource


class Instance(Ec2Resource):
    """An EC2 instance. ``InstanceType`` changes in place (stop, modify, start, as
    CloudFormation does); tags and security groups too; the image, key, subnet, zone
    and user data replace it."""

    tag_type: ClassVar[str] = "instance"
    describe_call: ClassVar[tuple[str, str, str]] = ("describe_instances", "InstanceIds",
                                                     "Reservations")
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "ImageId": Property(STRING, "The AMI to boot.", required=True),
        "InstanceType": Property(STRING, "The instance type.", default="t2.micro",
                                 update_allowed=True),
        "KeyName": Property(STRING, "The key pair's name."),
        "SubnetId": Property(STRING, "The subnet to start in."),
        "AvailabilityZone": Property(STRING, "The availability zone (outside a subnet); "
                                     "unset, the placement plugin's rack for it, else "
                                     "EC2's choice."),
        "SecurityGroupIds": Property(LIST, "Security groups (ids), in a VPC.",
                                     update_allowed=True, schema=Property(STRING)),
        "UserData": Property(STRING, "User data, base64-encoded as CloudFormation takes "
                             "it."),
        "Tags": TAGS,
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "AvailabilityZone": Attribute("The instance's availability zone.", "string"),
        "PrivateDnsName": Attribute("The private DNS name.", "string"),
        "PrivateIp": Attribute("The private IPv4 address.", "string"),
        "PublicDnsName": Attribute("The public DNS name.", "string"),
        "PublicIp": Attribute("The public IPv4 address.", "string"),
    }

    def lookup(self, physical_id: str | None = None) -> dict[str, Any] | None:
        found = self.present(lambda: self.client().describe_instances(
            InstanceIds=[physical_id or self.physical_id])["Reservations"])
        return _live_instance(found or [])

    def find(self) -> str | None:
        found = self.client().describe_instances(Filters=[
            {"Name": "tag:kiln:resource", "Values": [self.physical_resource_name()]}]
        )["Reservations"]
        instance = _live_instance(found)
        return str(instance["InstanceId"]) if instance else None

    def create(self) -> str:
        # In a subnet the subnet decides the zone; EC2 refuses another.
        placement = None if self.properties.get("SubnetId") else self.zone()
        user_data = self.properties.get("UserData")
        instance = self.client().run_instances(**drop_none({
            "ImageId": self.properties["ImageId"],
            "InstanceType": self.properties["InstanceType"],
            "KeyName": self.properties.get("KeyName"),
            "SubnetId": self.properties.get("SubnetId"),
            "SecurityGroupIds": self.properties.get("SecurityGroupIds"),
            "Placement": {"AvailabilityZone": placement} if placement else None,
            "UserData": base64.b64decode(user_data).decode() if user_data else None,
            "MinCount": 1, "MaxCount": 1,
            # AWS returns the same instance for a repeated token; moto ignores it, so
            # the kiln:resource tag (find) is what a resumed create relies on.
            "ClientToken": self.stable_name(64),
            "TagSpecifications": self.tag_specifications()}))["Instances"][0]
        return str(instance["InstanceId"])

    def created(self) -> bool:
        return self._reached("running", "pending")

    def update(self, prop_diff: Mapping[str, Any]) -> None:
        if "SecurityGroupIds" in prop_diff and self.properties.get("SecurityGroupIds"):
            self.client().modify_instance_attribute(
                InstanceId=self.physical_id, Groups=list(self.properties["SecurityGroupIds"]))
        self.update_tags(prop_diff)
        if "InstanceType" in prop_diff:
            # The type of a running instance cannot change: stop it, and let the polls
            # take it through modify and start (``data["resize"]`` survives a resume).
            self.data["resize"] = "stopping"
            self.client().stop_instances(InstanceIds=[self.physical_id])

    def updated(self) -> bool:
        step = self.data.get("resize")
        if step == "stopping":
            if not self._reached("stopped", "stopping"):
                return False
            self.client().modify_instance_attribute(
                InstanceId=self.physical_id,
                InstanceType={"Value": self.properties["InstanceType"]})
            self.client().start_instances(InstanceIds=[self.physical_id])
            self.data["resize"] = "starting"
            return False
        if step == "starting":
            if not self._reached("running", "pending"):
                return False
            self.data.pop("resize")
        return True

    def handle_suspend(self) -> Token:
        self.client().stop_instances(InstanceIds=[self.physical_id])
        return None

    def check_suspend_complete(self, token: Token) -> bool:
        return patiently(lambda: self._reached("stopped", "stopping"))

    def handle_resume(self) -> Token:
        self.client().start_instances(InstanceIds=[self.physical_id])
        return None

    def check_resume_complete(self, token: Token) -> bool:
        return patiently(lambda: self._reached("running", "pending"))

    def delete(self, physical_id: str) -> None:
        self.client().terminate_instances(InstanceIds=[physical_id])

    def deleted(self, physical_id: str) -> bool:
        found = self.client().describe_instances(InstanceIds=[physical_id])["Reservations"]
        states = {i["State"]["Name"] for r in found for i in r["Instances"]}
        return states <= {"terminated"}

    def observe(self) -> Mapping[str, Any] | None:
        instance = self.lookup()
        if instance is None:
            return None
        observed = self.observed(instance, {
            "ImageId": "ImageId", "InstanceType": "InstanceType", "SubnetId": "SubnetId",
            "KeyName": "KeyName"})
        observed["AvailabilityZone"] = instance.get("Placement", {}).get("AvailabilityZone")
        observed["SecurityGroupIds"] = in_template_order(
            [g["GroupId"] for g in instance.get("SecurityGroups", [])],
            self.properties.get("SecurityGroupIds") or [])
        self._remember(instance)
        return observed

    def _reached(self, state: str, *on_the_way: str) -> bool:
        """Whether the instance is in ``state``; an error for a state that is neither it
        nor one on the way to it (a create that ended terminated, say)."""
        instance = self.lookup()
        name = instance["State"]["Name"] if instance else "terminated"
        if name == state:
            if instance is not None:
                self._remember(instance)
            return True
        if name in on_the_way or (state == "running" and name in ("stopped", "stopping")
                                  and self.data.get("resize")):
            return False
        reason = (instance or {}).get("StateReason", {}).get("Message", "")
        raise BackendFailed(service="ec2", operation="DescribeInstances",
                            code=f"Instance.{name}",
                            reason=f"{self.physical_id} is {name}, not {state}"
                                   + (f": {reason}" if reason else ""))

    def _remember(self, instance: Mapping[str, Any]) -> None:
        """Keep the addresses: attributes are answered from stored state."""
        self.data.update(drop_none({
            "availability_zone": instance.get("Placement", {}).get("AvailabilityZone"),
            "private_ip": instance.get("PrivateIpAddress"),
            "public_ip": instance.get("PublicIpAddress"),
            "private_dns": instance.get("PrivateDnsName"),
            "public_dns": instance.get("PublicDnsName")}))

    def get_attribute(self, name: str) -> Any:
        return self.data.get({
            "AvailabilityZone": "availability_zone", "PrivateIp": "private_ip",
            "PublicIp": "public_ip", "PrivateDnsName": "private_dns",
            "PublicDnsName": "public_dns"}.get(name, ""))


def _live_instance(reservations: Any) -> dict[str, Any] | None:
    for reservation in reservations:
        for instance in reservation.get("Instances", []):
            if instance["State"]["Name"] not in ("terminated", "shutting-down"):
                return dict(instance)
    return None


class Volume(Ec2Resource):
    """An EBS volume. ``Size`` (growing only), ``VolumeType`` and ``Iops`` change in place
    (ModifyVolume); the zone, snapshot and encryption replace it."""

    tag_type: ClassVar[str] = "volume"
    describe_call: ClassVar[tuple[str, str, str]] = ("describe_volumes", "VolumeIds",
                                                     "Volumes")
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "AvailabilityZone": Property(STRING, "The volume's availability zone; unset, the "
                                     "placement plugin's rack for it (one of the two is "
                                     "needed)."),
        "Size": Property(INTEGER, "Size in GiB.", update_allowed=True,
                         constraints=(Range(1, 65536),)),
        "SnapshotId": Property(STRING, "The snapshot to make it from."),
        "VolumeType": Property(STRING, "gp2, gp3, io1, io2, st1, sc1 or standard.",
                               update_allowed=True),
        "Iops": Property(INTEGER, "Provisioned IOPS.", update_allowed=True),
        "Encrypted": Property(BOOLEAN, "Encrypt the volume."),
        "Tags": TAGS,
    }

    def create(self) -> str:
        zone = self.zone()
        if zone is None:
            raise ValueError("AvailabilityZone is not set and no placement plugin placed "
                             "the volume")
        return str(self.client().create_volume(**drop_none({
            "AvailabilityZone": zone,
            "Size": self.properties.get("Size"),
            "SnapshotId": self.properties.get("SnapshotId"),
            "VolumeType": self.properties.get("VolumeType"),
            "Iops": self.properties.get("Iops"),
            "Encrypted": self.properties.get("Encrypted"),
            "ClientToken": self.stable_name(64),
            "TagSpecifications": self.tag_specifications()}))["VolumeId"])

    def created(self) -> bool:
        return self._state() in ("available", "in-use")

    def _state(self) -> str:
        volume = self.lookup()
        if volume is None:
            raise BackendFailed(service="ec2", operation="DescribeVolumes", code="NotFound",
                                reason=f"{self.physical_id} vanished")
        if volume["State"] == "error":
            raise BackendFailed(service="ec2", operation="DescribeVolumes", code="error",
                                reason=f"{self.physical_id} is in state error")
        return str(volume["State"])

    def update(self, prop_diff: Mapping[str, Any]) -> None:
        changes = drop_none({"Size": prop_diff.get("Size"),
                             "VolumeType": prop_diff.get("VolumeType"),
                             "Iops": prop_diff.get("Iops")})
        if changes:
            self.client().modify_volume(VolumeId=self.physical_id, **changes)
        super().update(prop_diff)

    def delete(self, physical_id: str) -> None:
        self.client().delete_volume(VolumeId=physical_id)

    def deleted(self, physical_id: str) -> bool:
        return self.lookup(physical_id) is None

    def observe(self) -> Mapping[str, Any] | None:
        volume = self.lookup()
        if volume is None:
            return None
        return self.observed(volume, {
            "AvailabilityZone": "AvailabilityZone", "Size": "Size", "VolumeType": "VolumeType",
            "SnapshotId": "SnapshotId", "Encrypted": "Encrypted"})


class VolumeAttachment(Ec2Resource):
    """A volume attached to an instance; any change replaces the attachment. Its
    physical id is ``<volume>:<instance>``."""

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "InstanceId": Property(STRING, "The instance.", required=True),
        "VolumeId": Property(STRING, "The volume.", required=True),
        "Device": Property(STRING, "The device name (/dev/sdh, xvdh).", required=True),
    }

    def _attachment(self, physical_id: str | None = None) -> dict[str, Any] | None:
        volume_id, instance_id = (physical_id or self.physical_id or ":").split(":", 1)
        found = self.present(lambda: self.client().describe_volumes(
            VolumeIds=[volume_id])["Volumes"])
        for volume in found or []:
            for attachment in volume.get("Attachments", []):
                if attachment.get("InstanceId") == instance_id and attachment.get(
                        "State") not in ("detached",):
                    return dict(attachment)
        return None

    def create(self) -> str:
        pair = f"{self.properties['VolumeId']}:{self.properties['InstanceId']}"
        if self._attachment(pair) is None:  # a resumed create may have attached it
            self.client().attach_volume(VolumeId=self.properties["VolumeId"],
                                        InstanceId=self.properties["InstanceId"],
                                        Device=self.properties["Device"])
        return pair

    def created(self) -> bool:
        attachment = self._attachment()
        if attachment is None:
            raise BackendFailed(service="ec2", operation="AttachVolume", code="NotAttached",
                                reason=f"{self.physical_id} is not attached")
        return attachment.get("State") == "attached"

    def delete(self, physical_id: str) -> None:
        volume_id, instance_id = physical_id.split(":", 1)
        if self._attachment(physical_id) is not None:
            self.client().detach_volume(VolumeId=volume_id, InstanceId=instance_id)

    def deleted(self, physical_id: str) -> bool:
        return self._attachment(physical_id) is None

    def observe(self) -> Mapping[str, Any] | None:
        attachment = self._attachment()
        if attachment is None:
            return None
        return {"InstanceId": attachment.get("InstanceId"),
                "VolumeId": attachment.get("VolumeId"), "Device": attachment.get("Device")}
