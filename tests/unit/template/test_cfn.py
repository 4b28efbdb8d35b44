"""engine.template.cfn and the format detection of engine.template.loader."""

from __future__ import annotations

import pytest

from engine.errors import AmbiguousTemplateVersion, InvalidTemplateVersion, StackValidationFailed
from engine.ir.build import build, pseudo_parameters
from engine.schema import AllowedValues, Length, Range
from engine.template.functions import GetParam, GetResource
from engine.template.loader import load
from engine.template.model import Template
from engine.template.parse import parse_text
from tests.unit.ir.conftest import lookup

FULL = """\
AWSTemplateFormatVersion: 2010-09-09
Description: A twin
Parameters:
  Env: {Type: String, Default: prod, AllowedValues: [prod, dev],
        ConstraintDescription: prod or dev}
  Password: {Type: String, NoEcho: true, MinLength: 4, MaxLength: 16}
  Size: {Type: Number, Default: 2, MinValue: 1, MaxValue: 8}
Mappings:
  Sizes: {prod: {flavor: big}, dev: {flavor: small}}
Conditions:
  IsProd: {Fn::Equals: [{Ref: Env}, prod]}
  IsDev: {Fn::Not: [IsProd]}
Resources:
  web:
    Type: Test::Plain
    DependsOn: db
    Properties:
      value:
        Fn::Join:
          - "-"
          - [{Ref: "AWS::StackName"}, {Fn::FindInMap: [Sizes, {Ref: Env}, flavor]}]
  db:
    Type: Test::Plain
    DeletionPolicy: Retain
    Properties: {value: {Fn::If: [IsProd, {Ref: web2}, none]}}
  web2:
    Type: Test::Plain
    Condition: IsProd
    Metadata: {role: spare}
Outputs:
  url: {Value: {Fn::GetAtt: [web, value]}, Description: the value}
  spare: {Value: {Ref: web2}, Condition: IsProd}
"""


def cfn(text: str) -> Template:
    return load(parse_text(text))


def refusal(text: str) -> str:
    with pytest.raises(StackValidationFailed) as caught:
        cfn(text)
    return str(caught.value)


def test_a_full_template() -> None:
    template = cfn(FULL)

    assert template.version.is_cfn and template.description == "A twin"
    env, password, size = (template.parameters[n] for n in ("Env", "Password", "Size"))
    assert (env.type, env.default, env.constraints) == (
        "string", "prod", ((AllowedValues(("prod", "dev")), "prod or dev"),))
    assert password.hidden and password.constraints == ((Length(4, 16), ""),)
    assert (size.type, size.constraints) == ("number", ((Range(1, 8), ""),))
    web = template.resources["web"]
    assert web.depends_on == ("db",)
    assert template.resources["db"].deletion_policy == "Retain"
    assert template.resources["web2"].metadata == {"role": "spare"}
    assert isinstance(template.outputs["spare"].value, GetResource)


def test_ref_is_a_resource_or_a_parameter_by_name() -> None:
    template = cfn(FULL)

    join = template.resources["web"].properties["value"]
    stack_name, _ = join.lists[0]
    assert isinstance(stack_name, GetParam) and stack_name.name == "AWS::StackName"


def test_the_ir_of_a_cfn_template() -> None:
    stack = build(cfn(FULL), {"Password": "pass1"}, pseudo_parameters("id", "st", "t"), lookup)

    assert set(stack.resources) == {"web", "db", "web2"}
    assert stack.resources["db"].requires == frozenset({"web2"})
    assert stack.resources["web"].requires == frozenset({"db"})
    assert stack.parameters["AWS::StackName"] == "st"
    assert stack.parameters["AWS::StackId"] == "arn:openstack:heat::t:stacks/st/id"
    assert "OS::stack_id" not in stack.parameters

    dev = build(cfn(FULL), {"Password": "pass1", "Env": "dev"},
                pseudo_parameters("id", "st", "t"), lookup)
    assert set(dev.resources) == {"web", "db"}
    assert dev.resources["db"].properties == {"value": "none"}
    assert dev.outputs["spare"].value is None


POLICY = """\
AWSTemplateFormatVersion: 2010-09-09
Parameters:
  Keep: {Type: String, Default: "no"}
  Policy: {Type: String, Default: Retain}
Conditions:
  Kept: {Fn::Equals: [{Ref: Keep}, "yes"]}
Resources:
  by_ref: {Type: Test::Plain, DeletionPolicy: {Ref: Policy}}
  by_if: {Type: Test::Plain, DeletionPolicy: {Fn::If: [Kept, Retain, Delete]}}
"""


def test_a_deletion_policy_from_parameters_is_decided_as_heat_does() -> None:
    pseudo = pseudo_parameters("id", "st", "t")

    stack = build(cfn(POLICY), {}, pseudo, lookup)
    assert {n: r.deletion_policy for n, r in stack.resources.items()} == {
        "by_ref": "Retain", "by_if": "Delete"}
    kept = build(cfn(POLICY), {"Keep": "yes", "Policy": "Delete"}, pseudo, lookup)
    assert {n: r.deletion_policy for n, r in kept.resources.items()} == {
        "by_ref": "Delete", "by_if": "Retain"}
    with pytest.raises(StackValidationFailed) as caught:
        build(cfn(POLICY), {"Policy": "retain"}, pseudo, lookup)  # CFN: exact names only
    assert str(caught.value) == ('template:8 Resources.by_ref.DeletionPolicy: Invalid '
                                 'deletion policy "retain"')


@pytest.mark.parametrize(("text", "message"), [
    ("AWSTemplateFormatVersion: 2010-09-09\nFoo: {}\n",
     "template:2 Foo: The template section is invalid: Foo"),
    ("HeatTemplateFormatVersion: 2012-12-12\nConditions: {}\n",
     "template:2 Conditions: The template section is invalid: Conditions"),
    ("AWSTemplateFormatVersion: 2010-09-09\nResources:\n  r: {Type: T, Propeties: {}}\n",
     'template:3 Resources.r.Propeties: "Propeties" is not a valid keyword inside a '
     "resource definition"),
    ("AWSTemplateFormatVersion: 2010-09-09\nResources:\n  r: {Properties: {}}\n",
     "template:3 Resources.r.Type: Each Resource must contain a Type key."),
    ("AWSTemplateFormatVersion: 2010-09-09\nResources:\n  r: {Type: T, DeletionPolicy: Gone}\n",
     'template:3 Resources.r.DeletionPolicy: Invalid deletion policy "Gone"'),
    ("AWSTemplateFormatVersion: 2010-09-09\nParameters:\n  p: {Type: String, Foo: 1}\n",
     "template:3 Parameters.p.Foo: Invalid key 'Foo' for parameter (p)"),
    ("AWSTemplateFormatVersion: 2010-09-09\nParameters:\n  p: {Default: 1}\n",
     "template:3 Parameters.p: Missing parameter type for parameter: p"),
    ("AWSTemplateFormatVersion: 2010-09-09\nParameters:\n  p: {Type: Text}\n",
     "template:3 Parameters.p.Type: Invalid type (Text)"),
    ("AWSTemplateFormatVersion: 2010-09-09\nOutputs:\n  o: {Description: x}\n",
     "template:3 Outputs.o: Each output definition must contain a Value key."),
    ("AWSTemplateFormatVersion: 2010-09-09\nConditions:\n  c: {Fn::GetAtt: [a, b]}\n",
     'template:3 Conditions.c.Fn::GetAtt: The function "Fn::GetAtt" is invalid in this '
     "context"),
    ("AWSTemplateFormatVersion: 2010-09-09\nResources:\n  r: {Type: T, Condition: Nope}\n",
     'template:3 Resources.r.Condition: Invalid condition "Nope"'),
])
def test_refusals(text: str, message: str) -> None:
    assert refusal(text) == message


def test_an_unknown_cfn_version() -> None:
    with pytest.raises(InvalidTemplateVersion) as caught:
        cfn("AWSTemplateFormatVersion: 2011-01-01\n")

    assert caught.value.message == ('The template version is invalid: '
                                    '"AWSTemplateFormatVersion: 2011-01-01". '
                                    '"AWSTemplateFormatVersion" should be one of: 2010-09-09')


def test_two_version_keys_are_ambiguous() -> None:
    with pytest.raises(AmbiguousTemplateVersion) as caught:
        cfn("heat_template_version: rocky\nAWSTemplateFormatVersion: 2010-09-09\n")

    assert caught.value.message == ("The template version is invalid: Ambiguous versions "
                                    "(heat_template_version, AWSTemplateFormatVersion)")


def test_the_heat_cfn_format_has_no_fn_if() -> None:
    template = cfn("HeatTemplateFormatVersion: 2012-12-12\nResources:\n"
                   "  r: {Type: Test::Anything, Properties: {x: {Fn::If: [c, a, b]}}}\n")

    assert template.resources["r"].properties == {"x": {"Fn::If": ["c", "a", "b"]}}
