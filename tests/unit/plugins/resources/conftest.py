"""A fake worker runtime, so plugins run without a database or a real clock."""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

import pytest

from engine.resources.base import IssuedSignalToken, Resource, SignalledResource
from engine.schema import coerce_properties


class FakeRuntime:
    """Satisfies ``engine.resources.base.Runtime``; the clock moves only when told to."""

    def __init__(self) -> None:
        self.stack_id = "5f0e9a1c-0000-4000-8000-000000000001"
        self.stack_name = "teststack"
        self.tenant_id = "tenant-1"
        self.resource_key = "5f0e9a1c-0000-4000-8000-000000000001/res/1"
        self.clock = 1_700_000_000.0
        self.recorded: list[str] = []
        self.issued: list[IssuedSignalToken] = []
        self.revoked = 0
        #: What ``service`` answers (the AWS types' tests put a real client factory here).
        self.services: dict[str, Any] = {}
        #: What ``placement`` answers.
        self.placed: Mapping[str, Any] | None = None
        #: What ``find_signalled_resource`` answers, by reference id.
        self.signalled: dict[str, SignalledResource] = {}

    def now(self) -> float:
        return self.clock

    def service(self, name: str) -> Any:
        return self.services[name]

    def placement(self) -> Mapping[str, Any] | None:
        return self.placed

    def advance(self, seconds: float) -> None:
        self.clock += seconds

    def record_physical_id(self, physical_id: str, data: Mapping[str, Any]) -> None:
        self.recorded.append(physical_id)
        self.recorded_data = dict(data)

    def issue_signal_token(self) -> IssuedSignalToken:
        number = len(self.issued) + 1
        issued = IssuedSignalToken(
            f"token-{number}", f"secret-{number}",
            f"http://kiln.test/v1/{self.tenant_id}/stacks/{self.stack_name}/{self.stack_id}"
            "/resources/res/signal")
        self.issued.append(issued)
        return issued

    def revoke_signal_tokens(self) -> None:
        self.revoked += 1

    def find_signalled_resource(self, reference_id: str) -> SignalledResource | None:
        return self.signalled.get(reference_id)


@pytest.fixture
def runtime() -> FakeRuntime:
    return FakeRuntime()


Build = Callable[..., Resource]


@pytest.fixture
def build(runtime: FakeRuntime) -> Build:
    """Make a resource from raw template properties, coerced as the engine would."""

    def make(
        cls: type[Resource],
        raw: Mapping[str, Any] | None = None,
        *,
        name: str = "res",
        physical_id: str | None = None,
        data: MutableMapping[str, Any] | None = None,
        update_policy: Mapping[str, Any] | None = None,
    ) -> Resource:
        properties = coerce_properties(
            cls.properties_schema, raw, f"resources.{name}.properties",
            allow_unknown=cls.allow_unknown_properties,
        )
        policy = coerce_properties(cls.update_policy_schema, update_policy, "update_policy")
        return cls(name, properties, runtime, physical_id=physical_id, data=data,
                   update_policy=policy)

    return make
