"""A delete of a resource that has no physical id (its create ran, but failed or died
before the backend named anything) completes and calls nothing outside Kiln, for every
installed type and for template resources: Heat's rule that what has no physical id was
never made, so a stack whose create failed early can always be deleted.

Delay and TestResource still wait their delete time (none by default), as in Heat: a
wait is no call. WaitConditionHandle revokes its signal tokens, which are Kiln's own
rows. The engine does not call ``handle_delete`` at all for a resource whose create never
started (``engine/worker/step_decision.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.resources.base import Resource
from engine.resources.nested import template_resource
from engine.resources.registry import ResourceTypeRegistry
from tests.unit.plugins.resources.conftest import FakeRuntime

#: Polls a delete may take: each waits as long as the type asks (at least one second).
POLLS = 100


class Outside:
    """Everything outside the resource's own rows: backend services (``runtime.service``)
    and child stacks (``runtime.nested``). Any use is recorded and refused."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getitem__(self, service: str) -> Any:
        self.calls.append(f"service {service}")
        raise AssertionError(f"a delete without a physical id asked for {service}")

    def __getattr__(self, name: str) -> Any:
        self.calls.append(f"nested.{name}")
        raise AssertionError(f"a delete without a physical id called nested.{name}")


def _types() -> dict[str, type[Resource]]:
    registry = ResourceTypeRegistry.load()
    types = {name: registry.get(name) for name in registry.names()}
    types["provider.yaml"] = template_resource("provider.yaml")
    return types


TYPES = _types()


@pytest.mark.parametrize("type_name", sorted(TYPES))
def test_a_delete_without_a_physical_id_completes_and_calls_nothing(
        runtime: FakeRuntime, type_name: str) -> None:
    cls = TYPES[type_name]
    outside = Outside()
    runtime.services = outside  # type: ignore[assignment]
    runtime.nested = outside  # type: ignore[attr-defined]
    # The properties a create that failed had: the defaults (required ones unset, which
    # no delete may need).
    properties = {name: prop.default for name, prop in cls.properties_schema.items()}
    resource = cls("res", properties, runtime, physical_id=None)

    token = resource.handle_delete()
    for _ in range(POLLS):
        if resource.check_delete_complete(token):
            break
        runtime.advance(max(resource.next_check_in(token) or 0.0, 1.0))
    else:
        pytest.fail(f"{type_name}'s delete did not complete")

    assert outside.calls == []
    assert runtime.recorded == []  # nothing made on the way out
