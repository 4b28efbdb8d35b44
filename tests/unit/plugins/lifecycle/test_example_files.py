"""Every example file under etc/kiln/ that a lifecycle plugin reads loads with that
plugin's loader, so a shipped example never stops a process that copies it."""

from __future__ import annotations

from collections.abc import Callable, Sized
from pathlib import Path
from typing import Any

import pytest

from plugins.lifecycle.approval.loader import load_rules as load_approval_rules
from plugins.lifecycle.placement.inventory import load_inventory
from plugins.lifecycle.policy.loader import load_rules as load_policy_rules

ETC = Path(__file__).resolve().parents[4] / "etc" / "kiln"
#: Each example's loader, and what of its result says that the example is not empty.
LOADERS: dict[str, tuple[Callable[[str], Any], Callable[[Any], Sized]]] = {
    "policy.yaml.example": (load_policy_rules, lambda rules: rules),
    "approval.yaml.example": (load_approval_rules, lambda rules: rules),
    "placement-inventory.yaml.example": (load_inventory, lambda inventory: inventory.racks),
}


def test_every_example_file_has_a_loader() -> None:
    assert sorted(path.name for path in ETC.glob("*.yaml.example")) == sorted(LOADERS)


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_the_example_file_loads(name: str) -> None:
    load, contents = LOADERS[name]

    assert len(contents(load(str(ETC / name)))) > 0
