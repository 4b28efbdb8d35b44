"""engine.resources.abandon_data: Heat's abandon layout, built once for abandon, export
and snapshots (HOT and CFN metadata alike), and the one way it is shown: hidden parameter
values and the types' secret data masked wherever they appear."""

from __future__ import annotations

import dataclasses
from typing import Any

from engine.resources.abandon_data import layout, shown
from engine.resources.registry import ResourceTypeRegistry
from engine.template.parameters import MASK

TOKEN = "t0ken-s3cret-value"


@dataclasses.dataclass
class StackFacts:
    template: Any
    parameters: Any = dataclasses.field(default_factory=dict)
    environment: Any = dataclasses.field(default_factory=dict)
    id: str = "stack-id"
    name: str = "web"
    tenant_id: str = "tenant"
    action: str = "CREATE"
    files: Any = None
    tags: Any = None


@dataclasses.dataclass
class RowFacts:
    name: str
    type: str
    data: Any = None
    physical_id: str | None = "phys"
    action: str = "CREATE"
    status: str = "COMPLETE"


def test_the_layout_is_heats_with_hot_or_cfn_metadata_and_nothing_masked() -> None:
    hot = {"heat_template_version": "2018-08-31",
           "parameters": {"pw": {"type": "string", "hidden": True}},
           "resources": {"a": {"type": "OS::Heat::None", "metadata": {"m": 1}}}}
    stack = StackFacts(hot, parameters={"pw": "hush"},
                       environment={"parameter_defaults": {"x": 1}}, tags=["t"])
    data = layout(stack, [RowFacts("a", "OS::Heat::None", {"k": "v"}),
                          RowFacts("gone", "OS::Heat::None", physical_id=None)], "FAILED")
    assert data == {
        "name": "web", "id": "stack-id", "action": "CREATE", "status": "FAILED",
        "template": hot,
        "environment": {"parameter_defaults": {"x": 1}, "parameters": {"pw": "hush"}},
        "files": {}, "project_id": "tenant", "stack_user_project_id": "tenant",
        "tags": ["t"],
        "resources": {
            "a": {"name": "a", "resource_id": "phys", "type": "OS::Heat::None",
                  "action": "CREATE", "status": "COMPLETE", "metadata": {"m": 1},
                  "resource_data": {"k": "v"}},
            "gone": {"name": "gone", "resource_id": None, "type": "OS::Heat::None",
                     "action": "CREATE", "status": "COMPLETE", "metadata": {},
                     "resource_data": {}}}}

    cfn = {"AWSTemplateFormatVersion": "2010-09-09",
           "Resources": {"a": {"Type": "OS::Heat::None", "Metadata": {"m": 2}}}}
    data = layout(StackFacts(cfn), [RowFacts("a", "OS::Heat::None")], "COMPLETE")
    assert data["resources"]["a"]["metadata"] == {"m": 2}


def test_shown_masks_hidden_values_and_secret_data_wherever_they_appear(
        registry: ResourceTypeRegistry) -> None:
    template = {"heat_template_version": "2018-08-31",
                "parameters": {"pw": {"type": "string", "hidden": True,
                                      "default": "dflt-secret"}},
                "resources": {"handle": {"type": "OS::Heat::WaitConditionHandle"}}}
    rows = [RowFacts("handle", "OS::Heat::WaitConditionHandle",
                     {"token": TOKEN, "endpoint": "http://kiln/signal"}),
            # A copy elsewhere is masked too: the value, not only the entry.
            RowFacts("copy", "OS::Heat::Value", {"seen": f"Bearer {TOKEN}", "pw": "given-pw"}),
            RowFacts("old", "Uninstalled::Type", {"token": "not-known-secret"})]
    data = layout(StackFacts(template, parameters={"pw": "given-pw"}), rows, "COMPLETE")

    view = shown(data, registry)

    resources = view["resources"]
    assert resources["handle"]["resource_data"] == {"token": MASK,
                                                    "endpoint": "http://kiln/signal"}
    assert resources["copy"]["resource_data"] == {"seen": f"Bearer {MASK}", "pw": MASK}
    # A type uninstalled since: what it declared cannot be known.
    assert resources["old"]["resource_data"] == {"token": "not-known-secret"}
    assert view["environment"]["parameters"] == {"pw": MASK}
    assert view["template"]["parameters"]["pw"]["default"] == MASK
    text = repr(view)
    assert TOKEN not in text and "given-pw" not in text and "dflt-secret" not in text
    # The data itself is left as it was: a snapshot's row keeps it for the restore.
    assert data["resources"]["handle"]["resource_data"]["token"] == TOKEN
    assert data["environment"]["parameters"] == {"pw": "given-pw"}
