"""engine.resources.registry: a type's declared support status is checked at start."""

from __future__ import annotations

from typing import ClassVar

import pytest
from stevedore.extension import Extension

from engine.errors import PluginLoadFailed
from engine.resources.base import Resource
from engine.resources.registry import ResourceTypeRegistry


def extension(name: str, plugin: type[Resource]) -> Extension[Resource]:
    return Extension(name, None, plugin, None)  # type: ignore[arg-type]


class Deprecated(Resource):
    support_status: ClassVar[str] = "DEPRECATED"


class Hidden(Resource):
    support_status: ClassVar[str] = "HIDDEN"


class Typo(Resource):
    support_status: ClassVar[str] = "Supported"


def test_heats_statuses_are_accepted() -> None:
    registry = ResourceTypeRegistry.from_extensions([extension("A::Old", Deprecated),
                                                     extension("A::New", Resource)])
    assert registry.names() == ["A::New", "A::Old"]


@pytest.mark.parametrize("plugin", [Hidden, Typo])
def test_hidden_or_unknown_status_stops_the_start(plugin: type[Resource]) -> None:
    with pytest.raises(PluginLoadFailed) as raised:
        ResourceTypeRegistry.from_extensions([extension("A::Bad", plugin)])
    message = str(raised.value)
    assert "A::Bad" in message
    assert "is not one of UNKNOWN, SUPPORTED, DEPRECATED, UNSUPPORTED" in message
