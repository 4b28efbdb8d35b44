"""Template ("provider") resources: how ``get_resource`` refers to one, as Heat 27's
template_resource.py get_reference_id does."""

from __future__ import annotations

from typing import Any

from engine.resources.nested import TemplateResource, template_resource
from tests.unit.plugins.resources.conftest import FakeRuntime

CHILD = "0b6f64c4-6d44-4bd5-8c8e-2b0a5e7cbd6c"


def provider(physical_id: str | None = None, outputs: dict[str, Any] | None = None
             ) -> TemplateResource:
    return template_resource("web.yaml")("res", {}, FakeRuntime(), physical_id=physical_id,
                                         data={"outputs": outputs or {}})


def test_a_template_resource_is_referred_to_by_its_childs_arn() -> None:
    res = provider(CHILD, {"ip": "10.0.0.1"})

    assert res.get_reference_id() == (
        f"arn:openstack:heat::tenant-1:stacks/{res.physical_resource_name()}/{CHILD}")


def test_the_templates_stack_id_output_is_its_reference_when_it_has_one() -> None:
    assert provider(CHILD, {"OS::stack_id": "server-id-1"}).get_reference_id() == "server-id-1"


def test_a_template_resource_not_created_is_referred_to_by_its_name() -> None:
    # Heat's template_resource.py: the name while there is no child stack, even with
    # an OS::stack_id output in the template.
    assert provider().get_reference_id() == "res"
    assert provider(None, {"OS::stack_id": "server-id-1"}).get_reference_id() == "res"
