"""The placement lifecycle plugin with availability zones as its racks: instances of a
spread group land in different zones, and a volume placed with an instance lands in
that instance's zone, so it can be attached."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional import servers
from tests.functional.aws.conftest import start_kiln
from tests.functional.aws.endpoint import MotoServer
from tests.functional.conftest import heat_for, unique, wait_for_status

INVENTORY = """\
units: [instances, gb]
racks:
  us-east-1a:
    hosts:
      pool-1a: {instances: 4, gb: 100}
  us-east-1b:
    hosts:
      pool-1b: {instances: 4, gb: 100}
types:
  AWS::EC2::Instance:
    cost: {instances: 1}
  AWS::EC2::Volume:
    cost: {gb: {property: Size}}
"""

TEMPLATE = """\
heat_template_version: 2018-08-31
resources:
  web1:
    type: AWS::EC2::Instance
    properties: {ImageId: ami-12c6146b}
    metadata: {placement: {spread_group: web, spread_racks: 2}}
  web2:
    type: AWS::EC2::Instance
    properties: {ImageId: ami-12c6146b}
    metadata: {placement: {spread_group: web}}
  data:
    type: AWS::EC2::Volume
    properties: {Size: 60}
    metadata: {placement: {same_rack_as: web2}}
  attachment:
    type: AWS::EC2::VolumeAttachment
    properties:
      InstanceId: {get_resource: web2}
      VolumeId: {get_resource: data}
      Device: /dev/sdf
"""


@pytest.fixture(scope="module")
def placed(tmp_path_factory: pytest.TempPathFactory, moto: MotoServer
           ) -> Iterator[servers.Kiln]:
    inventory = tmp_path_factory.mktemp("inventory") / "inventory.yaml"
    inventory.write_text(INVENTORY)
    kiln = start_kiln(tmp_path_factory, moto.url,
                      OS_LIFECYCLE_PLACEMENT__INVENTORY_FILE=str(inventory))
    yield kiln
    kiln.stop()


def test_zones_are_racks_for_instances_and_volumes(placed: servers.Kiln,
                                                   moto: MotoServer) -> None:
    tenant = servers.new_tenant(placed.env, "placed")
    heat: Any = heat_for(placed, tenant)
    name = unique("placed-")
    stack_id = heat.stacks.create(stack_name=name, template=TEMPLATE)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=90)
    ids = {r.resource_name: r.physical_resource_id for r in heat.resources.list(stack_id)}
    ec2 = moto.client("ec2")
    zones = {name: ec2.describe_instances(InstanceIds=[ids[name]])["Reservations"][0][
        "Instances"][0]["Placement"]["AvailabilityZone"] for name in ("web1", "web2")}
    assert sorted(zones.values()) == ["us-east-1a", "us-east-1b"]
    volume = ec2.describe_volumes(VolumeIds=[ids["data"]])["Volumes"][0]
    assert volume["AvailabilityZone"] == zones["web2"]
    assert [a["InstanceId"] for a in volume["Attachments"]] == [ids["web2"]]
    body = heat.http_client.get(f"/stacks/{name}/{stack_id}/lifecycle").json()["lifecycle"]
    placement = next(p["report"] for p in body["plugins"] if p["plugin"] == "placement")
    report = {r["resource"]: r["rack"] for r in placement}
    assert report == {"web1": zones["web1"], "web2": zones["web2"], "data": zones["web2"]}
    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE", timeout=60)
