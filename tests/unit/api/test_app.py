"""The console's static route in engine.api.app (``create_app``) through the real app: the
single page at ``/console`` and ``/console/``, its assets under ``/console/static/``, a 404
for a missing asset, no token needed, and the console's security headers
(engine.api.middleware.ConsoleHeaders) on each of those answers, the 404 included."""

from __future__ import annotations

import pathlib

import falcon.testing
import pytest

from engine import console
from engine.bootstrap import Kiln
from engine.db.session import Database
from engine.resources.registry import ResourceTypeRegistry
from engine.services.proposals import StackLimits
from tests.stack_api import kiln_config
from tests.unit.conftest import Clock

SECURITY_HEADERS = {
    "content-security-policy": ("default-src 'self'; frame-ancestors 'none'; "
                                "base-uri 'none'; form-action 'none'"),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


@pytest.fixture
def static(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """A console of the test's own, so that the assets asked for are known to exist."""
    (tmp_path / "js").mkdir()
    (tmp_path / "index.html").write_text("<!DOCTYPE html><title>Kiln</title>")
    (tmp_path / "js" / "app.js").write_text("export const ready = true;\n")
    monkeypatch.setattr(console, "STATIC_DIR", tmp_path)
    return tmp_path


def client(db: Database, registry: ResourceTypeRegistry, clock: Clock
           ) -> falcon.testing.TestClient:
    kiln = Kiln(kiln_config(StackLimits()), db, clock=clock, registry=registry)
    return falcon.testing.TestClient(kiln.wsgi_app())


def secured(result: falcon.testing.Result) -> bool:
    return all(result.headers.get(name) == value for name, value in SECURITY_HEADERS.items())


@pytest.mark.parametrize("path", ["/console", "/console/"])
def test_the_page_is_served_without_a_token(
        static: pathlib.Path, db: Database, registry: ResourceTypeRegistry, clock: Clock,
        path: str) -> None:
    result = client(db, registry, clock).simulate_get(path)
    assert result.status_code == 200, result.text
    assert result.headers["content-type"].startswith("text/html")
    assert result.text == (static / "index.html").read_text()
    assert secured(result)


def test_an_asset_is_served_with_its_type(
        static: pathlib.Path, db: Database, registry: ResourceTypeRegistry,
        clock: Clock) -> None:
    result = client(db, registry, clock).simulate_get("/console/static/js/app.js")
    assert result.status_code == 200, result.text
    assert result.headers["content-type"].startswith("text/javascript")
    assert result.text == "export const ready = true;\n"
    assert secured(result)


@pytest.mark.parametrize("path", ["/console/static/js/missing.js", "/console/static/js",
                                  "/console/static/../../__init__.py"])
def test_a_missing_asset_is_a_404_not_the_page(
        static: pathlib.Path, db: Database, registry: ResourceTypeRegistry, clock: Clock,
        path: str) -> None:
    result = client(db, registry, clock).simulate_get(path)
    assert result.status_code == 404
    assert result.json["error"]["type"] == "HTTPNotFound"
    assert secured(result)


def test_the_api_answers_carry_no_console_headers(
        db: Database, registry: ResourceTypeRegistry, clock: Clock) -> None:
    result = client(db, registry, clock).simulate_get("/versions")
    assert not any(name in result.headers for name in SECURITY_HEADERS)


def test_the_installed_page_is_there(db: Database, registry: ResourceTypeRegistry,
                                     clock: Clock) -> None:
    result = client(db, registry, clock).simulate_get("/console")
    assert result.status_code == 200, result.text
    assert "<html" in result.text.lower()
