"""A fake worker runtime, so plugins run without a database or a real clock."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

import pytest

from engine.errors import InvalidRestrictedAction
from engine.resources.base import IssuedSignalToken, Resource, SignalledResource
from engine.schema import coerce_properties


class FakeSoftwareConfigs:
    """``engine.resources.base.SoftwareConfigStore`` in memory, documents as the real
    store's (``engine.db.software_configs``; the real one is tested in
    tests/unit/worker/test_software_store.py)."""

    def __init__(self) -> None:
        self.configs: dict[str, dict[str, Any]] = {}
        self.deployments: dict[str, dict[str, Any]] = {}

    def create_config(self, *, name: str | None, group: str | None, config: Any,
                      inputs: Sequence[Mapping[str, Any]],
                      outputs: Sequence[Mapping[str, Any]],
                      options: Mapping[str, Any] | None,
                      config_id: str | None = None) -> Mapping[str, Any]:
        config_id = config_id or str(uuid.uuid4())
        if config_id not in self.configs:
            self.configs[config_id] = copy.deepcopy({
                "id": config_id, "name": name, "group": group,
                "creation_time": "2026-11-22T12:00:00Z", "config": config,
                "inputs": list(inputs), "outputs": list(outputs), "options": options})
        return copy.deepcopy(self.configs[config_id])

    def get_config(self, config_id: str) -> Mapping[str, Any] | None:
        found = self.configs.get(config_id)
        return copy.deepcopy(found) if found is not None else None

    def delete_config(self, config_id: str) -> None:
        if any(d["config_id"] == config_id for d in self.deployments.values()):
            raise InvalidRestrictedAction(id=config_id)
        self.configs.pop(config_id, None)

    def create_deployment(self, deployment_id: str, *, config_id: str, server_id: str,
                          input_values: Mapping[str, Any] | None, action: str, status: str,
                          status_reason: str) -> Mapping[str, Any]:
        assert config_id in self.configs
        self.deployments.setdefault(deployment_id, copy.deepcopy({
            "id": deployment_id, "server_id": server_id, "input_values": input_values,
            "output_values": None, "action": action, "status": status,
            "status_reason": status_reason, "config_id": config_id,
            "creation_time": "2026-11-22T12:00:00Z"}))
        return copy.deepcopy(self.deployments[deployment_id])

    def get_deployment(self, deployment_id: str) -> Mapping[str, Any] | None:
        found = self.deployments.get(deployment_id)
        return copy.deepcopy(found) if found is not None else None

    def update_deployment(self, deployment_id: str, changes: Mapping[str, Any]
                          ) -> Mapping[str, Any] | None:
        if deployment_id not in self.deployments:
            return None
        assert changes.get("config_id", next(iter(self.configs), None)) in self.configs
        self.deployments[deployment_id].update(copy.deepcopy(dict(changes)))
        self.deployments[deployment_id]["updated_time"] = "2026-11-22T12:00:01Z"
        return copy.deepcopy(self.deployments[deployment_id])

    def change_deployment(self, deployment_id: str,
                          change: Callable[[Mapping[str, Any]], Mapping[str, Any] | None]
                          ) -> Mapping[str, Any] | None:
        found = self.get_deployment(deployment_id)
        if found is None:
            return None
        changes = change(found)
        return found if changes is None else self.update_deployment(deployment_id, changes)

    def delete_deployment(self, deployment_id: str) -> None:
        self.deployments.pop(deployment_id, None)


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
        #: What ``signals`` answers: the resource's own signals, oldest first.
        self.own_signals: list[Mapping[str, Any]] = []
        #: What ``software_configs`` answers.
        self.configs = FakeSoftwareConfigs()

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
        url = (f"http://kiln.test/v1/{self.tenant_id}/stacks/{self.stack_name}/"
               f"{self.stack_id}/resources/res/signal")
        issued = IssuedSignalToken(f"token-{number}", f"secret-{number}", url,
                                   f"{url}?signal_token=secret-{number}",
                                   f"http://kiln.test/v1/{self.tenant_id}")
        self.issued.append(issued)
        return issued

    def revoke_signal_tokens(self) -> None:
        self.revoked += 1

    def find_signalled_resource(self, reference_id: str) -> SignalledResource | None:
        return self.signalled.get(reference_id)

    def signals(self) -> Sequence[Mapping[str, Any]]:
        return list(self.own_signals)

    def signals_after(self, after: int | None) -> Sequence[tuple[int, Mapping[str, Any]]]:
        # Numbered from 1 in arrival order, as the real ones grow.
        return [(number, signal) for number, signal in enumerate(self.own_signals, 1)
                if after is None or number > after]

    def software_configs(self) -> FakeSoftwareConfigs:
        return self.configs


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
