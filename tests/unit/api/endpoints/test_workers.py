"""``GET /workers`` (engine.api.endpoints.workers) through the real app: the engine workers
with their heartbeats and held steps, for an admin's token; Heat's 403 for a member's."""

from __future__ import annotations

import pytest

from engine.context import ADMIN_ROLE
from engine.db.session import Database
from engine.resources.registry import ResourceTypeRegistry
from tests.unit.api.endpoints.console_api import ConsoleApi
from tests.unit.conftest import Clock


@pytest.fixture
def api(db: Database, registry: ResourceTypeRegistry, clock: Clock) -> ConsoleApi:
    return ConsoleApi(db, registry, clock)


def test_an_admin_sees_the_workers(api: ConsoleApi, clock: Clock) -> None:
    loop = api.worker()
    result = api.call("GET", "/workers", tenant=api.b.id, role=ADMIN_ROLE)

    assert result.status_code == 200, result.text
    [shown] = result.json["workers"]
    assert shown == {"id": loop.id, "host": "test", "pid": shown["pid"],
                     "started_at": "2026-11-22T12:00:00Z",
                     "heartbeat_at": "2026-11-22T12:00:00Z", "stopped_at": None,
                     "steps_held": 0, "alive": True}
    clock.advance(3600)  # no heartbeat for an hour: its leases have lapsed
    assert api.call("GET", "/workers", role=ADMIN_ROLE).json["workers"][0]["alive"] is False


def test_a_member_is_refused(api: ConsoleApi) -> None:
    api.worker()
    refused = api.call("GET", "/workers")
    assert refused.status_code == 403
    assert refused.json["error"]["type"] == "ServicesForbidden"
    assert "workers" not in refused.json
