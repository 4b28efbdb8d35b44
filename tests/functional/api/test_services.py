"""``GET /services``: the engine workers, as Heat's service list shows them, for admins."""

from __future__ import annotations

import datetime

import pytest
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import heat_for, unique


def test_an_admin_sees_the_running_worker(kiln_all: servers.Kiln) -> None:
    admin = heat_for(kiln_all, servers.new_tenant(kiln_all.env, unique("ops-"), role="admin"))

    services = [s.to_dict() for s in admin.services.list()]

    (worker,) = [s for s in services if s["pid"] == kiln_all.processes[0].popen.pid]
    assert worker["status"] == "up"
    assert worker["binary"] == "kiln-engine" and worker["topic"] == "engine"
    assert worker["engine_id"] == worker["id"] and worker["hostname"] == worker["host"]
    assert worker["deleted_at"] is None
    # A count, not 0: the shared kiln-all may be holding another module's waiting steps.
    assert isinstance(worker["steps_held"], int) and worker["steps_held"] >= 0
    # Heat's own format here: ISO 8601 with microseconds, no zone.
    heartbeat = datetime.datetime.fromisoformat(worker["updated_at"])
    assert heartbeat.tzinfo is None
    assert heartbeat >= datetime.datetime.fromisoformat(worker["created_at"])


def test_a_member_is_refused(kiln_all: servers.Kiln) -> None:
    member = heat_for(kiln_all, servers.new_tenant(kiln_all.env, unique("t-")))

    with pytest.raises(heat_exc.HTTPForbidden) as raised:
        member.services.list()
    assert "Listing the engine services needs an admin token." in str(raised.value)
