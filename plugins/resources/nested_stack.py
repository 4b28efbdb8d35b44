"""``OS::Heat::Stack`` (a template given as a property) and ``AWS::CloudFormation::Stack``
(a template named by URL): a stack in a stack."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from engine.errors import StackValidationFailed
from engine.resources.nested import ChildStackResource, nested_stacks
from engine.schema import INTEGER, MAP, STRING, Attribute, Property


class LocalStack(ChildStackResource):
    """A stack in a stack: ``template`` (text or a map) with ``parameters``.

    Heat's ``OS::Heat::Stack`` creates the child through another region's Heat API;
    Kiln creates it here, as a child stack of this one, and refuses a ``context`` that
    names another cloud."""

    support_version: ClassVar[str] = "2014.2"

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "context": Property(MAP, "Context for this stack.", default={}),
        "template": Property(STRING, "Template that specifies the stack to be created as "
                                     "a resource.", required=True, update_allowed=True),
        "timeout": Property(INTEGER, "Number of minutes to wait for this stack creation.",
                            update_allowed=True),
        "parameters": Property(MAP, "Set of parameters passed to this stack.", default={},
                               update_allowed=True),
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "stack_name": Attribute("Name of the stack.", type=STRING),
        "outputs": Attribute("A dict of key-value pairs output from the stack.", type=MAP),
    }

    @classmethod
    def validate_properties(cls, properties: Mapping[str, Any]) -> None:
        if properties.get("context"):
            raise StackValidationFailed(reason="OS::Heat::Stack: a context (another region "
                                               "or cloud) is not supported by Kiln; the "
                                               "stack is created locally")

    def child_definition(self) -> tuple[Any, str, Mapping[str, Any], int | None]:
        return (self.properties["template"], f"{self.name}.template",
                self.properties.get("parameters") or {}, self.properties.get("timeout"))

    def get_attribute(self, name: str) -> Any:
        if name == "outputs":
            return self.outputs() if self.physical_id else None
        if name == "stack_name":
            return self.data.get("stack_name") or (
                self.physical_resource_name() if self.physical_id else None)
        return None


class CloudFormationStack(ChildStackResource):
    """``AWS::CloudFormation::Stack``: a nested stack from the template at
    ``TemplateURL``, which Kiln reads from the request's ``files`` (it fetches no URL;
    heatclient puts the file there when the template names it)."""

    support_version: ClassVar[str] = "2014.1"
    allow_unknown_attributes: ClassVar[bool] = True  # Outputs.<name>

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "TemplateURL": Property(STRING, "The URL of a template that specifies the stack to "
                                        "be created as a resource.", required=True,
                                update_allowed=True),
        "TimeoutInMinutes": Property(INTEGER, "The length of time, in minutes, to wait for "
                                              "the nested stack creation.",
                                     update_allowed=True),
        "Parameters": Property(MAP, "The set of parameters passed to this nested stack.",
                               default={}, update_allowed=True),
    }

    def child_definition(self) -> tuple[Any, str, Mapping[str, Any], int | None]:
        url = self.properties["TemplateURL"]
        return (nested_stacks(self).template_file(url), url,
                self.properties.get("Parameters") or {},
                self.properties.get("TimeoutInMinutes"))

    def get_attribute(self, name: str) -> Any:
        if name.startswith("Outputs."):
            return self.outputs().get(name[len("Outputs."):])
        return None

    def get_reference_id(self) -> str | None:
        # Heat's AWS::CloudFormation::Stack is referred to by its child's ARN, and by its
        # name until the child exists (aws/cfn/stack.py); an OS::Heat::Stack (and a
        # group) by the child's id, the base class's default.
        return self.stack_arn() or self.name
