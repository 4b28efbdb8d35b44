"""OS::Heat::Stack and AWS::CloudFormation::Stack: how ``get_resource`` refers to them,
as Heat 27 does (heat/engine/resources/openstack/heat/stack.py keeps the default, the
child's id; aws/cfn/stack.py answers the child's ARN)."""

from __future__ import annotations

from plugins.resources.nested_stack import CloudFormationStack, LocalStack
from tests.unit.plugins.resources.conftest import Build, FakeRuntime

CHILD = "0b6f64c4-6d44-4bd5-8c8e-2b0a5e7cbd6c"


def test_an_os_heat_stack_is_referred_to_by_its_childs_id(build: Build) -> None:
    res = build(LocalStack, {"template": "heat_template_version: 2016-10-14\n"},
                physical_id=CHILD)

    assert res.get_reference_id() == CHILD


def test_a_cloudformation_stack_is_referred_to_by_its_childs_arn(
        build: Build, runtime: FakeRuntime) -> None:
    runtime.tenant_id = "tenant 1"  # quoted, as Heat quotes it
    res = build(CloudFormationStack, {"TemplateURL": "child.yaml"}, physical_id=CHILD)

    assert res.get_reference_id() == (
        f"arn:openstack:heat::tenant%201:stacks/{res.physical_resource_name()}/{CHILD}")
    assert res.physical_resource_name().startswith("teststack-res-")


def test_a_stack_resource_not_created_is_referred_to_by_its_name(build: Build) -> None:
    # Heat's default, and aws/cfn/stack.py's: the name until the child exists.
    assert build(CloudFormationStack, {"TemplateURL": "child.yaml"}).get_reference_id() \
        == "res"
    assert build(LocalStack, {"template": "heat_template_version: 2016-10-14\n"}
                 ).get_reference_id() == "res"
