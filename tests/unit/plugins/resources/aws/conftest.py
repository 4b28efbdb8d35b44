"""The AWS types against moto's server on loopback, one per test module, through the
real client factory (never boto3 patched)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from oslo_config import cfg

from engine.resources.base import Resource
from plugins.resources.aws.clients import GROUP, OPTS, AwsClients
from tests.functional.aws.endpoint import CREDENTIALS, MotoServer
from tests.unit.plugins.resources.conftest import Build, FakeRuntime


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    server = MotoServer(tmp_path_factory.mktemp("moto") / "moto.log")
    yield server
    server.stop()


def aws_clients(endpoint_url: str, **options: Any) -> AwsClients:
    conf = cfg.ConfigOpts()
    conf([], project="kiln-test")
    conf.register_opts(OPTS, group=GROUP)
    conf.set_override("endpoint_url", endpoint_url, group=GROUP)
    for name, value in options.items():
        conf.set_override(name, value, group=GROUP)
    return AwsClients(conf)


@pytest.fixture
def aws_runtime(runtime: FakeRuntime, moto: MotoServer, monkeypatch: pytest.MonkeyPatch
                ) -> FakeRuntime:
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    runtime.services["aws"] = aws_clients(moto.url)
    return runtime


Poll = Callable[[Callable[[], bool]], None]


def settle(check: Callable[[], bool], rounds: int = 50) -> None:
    """Poll as the worker would until ``check`` says done (moto is quick)."""
    for _ in range(rounds):
        if check():
            return
    raise AssertionError("never completed")


def create(build: Build, cls: type[Resource], raw: dict[str, Any] | None = None,
           **kwargs: Any) -> Resource:
    resource = build(cls, raw, **kwargs)
    token = resource.handle_create()
    settle(lambda: resource.check_create_complete(token))
    return resource


def delete(resource: Resource) -> None:
    token = resource.handle_delete()
    settle(lambda: resource.check_delete_complete(token))
