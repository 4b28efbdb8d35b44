"""Faults between Kiln and AWS, made by a loopback proxy in front of moto's server:
throttling (botocore's back-off absorbs it; what outlasts it fails the resource with
AWS's error code), and a worker killed while AWS answers its creates, whose successor
finds each thing made (by name or by tag) instead of making a second one."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional import servers
from tests.functional.aws.conftest import start_kiln
from tests.functional.aws.endpoint import CREDENTIALS, MotoServer, Proxy
from tests.functional.conftest import heat_for, unique, wait_for_status

NETWORK = """\
heat_template_version: 2018-08-31
resources:
  vpc:
    type: AWS::EC2::VPC
    properties: {CidrBlock: 10.50.0.0/16}
  subnet:
    type: AWS::EC2::Subnet
    properties: {VpcId: {get_resource: vpc}, CidrBlock: 10.50.1.0/24}
  server:
    type: AWS::EC2::Instance
    properties: {ImageId: ami-12c6146b, SubnetId: {get_resource: subnet}}
"""


@pytest.fixture
def proxy(moto: MotoServer) -> Iterator[Proxy]:
    proxy = Proxy(moto.port)
    yield proxy
    proxy.stop()


def test_throttling_is_retried_and_what_outlasts_the_retries_names_the_code(
        tmp_path_factory: pytest.TempPathFactory, moto: MotoServer, proxy: Proxy) -> None:
    kiln = start_kiln(tmp_path_factory, proxy.url, OS_AWS__MAX_ATTEMPTS="3",
                      OS_AWS__RETRY_MODE="standard")
    try:
        heat = heat_for(kiln, servers.new_tenant(kiln.env, "throttled"))
        calls = 0

        def every_other_ec2_call(call: str) -> str | None:
            nonlocal calls
            if "Action=" not in call or "Version=2016-11-15" not in call:
                return None  # not an EC2 call
            calls += 1
            return "throttle" if calls % 2 else None

        proxy.rule = every_other_ec2_call
        stack_id = heat.stacks.create(stack_name=unique("throttled-"),
                                      template=NETWORK)["stack"]["id"]
        wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=120)
        assert len(proxy.throttled) >= 3  # each create call met one, and the polls

        proxy.rule = lambda call: "throttle" if "Action=CreateVpc" in call else None
        before = len(proxy.throttled)
        failed = heat.stacks.create(stack_name=unique("refused-"),
                                    template=NETWORK)["stack"]["id"]
        stack = wait_for_status(heat, failed, "CREATE_FAILED", timeout=120)
        assert len(proxy.throttled) - before == 3  # [aws] max_attempts, then given up
        assert stack.stack_status_reason == (
            "Resource CREATE failed: BackendThrottled: resources.vpc: ec2 CreateVpc "
            "failed: RequestLimitExceeded: Request limit exceeded.")
    finally:
        kiln.stop()


EVERY_TYPE = """\
heat_template_version: 2018-08-31
resources:
  vpc:
    type: AWS::EC2::VPC
    properties: {CidrBlock: 10.60.0.0/16}
  gateway:
    type: AWS::EC2::InternetGateway
  server:
    type: AWS::EC2::Instance
    properties: {ImageId: ami-12c6146b}
  volume:
    type: AWS::EC2::Volume
    properties: {AvailabilityZone: us-east-1a, Size: 1}
  queue:
    type: AWS::SQS::Queue
  bucket:
    type: AWS::S3::Bucket
  topic:
    type: AWS::SNS::Topic
  table:
    type: AWS::DynamoDB::Table
    properties:
      AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
      KeySchema: [{AttributeName: id, KeyType: HASH}]
      ProvisionedThroughput: {ReadCapacityUnits: 1, WriteCapacityUnits: 1}
  role:
    type: AWS::IAM::Role
    properties:
      AssumeRolePolicyDocument: {Version: "2012-10-17", Statement: []}
"""

#: The calls that make something, by protocol: EC2, IAM and SNS name an Action; SQS and
#: DynamoDB a JSON target; S3 is a PUT of the bucket's path alone.
MAKES = re.compile(r"Action=(Create(Vpc|InternetGateway|Volume|Role|Topic)|RunInstances)&"
                   r"|\.Create(Queue|Table) |^PUT /[^/?]+ ")


def _made(moto: MotoServer, stack_id: str, stack_name: str) -> dict[str, list[str]]:
    """Every live thing of the stack, by kind: what a duplicate would show up in."""
    ec2 = moto.client("ec2")
    by_stack = [{"Name": "tag:kiln:stack-id", "Values": [stack_id]}]
    made = {
        "vpc": [v["VpcId"] for v in ec2.describe_vpcs(Filters=by_stack)["Vpcs"]],
        "gateway": [g["InternetGatewayId"] for g in ec2.describe_internet_gateways(
            Filters=by_stack)["InternetGateways"]],
        "volume": [v["VolumeId"] for v in ec2.describe_volumes(Filters=by_stack)["Volumes"]],
        "server": [i["InstanceId"] for r in ec2.describe_instances(Filters=by_stack)[
            "Reservations"] for i in r["Instances"] if i["State"]["Name"] != "terminated"],
        "queue": [u for u in moto.client("sqs").list_queues().get("QueueUrls", [])
                  if f"/{stack_name}-" in u],
        "bucket": [b["Name"] for b in moto.client("s3").list_buckets()["Buckets"]
                   if b["Name"].startswith(stack_name)],
        "topic": [t["TopicArn"] for t in moto.client("sns").list_topics()["Topics"]
                  if f":{stack_name}-" in t["TopicArn"]],
        "table": [t for t in moto.client("dynamodb").list_tables()["TableNames"]
                  if t.startswith(stack_name)],
        "role": [r["RoleName"] for r in moto.client("iam").list_roles()["Roles"]
                 if r["RoleName"].startswith(stack_name)],
    }
    return {kind: sorted(ids) for kind, ids in made.items() if ids}


def test_creates_killed_before_their_ids_were_recorded_are_resumed_without_duplicates(
        tmp_path_factory: pytest.TempPathFactory, moto: MotoServer, proxy: Proxy) -> None:
    state = tmp_path_factory.mktemp("kiln-killed")
    extra = {"OS_AWS__ENDPOINT_URL": proxy.url, **CREDENTIALS}
    # Every create reaches AWS, but its answer comes 0.6 s late: the worker starts the
    # round's creates one after the other and records their ids when the round ends, so
    # the kill finds several made and none recorded.
    proxy.rule = lambda call: 0.6 if MAKES.search(call) else None
    first = servers.start_all(state, None, **extra)
    credentials = servers.new_tenant(first.env, "killed")
    heat: Any = heat_for(first, credentials)
    name = unique("killed")
    stack_id = heat.stacks.create(stack_name=name, template=EVERY_TYPE)["stack"]["id"]
    deadline = time.monotonic() + 60
    while len(proxy.delayed) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(first.processes[0].popen.pid, signal.SIGKILL)
    first.processes[0].popen.wait()
    first.stop()
    made_before = _made(moto, stack_id, name)
    assert len(made_before) >= 4, made_before
    with sqlite3.connect(state / "kiln.sqlite") as db:  # what the dead worker recorded
        recorded = db.execute("SELECT physical_id FROM resources WHERE stack_id = ?",
                              (stack_id,)).fetchall()
    assert recorded and all(physical_id is None for (physical_id,) in recorded)

    proxy.rule = lambda call: None
    second = servers.start_all(state, None, **extra)
    try:
        heat = heat_for(second, credentials)
        # The dead worker's leases (10 s in tests) expire; the new one resumes.
        wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=90)
        ids = {r.resource_name: r.physical_resource_id for r in heat.resources.list(stack_id)}
        made = _made(moto, stack_id, name)
        # One of each, and the one the stack records: none made twice.
        assert made == {kind: [ids[kind]] for kind in ids}
        for kind, found in made_before.items():
            assert found == made[kind], kind
        heat.stacks.delete(stack_id)
        wait_for_status(heat, stack_id, "DELETE_COMPLETE", timeout=60)
        assert _made(moto, stack_id, name) == {}
    finally:
        second.stop()
