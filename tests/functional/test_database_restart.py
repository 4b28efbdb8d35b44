"""A PostgreSQL restart while operations run loses nothing: while the server is away the
API answers 503 (never 500) and so does ``/healthcheck``, the workers keep retrying, and
once it is back every stack finishes with each thing created once and ``/healthcheck``
answers 200 again. The server is the test's own, so stopping it disturbs no other test."""

from __future__ import annotations

import http.client
import pathlib
import time
from collections.abc import Iterator

import pytest

from tests.functional.cluster import STACKS, WIDTH, Cluster
from tests.functional.conftest import wait_for_status
from tests.functional.private_postgresql import PrivatePostgreSQL

pytestmark = pytest.mark.postgresql


@pytest.fixture
def postgresql() -> Iterator[PrivatePostgreSQL]:
    server = PrivatePostgreSQL()
    try:
        yield server
    finally:
        server.remove()


def status_of(cluster: Cluster, path: str, timeout: float = 30) -> int:
    """The status of ``GET path`` with the tenant's token; a request the outage holds
    longer than ``timeout`` fails the test with a timeout instead of hanging it."""
    host, port = cluster.kiln.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    conn.request("GET", path, headers={"X-Auth-Token": cluster.tenant.token})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status


def status_of_stack_list(cluster: Cluster) -> int:
    return status_of(cluster, f"/v1/{cluster.tenant.tenant_id}/stacks")


def test_a_restart_during_operations_loses_nothing(
        tmp_path: pathlib.Path, postgresql: PrivatePostgreSQL,
        resources_site: pathlib.Path) -> None:
    cluster = Cluster(tmp_path / "kiln", postgresql.url, resources_site, engines=2)
    try:
        stack_ids = cluster.create_stacks()
        cluster.busiest_engine()  # the work is under way

        postgresql.stop()
        assert status_of_stack_list(cluster) == 503
        # The healthcheck bounds its SELECT 1 by 2 s; 10 s leaves room for a busy machine
        # and is still far below what a driver waiting on the network could take.
        assert status_of(cluster, "/healthcheck", timeout=10) == 503
        time.sleep(2)  # the workers meet the outage in the middle of their work
        assert status_of_stack_list(cluster) == 503
        postgresql.start()

        for stack_id in stack_ids:
            wait_for_status(cluster.heat, stack_id, "CREATE_COMPLETE", timeout=120)
        assert status_of_stack_list(cluster) == 200
        assert status_of(cluster, "/healthcheck") == 200
        created = cluster.created()
        assert len(created) == STACKS * WIDTH * 2
        assert [name for name, times in created.items() if times > 1] == []
        assert all(p.popen.poll() is None for p in cluster.kiln.processes)
    finally:
        cluster.kiln.stop()
