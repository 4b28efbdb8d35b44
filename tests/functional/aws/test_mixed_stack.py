"""Issue 8's "done when": the mixed template, in HOT and in CFN form, through
python-heatclient against kiln-all and moto's server on loopback: create, an update with
changes in place and a replacement, drift found by a check after an out-of-band change
and put back by a converging update, and a clean delete."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import pytest

from tests.functional.aws.endpoint import MotoServer
from tests.functional.aws.templates import CFN, HOT
from tests.functional.conftest import unique, wait_for_status


@dataclasses.dataclass(frozen=True)
class Form:
    template: str
    names: dict[str, str]  # what the test calls a resource, parameter or output -> name


FORMS = {
    "hot": Form(HOT, {"queue": "orders", "topic": "notices", "server": "server",
                      "bucket": "assets", "vpc": "vpc", "attachment": "data_attachment",
                      "visibility": "visibility", "topic_name": "topic_name",
                      "instance_type": "instance_type", "queue_url": "queue_url",
                      "topic_arn": "topic_arn", "bucket_out": "bucket",
                      "server_ip": "server_ip", "zone": "zone"}),
    "cfn": Form(CFN, {"queue": "Orders", "topic": "Notices", "server": "Server",
                      "bucket": "Assets", "vpc": "Vpc", "attachment": "DataAttachment",
                      "visibility": "Visibility", "topic_name": "TopicName",
                      "instance_type": "InstanceType", "queue_url": "QueueUrl",
                      "topic_arn": "TopicArn", "bucket_out": "Bucket",
                      "server_ip": "ServerIp", "zone": "Zone"}),
}


def outputs(heat: Any, stack_id: str) -> dict[str, Any]:
    return {o["output_key"]: o["output_value"] for o in heat.stacks.get(stack_id).outputs}


def physical_ids(heat: Any, stack_id: str) -> dict[str, str]:
    return {r.resource_name: r.physical_resource_id for r in heat.resources.list(stack_id)}


def tagged(moto: MotoServer, stack_id: str) -> list[str]:
    """Every EC2 thing still alive that Kiln tagged as this stack's."""
    ec2 = moto.client("ec2")
    found = []
    for call, key, id_key in (("describe_vpcs", "Vpcs", "VpcId"),
                              ("describe_subnets", "Subnets", "SubnetId"),
                              ("describe_security_groups", "SecurityGroups", "GroupId"),
                              ("describe_volumes", "Volumes", "VolumeId")):
        found += [item[id_key] for item in getattr(ec2, call)(Filters=[
            {"Name": "tag:kiln:stack-id", "Values": [stack_id]}])[key]]
    for reservation in ec2.describe_instances(Filters=[
            {"Name": "tag:kiln:stack-id", "Values": [stack_id]}])["Reservations"]:
        found += [i["InstanceId"] for i in reservation["Instances"]
                  if i["State"]["Name"] != "terminated"]
    return found


@pytest.mark.parametrize("form", sorted(FORMS))
def test_mixed_stack_creates_updates_reports_drift_converges_and_deletes(
        heat: Any, moto: MotoServer, form: str) -> None:
    names = FORMS[form].names
    n = names.__getitem__
    timings: dict[str, float] = {}
    started = time.monotonic()
    topic_name = unique("orders-")
    created = heat.stacks.create(stack_name=unique(f"mixed-{form}-"),
                                 template=FORMS[form].template,
                                 parameters={n("topic_name"): topic_name})
    stack_id = created["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=120)
    timings["create"] = time.monotonic() - started

    out = outputs(heat, stack_id)
    before = physical_ids(heat, stack_id)
    sqs, sns, s3, ec2 = (moto.client(s) for s in ("sqs", "sns", "s3", "ec2"))
    queue_url = out[n("queue_url")]
    assert queue_url == before[n("queue")]
    assert sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])[
        "Attributes"]["VisibilityTimeout"] == "30"
    assert out[n("topic_arn")].endswith(f":{topic_name}")
    subscriptions = sns.list_subscriptions_by_topic(TopicArn=out[n("topic_arn")])
    assert [s["Protocol"] for s in subscriptions["Subscriptions"]] == ["sqs"]
    assert s3.get_bucket_versioning(Bucket=out[n("bucket_out")])["Status"] == "Enabled"
    tags = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(
        Bucket=out[n("bucket_out")])["TagSet"]}
    assert tags["kiln:stack-id"] == stack_id
    instance = ec2.describe_instances(InstanceIds=[before[n("server")]])[
        "Reservations"][0]["Instances"][0]
    assert instance["State"]["Name"] == "running"
    assert out[n("server_ip")] == instance["PrivateIpAddress"]
    assert out[n("zone")] == "us-east-1a"
    volume_id, instance_id = before[n("attachment")].split(":")
    volume = ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"][0]
    assert [(a["InstanceId"], a["State"]) for a in volume["Attachments"]] == [
        (instance_id, "attached")]
    # The VPC, subnet, group, volume and instance (the VPC's default group is EC2's own).
    assert sorted(i.split("-")[0] for i in tagged(moto, stack_id)) == [
        "i", "sg", "subnet", "vol", "vpc"]

    # An update: the queue's timeout and the instance's type in place, the topic
    # replaced (a new name).
    started = time.monotonic()
    new_topic = unique("notices-")
    heat.stacks.update(stack_id, existing=True, parameters={
        n("visibility"): 45, n("topic_name"): new_topic, n("instance_type"): "t2.small"})
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE", timeout=120)
    timings["update"] = time.monotonic() - started
    after = physical_ids(heat, stack_id)
    assert after[n("queue")] == before[n("queue")]
    assert after[n("server")] == before[n("server")]
    assert after[n("topic")] != before[n("topic")]
    assert after[n("topic")].endswith(f":{new_topic}")
    topics = {t["TopicArn"] for t in sns.list_topics()["Topics"]}
    assert after[n("topic")] in topics and before[n("topic")] not in topics
    assert sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])[
        "Attributes"]["VisibilityTimeout"] == "45"
    instance = ec2.describe_instances(InstanceIds=[after[n("server")]])[
        "Reservations"][0]["Instances"][0]
    assert (instance["InstanceType"], instance["State"]["Name"]) == ("t2.small", "running")
    statuses = {r.resource_name: r.resource_status for r in heat.resources.list(stack_id)}
    # The replacement is a new resource, created; the queue was updated.
    assert (statuses[n("queue")], statuses[n("topic")]) == ("UPDATE_COMPLETE",
                                                            "CREATE_COMPLETE")

    # Someone changes the queue behind Kiln's back; a check finds it and says where.
    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"VisibilityTimeout": "90"})
    started = time.monotonic()
    heat.actions.check(stack_id)
    wait_for_status(heat, stack_id, "CHECK_COMPLETE", timeout=60)
    timings["check"] = time.monotonic() - started
    queue = heat.resources.get(stack_id, n("queue"))
    assert queue.drift == {"VisibilityTimeout": {"expected": 45, "actual": 90}}
    assert queue.resource_status == "CHECK_COMPLETE"
    assert queue.resource_status_reason == (
        "Drift detected: VisibilityTimeout differ from the template")
    assert heat.resources.get(stack_id, n("bucket")).drift == {}
    events = [e for e in heat.events.list(stack_id, resource_name=n("queue"))
              if e.resource_status == "CHECK_COMPLETE"]
    assert [e.resource_status_reason for e in events] == [queue.resource_status_reason]

    # A converging update (Heat's "observe reality") puts it back, changing nothing else.
    started = time.monotonic()
    heat.stacks.update(stack_id, existing=True, converge=True)
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE", timeout=120)
    timings["converge"] = time.monotonic() - started
    assert sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])[
        "Attributes"]["VisibilityTimeout"] == "45"
    assert physical_ids(heat, stack_id) == after
    # Observed by the update and put back: no drift left.
    assert heat.resources.get(stack_id, n("queue")).drift == {}

    started = time.monotonic()
    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE", timeout=120)
    timings["delete"] = time.monotonic() - started
    assert tagged(moto, stack_id) == []
    assert after[n("topic")] not in {t["TopicArn"] for t in sns.list_topics()["Topics"]}
    assert queue_url not in sqs.list_queues().get("QueueUrls", [])
    assert out[n("bucket_out")] not in {b["Name"] for b in s3.list_buckets()["Buckets"]}
    print(f"\n{form} timings (s): " + ", ".join(f"{k} {v:.2f}" for k, v in timings.items()))


def test_the_mixed_stack_is_abandoned_and_adopted_whole(heat: Any, moto: MotoServer) -> None:
    """Abandon, then adopt: the subnet, group, volume and attachment (and the rest) are
    taken over as they are, checked without drift, and deleted by the adopting stack."""
    names = FORMS["hot"].names
    stack_id = heat.stacks.create(stack_name=unique("whole-"), template=HOT,
                                  parameters={names["topic_name"]: unique("whole-")}
                                  )["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=120)
    before = physical_ids(heat, stack_id)
    data = heat.stacks.abandon(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE", timeout=60)
    assert len(tagged(moto, stack_id)) == 5  # abandoned: all still there

    adopted = heat.stacks.create(stack_name=unique("adopted-"),
                                 adopt_stack_data=json.dumps(data))["stack"]["id"]
    wait_for_status(heat, adopted, "ADOPT_COMPLETE", timeout=60)
    assert physical_ids(heat, adopted) == before
    heat.actions.check(adopted)
    wait_for_status(heat, adopted, "CHECK_COMPLETE", timeout=60)
    assert {name: heat.resources.get(adopted, name).drift for name in before} == (
        dict.fromkeys(before, {}))
    heat.stacks.delete(adopted)
    wait_for_status(heat, adopted, "DELETE_COMPLETE", timeout=120)
    # The things still carry the first stack's id in their tags: that is how to look.
    assert tagged(moto, stack_id) == []
