"""Each AWS type against moto's server: a create interrupted before its id was recorded
is found again rather than made twice, a thing gone is gone to observe, delete and
adopt, live state reads back in the template's form, and updates land."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import BackendResourceGone
from engine.resources.base import Resource
from engine.resources.drift import drift_of
from plugins.resources.aws import dynamodb, ec2, ec2_compute, iam, s3, sns, sqs
from tests.functional.aws.endpoint import MotoServer
from tests.unit.plugins.resources.aws.conftest import create, delete, settle
from tests.unit.plugins.resources.conftest import Build, FakeRuntime

ROLE_TRUST = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
     "Action": "sts:AssumeRole"}]}


def _vpc(build: Build) -> str:
    return str(create(build, ec2.VPC, {"CidrBlock": "10.9.0.0/16"}, name="vpc").physical_id)


CASES: dict[str, tuple[type[Resource], Any]] = {
    "queue": (sqs.Queue, lambda build: {"VisibilityTimeout": 5}),
    "bucket": (s3.Bucket, lambda build: {}),
    "topic": (sns.Topic, lambda build: {"DisplayName": "orders"}),
    "table": (dynamodb.Table, lambda build: {
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
        "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}}),
    "role": (iam.Role, lambda build: {"AssumeRolePolicyDocument": ROLE_TRUST}),
    "vpc": (ec2.VPC, lambda build: {"CidrBlock": "10.8.0.0/16"}),
    "subnet": (ec2.Subnet, lambda build: {"VpcId": _vpc(build), "CidrBlock": "10.9.1.0/24"}),
    "group": (ec2.SecurityGroup, lambda build: {"VpcId": _vpc(build),
                                                "GroupDescription": "test"}),
    "gateway": (ec2.InternetGateway, lambda build: {}),
    "instance": (ec2_compute.Instance, lambda build: {"ImageId": "ami-12c6146b"}),
    "volume": (ec2_compute.Volume, lambda build: {"AvailabilityZone": "us-east-1a",
                                                  "Size": 2}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_resumed_create_finds_what_the_dead_worker_made(
        aws_runtime: FakeRuntime, build: Build, case: str) -> None:
    cls, properties = CASES[case]
    raw = properties(build)
    aws_runtime.resource_key = f"{aws_runtime.stack_id}/{case}/7"
    first = create(build, cls, raw, name=case)
    assert first.physical_id is not None
    # A new worker whose predecessor died before recording the id: nothing recorded.
    resumed = create(build, cls, raw, name=case)
    assert resumed.physical_id == first.physical_id
    assert drift_of(resumed.properties, resumed.observe() or {}) == {}
    delete(resumed)
    assert resumed.observe() is None
    delete(resumed)  # deleting what is gone is done, not an error


def test_an_adopt_of_something_gone_is_refused_and_records_nothing(
        aws_runtime: FakeRuntime, build: Build, moto: MotoServer) -> None:
    queue = build(sqs.Queue, {}, name="orders")
    with pytest.raises(BackendResourceGone, match="sqs adopt failed: NotFound: "
                                                  "http://nowhere/q does not exist"):
        queue.handle_adopt("http://nowhere/q", {})
    assert queue.physical_id is None and aws_runtime.recorded == []
    url = moto.client("sqs").create_queue(QueueName="adoptable")["QueueUrl"]
    queue.handle_adopt(url, {"arn": "arn:aws:sqs:us-east-1:123456789012:adoptable"})
    assert (queue.physical_id, queue.get_attribute("Arn")) == (
        url, "arn:aws:sqs:us-east-1:123456789012:adoptable")


def test_tags_read_back_without_kilns_own_and_in_the_templates_order(
        aws_runtime: FakeRuntime, build: Build, moto: MotoServer) -> None:
    tags = [{"Key": "b", "Value": "2"}, {"Key": "a", "Value": "1"}]
    queue = create(build, sqs.Queue, {"Tags": tags}, name="tagged")
    live = moto.client("sqs").list_queue_tags(QueueUrl=queue.physical_id)["Tags"]
    assert live == {"a": "1", "b": "2", "kiln:stack-id": aws_runtime.stack_id,
                    "kiln:resource": queue.physical_resource_name()}
    assert (queue.observe() or {})["Tags"] == tags
    moto.client("sqs").tag_queue(QueueUrl=queue.physical_id, Tags={"c": "3"})
    assert drift_of(queue.properties, queue.observe() or {}) == {"Tags": {
        "expected": tags, "actual": [*tags, {"Key": "c", "Value": "3"}]}}
    changed = build(sqs.Queue, {"Tags": [{"Key": "a", "Value": "9"}]}, name="tagged",
                    physical_id=queue.physical_id)
    changed.handle_update({"Tags": changed.properties["Tags"]})
    assert moto.client("sqs").list_queue_tags(QueueUrl=queue.physical_id)["Tags"] == {
        "a": "9", "kiln:stack-id": aws_runtime.stack_id,
        "kiln:resource": queue.physical_resource_name()}


def test_security_group_rules_change_by_difference(
        aws_runtime: FakeRuntime, build: Build, moto: MotoServer) -> None:
    https = {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0"}
    ssh = {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "CidrIp": "10.0.0.0/8"}
    vpc = _vpc(build)
    group = create(build, ec2.SecurityGroup, {
        "VpcId": vpc, "GroupDescription": "web", "SecurityGroupIngress": [https, ssh],
        "SecurityGroupEgress": [{"IpProtocol": "-1", "CidrIp": "10.0.0.0/8"}]}, name="web")
    observed = group.observe() or {}
    assert observed["SecurityGroupIngress"] == [https, ssh]
    assert observed["SecurityGroupEgress"] == [{"IpProtocol": "-1", "CidrIp": "10.0.0.0/8"}]
    assert drift_of(group.properties, observed) == {}
    smaller = build(ec2.SecurityGroup, {"VpcId": vpc, "GroupDescription": "web",
                                        "SecurityGroupIngress": [https]},
                    name="web", physical_id=group.physical_id)
    smaller.handle_update({"SecurityGroupIngress": [https]})
    live = moto.client("ec2").describe_security_groups(GroupIds=[group.physical_id])[
        "SecurityGroups"][0]["IpPermissions"]
    assert [(p["FromPort"], [r["CidrIp"] for r in p["IpRanges"]]) for p in live] == [
        (443, ["0.0.0.0/0"])]


def test_an_instance_changes_type_in_place_through_stop_and_start(
        aws_runtime: FakeRuntime, build: Build, moto: MotoServer) -> None:
    server = create(build, ec2_compute.Instance, {"ImageId": "ami-12c6146b"}, name="srv")
    assert server.get_attribute("AvailabilityZone") == "us-east-1a"
    assert server.get_attribute("PrivateIp")
    bigger = build(ec2_compute.Instance, {"ImageId": "ami-12c6146b",
                                          "InstanceType": "t2.large"},
                   name="srv", physical_id=server.physical_id, data=dict(server.data))
    assert not bigger.needs_replacement({"InstanceType": "t2.large"})
    assert bigger.needs_replacement({"ImageId": "ami-other"})
    token = bigger.handle_update({"InstanceType": "t2.large"})
    assert bigger.data["resize"] == "stopping"
    settle(lambda: bigger.check_update_complete(token))
    assert "resize" not in bigger.data
    instance = moto.client("ec2").describe_instances(InstanceIds=[server.physical_id])[
        "Reservations"][0]["Instances"][0]
    assert (instance["InstanceType"], instance["State"]["Name"]) == ("t2.large", "running")


def test_a_volume_attaches_and_detaches(aws_runtime: FakeRuntime, build: Build,
                                        moto: MotoServer) -> None:
    server = create(build, ec2_compute.Instance, {"ImageId": "ami-12c6146b"}, name="srv")
    volume = create(build, ec2_compute.Volume, {"AvailabilityZone": "us-east-1a", "Size": 1},
                    name="vol")
    attachment = create(build, ec2_compute.VolumeAttachment, {
        "InstanceId": server.physical_id, "VolumeId": volume.physical_id,
        "Device": "/dev/sdh"}, name="attach")
    assert attachment.physical_id == f"{volume.physical_id}:{server.physical_id}"
    assert attachment.observe() == {"InstanceId": server.physical_id,
                                    "VolumeId": volume.physical_id, "Device": "/dev/sdh"}
    delete(attachment)
    assert attachment.observe() is None
    state = moto.client("ec2").describe_volumes(VolumeIds=[volume.physical_id])[
        "Volumes"][0]["State"]
    assert state == "available"


@pytest.mark.parametrize(("cls", "raw", "length", "pattern"), [
    (s3.Bucket, {}, 63, r"^[a-z0-9-]+$"),
    (sqs.Queue, {}, 80, r"^[A-Za-z0-9_-]+$"),
    (sqs.Queue, {"FifoQueue": True}, 80, r"^[A-Za-z0-9_-]+\.fifo$"),
    (iam.Role, {"AssumeRolePolicyDocument": ROLE_TRUST}, 64, r"^[A-Za-z0-9+=,.@_-]+$"),
])
def test_generated_names_keep_to_each_services_rules(
        aws_runtime: FakeRuntime, build: Build, cls: type[Resource], raw: dict[str, Any],
        length: int, pattern: str) -> None:
    aws_runtime.stack_name = "A_Very_Long_Stack_Name_" + "x" * 80
    resource = create(build, cls, raw, name="Thing")
    name = str(resource.physical_id).rstrip("/").rsplit("/", 1)[-1]
    assert len(name) <= length
    assert __import__("re").match(pattern, name), name
    # The unique suffix survives the cut.
    assert resource.physical_resource_name().rsplit("-", 1)[-1].lower() in name.lower()


IN_PLACE = {
    s3.Bucket: {"Tags", "VersioningConfiguration", "AccessControl"},
    s3.BucketPolicy: {"PolicyDocument"},
    sqs.Queue: {"DelaySeconds", "MaximumMessageSize", "MessageRetentionPeriod",
                "ReceiveMessageWaitTimeSeconds", "VisibilityTimeout", "Tags"},
    sns.Topic: {"DisplayName", "Subscription", "Tags"},
    sns.Subscription: set(),
    dynamodb.Table: {"BillingMode", "ProvisionedThroughput", "Tags"},
    iam.Role: {"AssumeRolePolicyDocument", "Description", "MaxSessionDuration",
               "ManagedPolicyArns", "Tags"},
    ec2.VPC: {"EnableDnsSupport", "EnableDnsHostnames", "Tags"},
    ec2.Subnet: {"MapPublicIpOnLaunch", "Tags"},
    ec2.InternetGateway: {"Tags"},
    ec2.VPCGatewayAttachment: set(),
    ec2.SecurityGroup: {"SecurityGroupIngress", "SecurityGroupEgress", "Tags"},
    ec2_compute.Instance: {"InstanceType", "SecurityGroupIds", "Tags"},
    ec2_compute.Volume: {"Size", "VolumeType", "Iops", "Tags"},
    ec2_compute.VolumeAttachment: set(),
}


@pytest.mark.parametrize("cls", list(IN_PLACE), ids=lambda cls: cls.__name__)
def test_what_changes_in_place_and_what_replaces_is_as_the_spec_says(
        aws_runtime: FakeRuntime, cls: type[Resource]) -> None:
    """specs/aws-resources.rst, "The types": the rest of each schema replaces."""
    schema = cls.properties_schema
    resource = cls("r", {}, aws_runtime)
    for name in schema:
        assert resource.needs_replacement({name: "x"}) is (name not in IN_PLACE[cls]), name
