"""A delete of an AWS resource that has no physical id makes no call (Heat's rule: it was
never made), so a stack whose create failed at an unreachable endpoint can be deleted."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest

from engine.resources.base import Resource
from plugins.resources.aws import dynamodb, ec2, ec2_compute, iam, s3, sns, sqs
from plugins.resources.aws.common import AwsResource
from tests.unit.plugins.resources.conftest import FakeRuntime

MODULES = (dynamodb, ec2, ec2_compute, iam, s3, sns, sqs)


class Unreachable:
    """The AWS service of a Kiln whose endpoint does not answer: every client call fails."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def client(self, service: str, tenant_id: str) -> NoReturn:
        self.calls.append(service)
        raise AssertionError(f"a delete without a physical id called {service}")


def _types() -> list[type[AwsResource]]:
    return sorted({cls for module in MODULES for cls in vars(module).values()
                   if isinstance(cls, type) and issubclass(cls, AwsResource)
                   and cls.__module__ == module.__name__ and not cls.__subclasses__()},
                  key=lambda cls: cls.__qualname__)


@pytest.mark.parametrize("cls", _types(), ids=lambda cls: cls.__qualname__)
def test_a_delete_without_a_physical_id_calls_nothing(runtime: FakeRuntime,
                                                       cls: type[Resource]) -> None:
    unreachable = Unreachable()
    runtime.services["aws"] = unreachable
    properties: dict[str, Any] = {}
    resource = cls("res", properties, runtime, physical_id=None)

    token = resource.handle_delete()

    assert resource.check_delete_complete(token) is True
    assert unreachable.calls == []
