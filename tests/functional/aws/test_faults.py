"""Faults between Kiln and AWS, made by a loopback proxy in front of moto's server:
throttling (botocore's back-off absorbs it; what outlasts it fails the resource with
AWS's error code), and a worker killed while EC2 answers a create, whose successor
finds the instance by its tag instead of making a second one."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional import servers
from tests.functional.aws.conftest import start_kiln
from tests.functional.aws.endpoint import MotoServer, Proxy
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


def _tagged_instances(moto: MotoServer, stack_id: str) -> list[str]:
    reservations = moto.client("ec2").describe_instances(Filters=[
        {"Name": "tag:kiln:stack-id", "Values": [stack_id]}])["Reservations"]
    return [i["InstanceId"] for r in reservations for i in r["Instances"]
            if i["State"]["Name"] != "terminated"]


def test_a_create_killed_while_ec2_answers_is_resumed_without_a_second_instance(
        tmp_path_factory: pytest.TempPathFactory, moto: MotoServer, proxy: Proxy) -> None:
    state = tmp_path_factory.mktemp("kiln-killed")
    extra = {"OS_AWS__ENDPOINT_URL": proxy.url, "AWS_ACCESS_KEY_ID": "testing",
             "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    # RunInstances reaches EC2 (the instance exists), but its answer is held back: the
    # worker dies before it can record the instance's id.
    proxy.rule = lambda call: 20.0 if "Action=RunInstances" in call else None
    first = servers.start_all(state, None, **extra)
    credentials = servers.new_tenant(first.env, "killed")
    heat: Any = heat_for(first, credentials)
    stack_id = heat.stacks.create(stack_name=unique("killed-"),
                                  template=NETWORK)["stack"]["id"]
    deadline = time.monotonic() + 60
    while not proxy.delayed and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proxy.delayed, "RunInstances never reached the endpoint"
    assert len(_tagged_instances(moto, stack_id)) == 1
    os.kill(first.processes[0].popen.pid, signal.SIGKILL)
    first.processes[0].popen.wait()
    first.stop()

    proxy.rule = lambda call: None
    second = servers.start_all(state, None, **extra)
    try:
        heat = heat_for(second, credentials)
        # The dead worker's leases (10 s in tests) expire; the new one resumes.
        wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=90)
        instances = _tagged_instances(moto, stack_id)
        assert len(instances) == 1
        server = heat.resources.get(stack_id, "server")
        assert server.physical_resource_id == instances[0]
        heat.stacks.delete(stack_id)
        wait_for_status(heat, stack_id, "DELETE_COMPLETE", timeout=60)
        assert _tagged_instances(moto, stack_id) == []
    finally:
        second.stop()
