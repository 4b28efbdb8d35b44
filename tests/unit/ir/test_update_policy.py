"""update_policy (CFN UpdatePolicy) in the IR: checked against the type's schema, typed
with its defaults, known before anything runs; errors name the line in either format."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import InvalidTemplateReference, StackValidationFailed
from engine.ir.build import build
from engine.ir.model import ResolvedStack
from engine.resources.registry import ResourceTypeRegistry
from engine.template.loader import load
from engine.template.parse import parse_text
from tests.unit.ir.conftest import PSEUDO

HOT = """\
heat_template_version: rocky
parameters:
  batch: {{type: number, default: 2}}
resources:
  group:
    type: {kind}
    update_policy: {policy}
    properties:
      resource_def: {{type: OS::Heat::None}}
  other:
    type: OS::Heat::None
"""


@pytest.fixture(scope="module")
def registry() -> ResourceTypeRegistry:
    return ResourceTypeRegistry.load()


def make(registry: ResourceTypeRegistry, text: str, **options: Any) -> ResolvedStack:
    return build(load(parse_text(text, "t.yaml")), {}, PSEUDO, registry.get,
                 constraints=registry.constraint, **options)


def refusal(registry: ResourceTypeRegistry, text: str) -> str:
    with pytest.raises(StackValidationFailed) as raised:
        make(registry, text)
    return str(raised.value)


def test_the_policy_is_typed_with_its_defaults(registry: ResourceTypeRegistry) -> None:
    ir = make(registry, HOT.format(kind="OS::Heat::ResourceGroup", policy=(
        "{rolling_update: {max_batch_size: {get_param: batch}, pause_time: '1.5'}}")))

    assert ir.resources["group"].update_policy == {
        "rolling_update": {"min_in_service": 0, "max_batch_size": 2, "pause_time": 1.5},
        "batch_create": None}
    assert ir.resources["other"].update_policy == {}


@pytest.mark.parametrize(("kind", "policy", "message"), [
    ("OS::Heat::None", "{rolling_update: {}}",
     "t.yaml:7 resources.group.update_policy.rolling_update: Unknown Property "
     "rolling_update"),
    ("OS::Heat::ResourceGroup", "{rolling_update: {max_batch_size: 0}}",
     "t.yaml:7 resources.group.update_policy.rolling_update: Property error: "
     "rolling_update.max_batch_size: 0 is out of range (min: 1, max: None)."),
    ("OS::Heat::ResourceGroup", "{batch_create: {pause_time: soon}}",
     "t.yaml:7 resources.group.update_policy.batch_create: Property error: "
     "batch_create.pause_time: Value 'soon' is not a number"),
    ("OS::Heat::ResourceGroup", "{batch_create: {max_batch_size: {get_attr: [other, x]}}}",
     "t.yaml:7 resources.group.update_policy.batch_create: The update policy may use only "
     "parameters, not other"),
])
def test_refusals(registry: ResourceTypeRegistry, kind: str, policy: str,
                  message: str) -> None:
    assert refusal(registry, HOT.format(kind=kind, policy=policy)) == message


def test_an_unknown_parameter_is_an_invalid_reference(registry: ResourceTypeRegistry
                                                      ) -> None:
    with pytest.raises(InvalidTemplateReference) as raised:
        make(registry, HOT.format(kind="OS::Heat::ResourceGroup",
                                  policy="{batch_create: {max_batch_size: {get_param: n}}}"))
    assert "resources.group.update_policy" in str(raised.value)


def test_validate_without_values_leaves_the_policy_for_later(
        registry: ResourceTypeRegistry) -> None:
    text = HOT.format(kind="OS::Heat::ResourceGroup",
                      policy="{batch_create: {max_batch_size: {get_param: n}}}").replace(
        "  batch: {type: number, default: 2}", "  n: {type: number}")

    ir = make(registry, text, require_all=False)

    assert ir.resources["group"].update_policy == {}


CFN = """\
AWSTemplateFormatVersion: 2010-09-09
Resources:
  group:
    Type: OS::Heat::ResourceGroup
    UpdatePolicy:
      batch_create: {max_batch_size: 3}
    Properties:
      resource_def: {type: OS::Heat::None}
      count: lots
"""


def test_cfn_errors_name_cfn_paths_and_lines(registry: ResourceTypeRegistry) -> None:
    assert refusal(registry, CFN) == (
        "t.yaml:9 Resources.group.Properties.count: Property error: count: Value 'lots' "
        "is not an integer")

    ir = make(registry, CFN.replace("count: lots", "count: 2"))
    assert ir.resources["group"].update_policy["batch_create"] == {
        "max_batch_size": 3, "pause_time": 0}
    unknown = CFN.replace("batch_create:", "AutoScalingRollingUpdate:").replace(
        "count: lots", "count: 2")
    assert refusal(registry, unknown) == (
        "t.yaml:6 Resources.group.UpdatePolicy.AutoScalingRollingUpdate: Unknown Property "
        "AutoScalingRollingUpdate")
