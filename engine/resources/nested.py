"""Resources whose physical thing is a child stack: the base every nested-stack type
shares, and template ("provider") resources, whose type is a template file.

The child is a real stack (its own row, operation and resources, worked on like any
other); these resources only start its operations through ``runtime.nested`` and watch
its state. The child's outputs are copied into the resource's data when an operation on
it completes, so attributes are read without touching the child again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol
from urllib.parse import quote

from engine.resources.base import Resource, Token
from engine.vocabulary import Action, Status


class ChildStackFailed(Exception):
    """The child stack's operation failed; the message is the child's reason."""


@dataclasses.dataclass(frozen=True)
class NestedState:
    """A child stack as its parent resource sees it."""

    action: str
    status: str  # IN_PROGRESS while any operation on it is unfinished
    status_reason: str
    outputs: Mapping[str, Any]


class NestedStacks(Protocol):
    """Child stacks of the stack a resource belongs to. The worker's runtime has it as
    ``runtime.nested``; runtimes that only read (the API's) do not."""

    def create(self, name: str, template: Any, parameters: Mapping[str, Any], *,
               template_file: str = "template", timeout_mins: int | None = None) -> str:
        """Start creating the child (or find the one this resource made); its id."""

    def update(self, stack_id: str, template: Any, parameters: Mapping[str, Any], *,
               template_file: str = "template", timeout_mins: int | None = None) -> None:
        """Start updating the child to the new definition; nothing when an update to that
        very definition is already running (a resumed step asking again)."""

    def delete(self, stack_id: str) -> None:
        """Start deleting the child (cancelling what it was doing)."""

    def act(self, stack_id: str, action: str) -> None:
        """Start ``SUSPEND``, ``RESUME`` or ``CHECK`` on the child; nothing when that
        action is already running on it."""

    def state(self, stack_id: str) -> NestedState | None:
        """The child's state; None when it no longer exists."""

    def resource_definitions(self, stack_id: str) -> Mapping[str, Any]:
        """The ``resources`` section of the child's template: the one its last operation
        applied, once the child has settled."""

    def template_file(self, name: str) -> Any:
        """The text of ``name`` in the parent stack's files."""


def nested_stacks(resource: Resource) -> NestedStacks:
    nested: NestedStacks | None = getattr(resource.runtime, "nested", None)
    if nested is None:
        raise ChildStackFailed("nested stacks are made by engine workers only")
    return nested


class ChildStackResource(Resource):
    """What the two kinds share: start an operation on the child, wait for it to settle.
    Suspend, resume and check of the parent reach the child, as in Heat."""

    check_supported: ClassVar[bool] = True  # the child's own check is the answer

    def child_definition(self) -> tuple[Any, str, Mapping[str, Any], int | None]:
        """(template, the file name errors should name, parameters, timeout in minutes)."""
        raise NotImplementedError

    # --- actions ------------------------------------------------------------------------

    def handle_create(self) -> Token:
        template, file, parameters, timeout = self.child_definition()
        # The child's name is stable for this resource, so a worker that takes over a
        # create finds the child its predecessor made instead of making a second one.
        child_id = nested_stacks(self).create(self.physical_resource_name(), template,
                                              parameters, template_file=file,
                                              timeout_mins=timeout)
        if self.physical_id != child_id:
            self.set_physical_id(child_id)
        return Action.CREATE

    def check_create_complete(self, token: Token) -> bool:
        return self._settled(Action.CREATE)

    def handle_update(self, prop_diff: Mapping[str, Any]) -> Token:
        template, file, parameters, timeout = self.child_definition()
        nested_stacks(self).update(self._child_id(), template, parameters,
                                   template_file=file, timeout_mins=timeout)
        return Action.UPDATE

    def check_update_complete(self, token: Token) -> bool:
        return self._settled(Action.UPDATE)

    def needs_replacement(self, prop_diff: Mapping[str, Any]) -> bool:
        return False  # the child stack is updated in place, as Heat updates it

    def handle_delete(self) -> Token:
        if self.physical_id is not None:
            nested_stacks(self).delete(self.physical_id)
        return Action.DELETE

    def check_delete_complete(self, token: Token) -> bool:
        if self.physical_id is None:
            return True
        state = nested_stacks(self).state(self.physical_id)
        if state is None or (state.action, state.status) == (Action.DELETE, Status.COMPLETE):
            return True
        return self._settled(Action.DELETE)

    def handle_suspend(self) -> Token:
        return self._act(Action.SUSPEND)

    def check_suspend_complete(self, token: Token) -> bool:
        return self.physical_id is None or self._settled(Action.SUSPEND)

    def handle_resume(self) -> Token:
        return self._act(Action.RESUME)

    def check_resume_complete(self, token: Token) -> bool:
        return self.physical_id is None or self._settled(Action.RESUME)

    def handle_check(self) -> Token:
        self._child_id()  # a child never made fails the check
        return self._act(Action.CHECK)

    def check_check_complete(self, token: Token) -> bool:
        return self._settled(Action.CHECK)

    # --- reads --------------------------------------------------------------------------

    def outputs(self) -> dict[str, Any]:
        return dict(self.data.get("outputs") or {})

    def stack_arn(self) -> str | None:
        """The child's ARN, ``arn:openstack:heat::<tenant>:stacks/<name>/<id>`` (Heat's
        ``HeatIdentifier.arn``); None before the child exists."""
        if self.physical_id is None:
            return None
        return (f"arn:openstack:heat::{quote(self.runtime.tenant_id, safe='')}:stacks/"
                f"{quote(self.physical_resource_name(), safe='')}/"
                f"{quote(self.physical_id, safe='')}")

    # --- helpers ------------------------------------------------------------------------

    def _child_id(self) -> str:
        if self.physical_id is None:
            raise ChildStackFailed("the nested stack was never created")
        return self.physical_id

    def _act(self, action: str) -> Token:
        if self.physical_id is not None:
            nested_stacks(self).act(self.physical_id, action)
        return action

    def _settled(self, action: str) -> bool:
        state: NestedState | None = nested_stacks(self).state(self._child_id())
        if state is None:
            raise ChildStackFailed("the nested stack is gone")
        if state.status == Status.IN_PROGRESS or state.action not in (action, Action.ROLLBACK):
            return False
        if state.status == Status.FAILED or state.action == Action.ROLLBACK:
            raise ChildStackFailed(state.status_reason)
        self.data["outputs"] = dict(state.outputs)
        return True


class TemplateResource(ChildStackResource):
    """A resource whose type is a template file (``type: web.yaml``, or a registry entry
    mapping a type to one): its properties are the template's parameters and its
    attributes the template's outputs. The registry makes one subclass per file
    (:func:`template_resource`), with ``template_name`` set."""

    allow_unknown_properties: ClassVar[bool] = True
    allow_unknown_attributes: ClassVar[bool] = True
    template_name: ClassVar[str] = ""

    def child_definition(self) -> tuple[Any, str, Mapping[str, Any], int | None]:
        return (nested_stacks(self).template_file(self.template_name), self.template_name,
                dict(self.properties), None)

    def get_attribute(self, name: str) -> Any:
        return self.outputs().get(name)

    def all_attributes(self) -> dict[str, Any]:
        return self.outputs()

    def get_reference_id(self) -> str | None:
        # Heat's rule (template_resource.py get_reference_id): the name until the child
        # exists, then the template's OS::stack_id output when it has one, else the
        # child's ARN.
        if self.physical_id is None:
            return self.name
        return self.outputs().get("OS::stack_id") or self.stack_arn()


def template_resource(template_name: str) -> type[TemplateResource]:
    """The resource class for the template file ``template_name``."""
    return type(f"TemplateResource[{template_name}]", (TemplateResource,),
                {"template_name": template_name, "__doc__": TemplateResource.__doc__})
