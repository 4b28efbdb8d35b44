"""``GET|HEAD /healthcheck`` answers as oslo.middleware's healthcheck does: 200 ``OK`` (204
to HEAD), 503 when the database does not answer, the detailed view for an admin's token or
with ``[api] healthcheck_detailed``; no token needed, no credential in the body or logs."""

from __future__ import annotations

import logging
import pathlib
import threading
from collections.abc import Iterator

import falcon.testing
import pytest

from engine.bootstrap import Kiln
from engine.context import ADMIN_ROLE, MEMBER_ROLE
from engine.db import health as db_health
from engine.db.session import Database
from engine.lifecycle.registry import LifecycleRegistry
from engine.resources.registry import ResourceTypeRegistry
from engine.services.health import HealthService
from engine.services.proposals import StackLimits
from engine.services.tenants import TenantService
from tests.stack_api import kiln_config
from tests.unit.conftest import Clock

PASSWORD = "s3cret-pw"
# Nothing listens on port 1: the connection is refused at once.
UNREACHABLE_POSTGRESQL = f"postgresql+psycopg://kiln:{PASSWORD}@127.0.0.1:1/kiln"
JSON = {"Accept": "application/json"}


def client(db: Database, registry: ResourceTypeRegistry, *, detailed: bool = False
           ) -> falcon.testing.TestClient:
    conf = kiln_config(StackLimits())
    conf.set_override("healthcheck_detailed", detailed, group="api")
    kiln = Kiln(conf, db, registry=registry, lifecycle=LifecycleRegistry(()))
    return falcon.testing.TestClient(kiln.wsgi_app())


@pytest.fixture
def unreachable(tmp_path: pathlib.Path) -> Iterator[Database]:
    """A SQLite file in a directory that does not exist: no connection can open."""
    database = Database(f"sqlite:///{tmp_path}/missing/kiln.sqlite")
    yield database
    database.dispose()


@pytest.fixture
def unreachable_postgresql() -> Iterator[Database]:
    database = Database(UNREACHABLE_POSTGRESQL)
    yield database
    database.dispose()


def token(db: Database, clock: Clock, role: str) -> str:
    tenants = TenantService(db, clock)
    tenant = tenants.create_tenant(f"health-{role}")
    return tenants.create_token(tenant.id, role).secret


def test_healthy_is_200_ok_in_plain_text_without_a_token(
        db: Database, registry: ResourceTypeRegistry) -> None:
    result = client(db, registry).simulate_get("/healthcheck")
    assert result.status_code == 200
    assert result.text == "OK"
    assert result.headers["content-type"] == "text/plain; charset=UTF-8"
    assert result.headers["x-openstack-request-id"].startswith("req-")


def test_head_is_204_with_no_body(db: Database, registry: ResourceTypeRegistry) -> None:
    result = client(db, registry).simulate_head("/healthcheck")
    assert result.status_code == 204
    assert result.text == ""


def test_json_and_html_as_accepted_plain_text_for_anything_else(
        db: Database, registry: ResourceTypeRegistry) -> None:
    app = client(db, registry)
    assert app.simulate_get("/healthcheck", headers=JSON).json == {
        "detailed": False, "reasons": ["OK"]}
    page = app.simulate_get("/healthcheck", headers={"Accept": "text/html"})
    assert page.headers["content-type"] == "text/html; charset=UTF-8"
    assert "<H2>Result of 1 checks:</H2>" in page.text
    assert "Details" not in page.text
    other = app.simulate_get("/healthcheck", headers={"Accept": "image/png"})
    assert (other.status_code, other.text) == (200, "OK")


def test_an_admin_token_gets_the_detailed_view(
        db: Database, registry: ResourceTypeRegistry, clock: Clock) -> None:
    body = client(db, registry).simulate_get(
        "/healthcheck", headers={**JSON, "X-Auth-Token": token(db, clock, ADMIN_ROLE)}).json
    assert body["detailed"] is True
    [database] = body["reasons"]
    assert database["reason"] == "OK" and database["class"] == "database"
    assert database["details"].startswith("SELECT 1 answered in ")
    assert {"now", "python_version", "platform", "gc", "threads"} <= set(body)


@pytest.mark.parametrize("secret", ["member", "not-a-token"])
def test_other_tokens_get_the_plain_view_and_are_never_refused(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, secret: str) -> None:
    if secret == "member":
        secret = token(db, clock, MEMBER_ROLE)
    result = client(db, registry).simulate_get(
        "/healthcheck", headers={**JSON, "X-Auth-Token": secret})
    assert result.status_code == 200
    assert result.json == {"detailed": False, "reasons": ["OK"]}


def test_healthcheck_detailed_shows_every_caller_the_details(
        db: Database, registry: ResourceTypeRegistry) -> None:
    body = client(db, registry, detailed=True).simulate_get("/healthcheck", headers=JSON).json
    assert body["detailed"] is True
    assert body["reasons"][0]["reason"] == "OK"


def test_a_database_that_cannot_be_opened_is_503(
        unreachable: Database, registry: ResourceTypeRegistry) -> None:
    app = client(unreachable, registry, detailed=True)
    plain = app.simulate_get("/healthcheck")
    assert (plain.status_code, plain.text) == (503, "DATABASE UNAVAILABLE")
    assert app.simulate_head("/healthcheck").status_code == 503
    [database] = app.simulate_get("/healthcheck", headers=JSON).json["reasons"]
    assert database["reason"] == "DATABASE UNAVAILABLE"
    assert database["details"] == "unable to open database file"


def test_an_unreachable_postgresql_is_503_and_its_password_is_never_shown(
        unreachable_postgresql: Database, registry: ResourceTypeRegistry,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    app = client(unreachable_postgresql, registry, detailed=True)
    for accept in ("text/plain", "application/json", "text/html"):
        result = app.simulate_get("/healthcheck", headers={"Accept": accept})
        assert result.status_code == 503
        assert PASSWORD not in result.text
        assert UNREACHABLE_POSTGRESQL not in result.text
    assert "Connection refused" in result.text  # the detailed view says why
    assert caplog.records, "the change to unavailable is logged"
    assert PASSWORD not in caplog.text


def test_the_url_and_password_are_hidden_from_driver_messages() -> None:
    message = f"cannot reach {UNREACHABLE_POSTGRESQL}; password {PASSWORD} was refused"
    hidden = db_health.hide_url(UNREACHABLE_POSTGRESQL, message)
    assert PASSWORD not in hidden
    assert hidden == f"cannot reach <database URL>; password {db_health.HIDDEN} was refused"


def test_a_probe_past_its_deadline_is_a_failure_shared_by_waiting_requests(
        db: Database, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()
    calls: list[Database] = []

    def hung(database: Database) -> str | None:
        calls.append(database)
        release.wait(10)
        return None

    monkeypatch.setattr(db_health, "ping", hung)
    health = HealthService(db, timeout_seconds=0.05)
    try:
        for _ in range(3):
            [result] = health.check()
            assert not result.available
            assert result.details == "SELECT 1 did not answer within 0.05 s"
    finally:
        release.set()
    assert len(calls) == 1, "requests wait for the probe already out"
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
