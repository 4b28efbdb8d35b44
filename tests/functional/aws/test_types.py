"""The AWS types the mixed template leaves out, and the actions beyond create and
delete (suspend, resume, check of a thing that is gone, abandon and adopt), through
python-heatclient against kiln-all and moto's server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from heatclient import exc as heat_exc

from tests.functional.aws.endpoint import MotoServer
from tests.functional.conftest import unique, wait_for_status

OTHERS = """\
heat_template_version: 2018-08-31
parameters:
  read_units: {type: number, default: 5}
  role_description: {type: string, default: reads orders}
  reader: {type: string, default: "arn:aws:iam::123456789012:root"}
resources:
  table:
    type: AWS::DynamoDB::Table
    properties:
      AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
      KeySchema: [{AttributeName: id, KeyType: HASH}]
      ProvisionedThroughput: {ReadCapacityUnits: {get_param: read_units},
                              WriteCapacityUnits: 5}
  role:
    type: AWS::IAM::Role
    properties:
      Description: {get_param: role_description}
      AssumeRolePolicyDocument:
        Version: "2012-10-17"
        Statement: [{Effect: Allow, Principal: {Service: ec2.amazonaws.com},
                     Action: "sts:AssumeRole"}]
      Tags: [{Key: owner, Value: orders}]
  bucket:
    type: AWS::S3::Bucket
  policy:
    type: AWS::S3::BucketPolicy
    properties:
      Bucket: {get_resource: bucket}
      PolicyDocument:
        Version: "2012-10-17"
        Statement:
          - Effect: Allow
            Principal: {AWS: {get_param: reader}}
            Action: "s3:GetObject"
            Resource: {list_join: ["", ["arn:aws:s3:::", {get_resource: bucket}, "/*"]]}
  first:
    type: AWS::SQS::Queue
  second:
    type: AWS::SQS::Queue
  topic:
    type: AWS::SNS::Topic
  subscription:
    type: AWS::SNS::Subscription
    properties:
      TopicArn: {get_resource: topic}
      Protocol: sqs
      Endpoint: {get_attr: [first, Arn]}
  vpc:
    type: AWS::EC2::VPC
    properties: {CidrBlock: 10.40.0.0/16}
  gateway:
    type: AWS::EC2::InternetGateway
    properties:
      Tags: [{Key: tier, Value: edge}]
  attachment:
    type: AWS::EC2::VPCGatewayAttachment
    properties:
      VpcId: {get_resource: vpc}
      InternetGatewayId: {get_resource: gateway}
outputs:
  table_arn: {value: {get_attr: [table, Arn]}}
  role_arn: {value: {get_attr: [role, Arn]}}
"""

SERVER = """\
heat_template_version: 2018-08-31
resources:
  server:
    type: AWS::EC2::Instance
    properties: {ImageId: ami-12c6146b, InstanceType: t2.micro}
  orders:
    type: AWS::SQS::Queue
    properties: {VisibilityTimeout: 20}
"""


def _ids(heat: Any, stack_id: str) -> dict[str, str]:
    return {r.resource_name: r.physical_resource_id for r in heat.resources.list(stack_id)}


def test_other_types_create_update_check_and_delete(heat: Any, moto: MotoServer) -> None:
    template = OTHERS
    stack_id = heat.stacks.create(stack_name=unique("others-"), template=template)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=120)
    ids = _ids(heat, stack_id)
    dynamodb, iam, s3, sns, ec2, sqs = (moto.client(s) for s in (
        "dynamodb", "iam", "s3", "sns", "ec2", "sqs"))
    table = dynamodb.describe_table(TableName=ids["table"])["Table"]
    assert table["TableStatus"] == "ACTIVE"
    out = {o["output_key"]: o["output_value"] for o in heat.stacks.get(stack_id).outputs}
    assert out["table_arn"] == table["TableArn"]
    role = iam.get_role(RoleName=ids["role"])["Role"]
    assert (role["Description"], out["role_arn"]) == ("reads orders", role["Arn"])
    policy = json.loads(s3.get_bucket_policy(Bucket=ids["bucket"])["Policy"])
    assert policy["Statement"][0]["Resource"] == f"arn:aws:s3:::{ids['bucket']}/*"
    first_arn = sqs.get_queue_attributes(QueueUrl=ids["first"], AttributeNames=[
        "QueueArn"])["Attributes"]["QueueArn"]
    subscription = sns.get_subscription_attributes(SubscriptionArn=ids["subscription"])
    assert subscription["Attributes"]["Endpoint"] == first_arn
    gateway = ec2.describe_internet_gateways(InternetGatewayIds=[ids["gateway"]])[
        "InternetGateways"][0]
    assert [a["VpcId"] for a in gateway["Attachments"]] == [ids["vpc"]]
    assert {"Key": "tier", "Value": "edge"} in gateway["Tags"]

    # In place: throughput, the role's description, the policy; replaced: the
    # subscription, whose endpoint moves to the second queue.
    heat.stacks.update(stack_id, template=template.replace(
        "[first, Arn]", "[second, Arn]"), parameters={
        "read_units": 7, "role_description": "reads and writes orders",
        "reader": "arn:aws:iam::123456789012:user/auditor"})
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE", timeout=120)
    after = _ids(heat, stack_id)
    assert {k: v for k, v in after.items() if k != "subscription"} == {
        k: v for k, v in ids.items() if k != "subscription"}
    assert after["subscription"] != ids["subscription"]
    table = dynamodb.describe_table(TableName=ids["table"])["Table"]
    assert table["ProvisionedThroughput"]["ReadCapacityUnits"] == 7
    assert iam.get_role(RoleName=ids["role"])["Role"]["Description"] == (
        "reads and writes orders")
    policy = json.loads(s3.get_bucket_policy(Bucket=ids["bucket"])["Policy"])
    assert policy["Statement"][0]["Principal"] == {
        "AWS": "arn:aws:iam::123456789012:user/auditor"}
    topic_subscriptions = sns.list_subscriptions_by_topic(TopicArn=ids["topic"])
    assert [s["SubscriptionArn"] for s in topic_subscriptions["Subscriptions"]] == [
        after["subscription"]]

    # A check of things that match their template: every resource checked, no drift.
    heat.actions.check(stack_id)
    wait_for_status(heat, stack_id, "CHECK_COMPLETE", timeout=60)
    for name in after:
        resource = heat.resources.get(stack_id, name)
        assert (name, resource.resource_status, resource.drift) == (
            name, "CHECK_COMPLETE", {})

    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE", timeout=120)
    assert ids["table"] not in dynamodb.list_tables()["TableNames"]
    assert ids["role"] not in {r["RoleName"] for r in iam.list_roles()["Roles"]}
    assert ids["gateway"] not in {g["InternetGatewayId"] for g in
                                  ec2.describe_internet_gateways()["InternetGateways"]}
    assert ids["vpc"] not in {v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]}


def test_instance_suspends_and_resumes(heat: Any, moto: MotoServer) -> None:
    stack_id = heat.stacks.create(stack_name=unique("server-"), template=SERVER)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=60)
    instance_id = _ids(heat, stack_id)["server"]
    ec2 = moto.client("ec2")

    def state() -> str:
        return str(ec2.describe_instances(InstanceIds=[instance_id])[
            "Reservations"][0]["Instances"][0]["State"]["Name"])

    heat.actions.suspend(stack_id)
    wait_for_status(heat, stack_id, "SUSPEND_COMPLETE", timeout=60)
    assert state() == "stopped"
    heat.actions.resume(stack_id)
    wait_for_status(heat, stack_id, "RESUME_COMPLETE", timeout=60)
    assert state() == "running"
    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE", timeout=60)
    assert state() == "terminated"


def test_check_fails_for_a_thing_deleted_behind_kilns_back(heat: Any, moto: MotoServer
                                                           ) -> None:
    stack_id = heat.stacks.create(stack_name=unique("gone-"), template=SERVER)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=60)
    queue_url = _ids(heat, stack_id)["orders"]
    moto.client("sqs").delete_queue(QueueUrl=queue_url)
    with pytest.raises(heat_exc.HTTPBadRequest, match='Unrecognized value "maybe" for '
                                                       '"converge"'):
        heat.stacks.update(stack_id, existing=True, converge="maybe")
    heat.actions.check(stack_id)
    wait_for_status(heat, stack_id, "CHECK_FAILED", timeout=60)
    orders = heat.resources.get(stack_id, "orders")
    assert orders.resource_status == "CHECK_FAILED"
    assert orders.resource_status_reason == (
        f"ResourceMissing: resources.orders: The physical resource {queue_url} no longer "
        "exists")
    assert heat.resources.get(stack_id, "server").resource_status == "CHECK_COMPLETE"
    # Deleting a stack whose thing is already gone is no failure.
    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE", timeout=60)


def test_abandon_then_adopt_takes_the_things_over_and_refuses_what_is_gone(
        heat: Any, moto: MotoServer) -> None:
    stack_id = heat.stacks.create(stack_name=unique("kept-"), template=SERVER)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=60)
    before = _ids(heat, stack_id)
    data = heat.stacks.abandon(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE", timeout=60)
    ec2, sqs = moto.client("ec2"), moto.client("sqs")
    assert ec2.describe_instances(InstanceIds=[before["server"]])["Reservations"][0][
        "Instances"][0]["State"]["Name"] == "running"  # abandoned, not deleted

    adopted = heat.stacks.create(stack_name=unique("adopted-"),
                                 adopt_stack_data=json.dumps(data))["stack"]["id"]
    wait_for_status(heat, adopted, "ADOPT_COMPLETE", timeout=60)
    assert _ids(heat, adopted) == before
    heat.actions.check(adopted)
    wait_for_status(heat, adopted, "CHECK_COMPLETE", timeout=60)

    # Adopt data naming a queue that no longer exists is refused by the adopt itself.
    abandoned = heat.stacks.abandon(adopted)
    wait_for_status(heat, adopted, "DELETE_COMPLETE", timeout=60)
    sqs.delete_queue(QueueUrl=before["orders"])
    again = heat.stacks.create(stack_name=unique("adopted-"),
                               adopt_stack_data=json.dumps(abandoned))["stack"]["id"]
    stack = wait_for_status(heat, again, "ADOPT_FAILED", timeout=60)
    reason = (f"BackendResourceGone: resources.orders: sqs adopt failed: NotFound: "
              f"{before['orders']} does not exist")
    assert stack.stack_status_reason == f"Resource ADOPT failed: {reason}"
    orders = heat.resources.get(again, "orders")
    assert (orders.resource_status, orders.resource_status_reason) == ("ADOPT_FAILED", reason)
    ec2.terminate_instances(InstanceIds=[before["server"]])


def test_a_setting_out_of_range_is_a_400_naming_line_and_path(heat: Any) -> None:
    template = ("AWSTemplateFormatVersion: '2010-09-09'\nResources:\n  Orders:\n"
                "    Type: AWS::SQS::Queue\n    Properties:\n      VisibilityTimeout: 99999\n")
    with pytest.raises(heat_exc.HTTPBadRequest) as raised:
        heat.stacks.create(stack_name=unique("bad-"), template=template)
    assert str(raised.value) == (
        "ERROR: template:6 Resources.Orders.Properties.VisibilityTimeout: Property error: "
        "VisibilityTimeout: 99999 is out of range (min: 0, max: 43200).")


def test_drift_of_a_hidden_value_is_masked(heat: Any, moto: MotoServer) -> None:
    template = """\
heat_template_version: 2018-08-31
parameters:
  api_key: {type: string, hidden: true}
resources:
  orders:
    type: AWS::SQS::Queue
    properties:
      Tags: [{Key: api-key, Value: {get_param: api_key}}]
"""
    stack_id = heat.stacks.create(stack_name=unique("hidden-"), template=template,
                                  parameters={"api_key": "hunter2-key"})["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=60)
    url = _ids(heat, stack_id)["orders"]
    moto.client("sqs").tag_queue(QueueUrl=url, Tags={"api-key": "changed"})
    heat.actions.check(stack_id)
    wait_for_status(heat, stack_id, "CHECK_COMPLETE", timeout=60)
    orders = heat.resources.get(stack_id, "orders")
    assert orders.drift == {"Tags": {"expected": [{"Key": "api-key", "Value": "******"}],
                                     "actual": [{"Key": "api-key", "Value": "changed"}]}}
    events = heat.events.list(stack_id, resource_name="orders")
    assert "hunter2-key" not in repr([e.to_dict() for e in events])
    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE", timeout=60)


def test_every_other_type_is_abandoned_and_adopted(heat: Any, moto: MotoServer) -> None:
    stack_id = heat.stacks.create(stack_name=unique("kept-"), template=OTHERS)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=120)
    before = _ids(heat, stack_id)
    data = heat.stacks.abandon(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE", timeout=60)
    adopted = heat.stacks.create(stack_name=unique("adopted-"),
                                 adopt_stack_data=json.dumps(data))["stack"]["id"]
    wait_for_status(heat, adopted, "ADOPT_COMPLETE", timeout=60)
    assert _ids(heat, adopted) == before
    out = {o["output_key"]: o["output_value"] for o in heat.stacks.get(adopted).outputs}
    assert out["table_arn"] == moto.client("dynamodb").describe_table(
        TableName=before["table"])["Table"]["TableArn"]
    heat.actions.check(adopted)
    wait_for_status(heat, adopted, "CHECK_COMPLETE", timeout=60)
    assert {r.resource_name: r.drift for r in (heat.resources.get(adopted, name)
                                               for name in before)} == dict.fromkeys(before, {})
    heat.stacks.delete(adopted)
    wait_for_status(heat, adopted, "DELETE_COMPLETE", timeout=120)
    assert before["table"] not in moto.client("dynamodb").list_tables()["TableNames"]
