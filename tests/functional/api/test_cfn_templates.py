"""CloudFormation templates through python-heatclient: a CFN template and its HOT twin
give the same resources and outputs; a NoEcho value is masked wherever the stack is shown;
CFN errors name the line."""

from __future__ import annotations

import json
from typing import Any

import pytest
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status

CFN = """\
AWSTemplateFormatVersion: 2010-09-09
Description: the twins
Parameters:
  Env: {Type: String, Default: prod, AllowedValues: [prod, dev]}
  Names: {Type: CommaDelimitedList, Default: "a,b"}
  Secret: {Type: String, NoEcho: true, Default: sesame}
Mappings:
  Size: {prod: {len: "12"}, dev: {len: "6"}}
Conditions:
  IsProd: {Fn::Equals: [{Ref: Env}, prod]}
Resources:
  word:
    Type: OS::Heat::RandomString
    Properties:
      length: {Fn::FindInMap: [Size, {Ref: Env}, len]}
  label:
    Type: OS::Heat::Value
    DependsOn: word
    Properties:
      value: {Fn::Join: ["-", [{Ref: "AWS::StackName"}, {Fn::Select: [1, {Ref: Names}]}]]}
  extra:
    Type: OS::Heat::None
    Condition: IsProd
    DeletionPolicy: Retain
Outputs:
  label: {Value: {Fn::GetAtt: [label, value]}, Description: the label}
  kind: {Value: {Fn::If: [IsProd, big, small]}}
  extra: {Value: {Ref: extra}, Condition: IsProd}
  secret: {Value: {Fn::Replace: [{"%s%": {Ref: Secret}}, "pw=%s%"]}}
"""

HOT = """\
heat_template_version: 2016-10-14
description: the twins
parameters:
  Env: {type: string, default: prod, constraints: [{allowed_values: [prod, dev]}]}
  Names: {type: comma_delimited_list, default: "a,b"}
  Secret: {type: string, hidden: true, default: sesame}
conditions:
  IsProd: {equals: [{get_param: Env}, prod]}
resources:
  word:
    type: OS::Heat::RandomString
    properties:
      length: {if: [IsProd, 12, 6]}
  label:
    type: OS::Heat::Value
    depends_on: word
    properties:
      value: {list_join: ["-", [{get_param: "OS::stack_name"}, {get_param: [Names, 1]}]]}
  extra:
    type: OS::Heat::None
    condition: IsProd
    deletion_policy: Retain
outputs:
  label: {value: {get_attr: [label, value]}, description: the label}
  kind: {value: {if: [IsProd, big, small]}}
  extra: {value: {get_resource: extra}, condition: IsProd}
  secret: {value: {str_replace: {template: "pw=%s%", params: {"%s%": {get_param: Secret}}}}}
"""


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln) -> Any:
    return heat_for(kiln_all, servers.new_tenant(kiln_all.env, unique("cfn-")))


def created(heat: Any, template: str, name: str, **fields: Any) -> Any:
    stack_id = heat.stacks.create(stack_name=name, template=template, **fields)["stack"]["id"]
    return wait_for_status(heat, stack_id, "CREATE_COMPLETE")


def shape(heat: Any, stack: Any) -> dict[str, Any]:
    """What must be the same for the twins: resources (name, type), the outputs other
    than ids, the word's length and the masked parameter."""
    resources = sorted((r.resource_name, r.resource_type)
                       for r in heat.resources.list(stack.id))
    outputs = {o["output_key"]: o["output_value"] for o in stack.outputs}
    word = heat.resources.get(stack.id, "word").attributes["value"]
    return {"resources": resources, "label": outputs["label"], "kind": outputs["kind"],
            "extra": bool(outputs["extra"]), "secret": outputs["secret"],
            "word": len(word), "description": stack.description,
            "Secret": stack.parameters["Secret"]}


@pytest.mark.parametrize("env", ["prod", "dev"])
def test_a_cfn_template_and_its_hot_twin_give_the_same_stack(heat: Any, env: str) -> None:
    name = unique("twin")
    cfn = created(heat, CFN, name, parameters={"Env": env})
    hot = created(heat, HOT, name + "-hot", parameters={"Env": env})

    cfn_shape, hot_shape = shape(heat, cfn), shape(heat, hot)
    hot_shape["label"] = hot_shape["label"].replace(name + "-hot", name)
    assert cfn_shape == hot_shape
    assert cfn_shape["label"] == f"{name}-b"
    assert cfn_shape["word"] == (12 if env == "prod" else 6)
    assert cfn_shape["kind"] == ("big" if env == "prod" else "small")
    assert cfn_shape["Secret"] == "******"
    assert cfn.parameters["AWS::StackName"] == name
    assert cfn.parameters["AWS::StackId"].startswith("arn:openstack:heat::")


def test_a_noecho_value_is_masked_in_the_environment_the_stack_and_its_abandon_data(
        heat: Any) -> None:
    stack = created(heat, CFN, unique("noecho"), parameters={"Secret": "open-s3same-x"})

    assert stack.parameters["Secret"] == "******"
    environment = heat.stacks.environment(stack.id)
    assert environment["parameters"] == {"Secret": "******"}
    exported = heat.stacks.export(stack.id)
    assert exported["environment"]["parameters"] == {"Secret": "******"}
    assert "open-s3same-x" not in json.dumps(exported)
    # Abandon data never carries a hidden value: an adopt must give it again.
    with pytest.raises(heat_exc.HTTPBadRequest, match="Hidden parameters Secret are masked"):
        heat.stacks.create(stack_name=unique("adopted"), adopt_stack_data=json.dumps(exported))
    data = heat.stacks.abandon(stack.id)
    assert data["environment"]["parameters"] == {"Secret": "******"}
    assert "open-s3same-x" not in json.dumps(data)
    wait_for_status(heat, stack.id, "DELETE_COMPLETE")


def test_cfn_errors_name_the_line(heat: Any) -> None:
    broken = CFN.replace("{Fn::FindInMap: [Size, {Ref: Env}, len]}",
                         "{Fn::FindInMap: [Size, {Ref: Env}]}")

    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(stack_name=unique("bad"), template=broken)

    assert ("template:15 Resources.word.Properties.length.Fn::FindInMap: Arguments to "
            '"Fn::FindInMap" must be of the form [map_name, top_level_key, '
            "second_level_key]") in str(caught.value)


NESTED_CFN = """\
AWSTemplateFormatVersion: 2010-09-09
Parameters:
  Label: {Type: String}
Resources:
  value:
    Type: OS::Heat::Value
    Properties: {value: {Fn::Join: ["-", [{Ref: Label}, nested]]}}
Outputs:
  Value: {Value: {Fn::GetAtt: [value, value]}}
"""


def test_a_cloudformation_nested_stack(heat: Any) -> None:
    parent = ("AWSTemplateFormatVersion: 2010-09-09\nResources:\n  child:\n"
              "    Type: AWS::CloudFormation::Stack\n"
              "    Properties:\n      TemplateURL: http://example.com/child.yaml\n"
              "      Parameters: {Label: outer}\n"
              "Outputs:\n  out: {Value: {Fn::GetAtt: [child, Outputs.Value]}}\n")
    stack = created(heat, parent, unique("cfnnest"),
                    files={"http://example.com/child.yaml": NESTED_CFN})

    assert {o["output_key"]: o["output_value"] for o in stack.outputs} == {
        "out": "outer-nested"}
