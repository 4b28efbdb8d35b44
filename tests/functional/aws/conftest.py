"""Fixtures for the AWS resource types: moto's server, and kiln-all pointed at it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional import servers
from tests.functional.aws.endpoint import CREDENTIALS, MotoServer
from tests.functional.conftest import heat_for


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    server = MotoServer(tmp_path_factory.mktemp("moto") / "moto.log")
    yield server
    server.stop()


def start_kiln(tmp_path_factory: pytest.TempPathFactory, endpoint_url: str,
               database_url: str | None = None, **extra: str) -> servers.Kiln:
    return servers.start_all(tmp_path_factory.mktemp("kiln-aws"), database_url,
                             OS_AWS__ENDPOINT_URL=endpoint_url, **CREDENTIALS, **extra)


@pytest.fixture(scope="module")
def kiln_aws(tmp_path_factory: pytest.TempPathFactory, moto: MotoServer
             ) -> Iterator[servers.Kiln]:
    kiln = start_kiln(tmp_path_factory, moto.url)
    yield kiln
    kiln.stop()


@pytest.fixture(scope="module")
def heat(kiln_aws: servers.Kiln) -> Any:
    return heat_for(kiln_aws, servers.new_tenant(kiln_aws.env, "aws-tenant"))
