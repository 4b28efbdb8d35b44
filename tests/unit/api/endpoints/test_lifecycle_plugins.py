"""``GET /lifecycle_plugins`` (engine.api.endpoints.lifecycle_plugins) through the real
app: the plugins in their calling order, each with its settings and its recent calls
across every tenant's stacks (each naming its operation), newest first and at most
``recent``, for an admin's token; Heat's 403 for a member's."""

from __future__ import annotations

import pathlib

import pytest

from engine.context import ADMIN_ROLE
from engine.db.session import Database
from engine.lifecycle.base import Warn
from engine.resources.registry import ResourceTypeRegistry
from tests.unit.api.endpoints.console_api import ConsoleApi
from tests.unit.conftest import Clock
from tests.unit.worker.test_lifecycle_calls import Recording, loaded

TEMPLATE = """\
heat_template_version: 2018-08-31
resources:
  word: {type: OS::Heat::RandomString}
"""
RECENT_FIELDS = {"stack_id", "stack_name", "tenant_id", "event_id", "operation_id",
                 "action", "phase", "verdict", "message", "duration_ms", "at"}


@pytest.fixture
def api(db: Database, registry: ResourceTypeRegistry, clock: Clock) -> ConsoleApi:
    # "approval" is named as the built-in one, so that its options are the ones shown.
    plugins = [Recording("audit", [], pre=lambda action: Warn(f"no owner tag on {action}")),
               Recording("approval", [])]
    return ConsoleApi(db, registry, clock, [loaded(p) for p in plugins])


def test_an_admin_sees_the_plugins_their_settings_and_recent_calls(
        api: ConsoleApi, clock: Clock) -> None:
    web = api.create("web", TEMPLATE)
    clock.advance(1)
    db = api.create("db", TEMPLATE, tenant=api.b.id)

    result = api.call("GET", "/lifecycle_plugins", role=ADMIN_ROLE)
    assert result.status_code == 200, result.text
    audit, approval = result.json["lifecycle_plugins"]
    assert {key: audit[key] for key in ("name", "enabled", "reason", "position",
                                        "timeout_seconds", "on_timeout", "supports_dry_run",
                                        "tree_scope")} == {
        "name": "audit", "enabled": True, "reason": "", "position": 1,
        "timeout_seconds": 10.0, "on_timeout": "fail", "supports_dry_run": False,
        "tree_scope": "every"}
    assert audit["entry_point"].endswith(":Recording")
    assert audit["settings"] == []  # it lists no options
    assert approval["position"] == 2
    assert approval["settings"] == [{"group": "lifecycle_approval", "name": "rules_file",
                                     "secret": False, "value": ""}]

    recent = audit["recent"]
    assert all(set(call) == RECENT_FIELDS for call in recent)
    # Newest first: db's post-op and pre-op, then web's.
    assert [(c["stack_name"], c["tenant_id"], c["phase"]) for c in recent] == [
        ("db", api.b.id, "post"), ("db", api.b.id, "pre"),
        ("web", api.a.id, "post"), ("web", api.a.id, "pre")]
    assert (recent[1]["stack_id"], recent[1]["action"], recent[1]["verdict"],
            recent[1]["message"]) == (db.rsplit("/", 1)[1], "CREATE", "warn",
                                      "no owner tag on CREATE")
    assert recent[3]["stack_id"] == web.rsplit("/", 1)[1]
    # Each call names its operation: each stack's create.
    operations = api.call("GET", "/operations", role=ADMIN_ROLE,
                          params={"state": "all"}).json["operations"]
    creates = {op["stack_name"]: op["id"] for op in operations}
    assert [c["operation_id"] for c in recent] == [creates["db"], creates["db"],
                                                   creates["web"], creates["web"]]
    assert recent[3]["at"] == "2026-11-22T12:00:00+00:00"
    assert {c["stack_name"] for c in approval["recent"]} == {"web", "db"}

    one = api.call("GET", "/lifecycle_plugins", tenant=api.b.id, role=ADMIN_ROLE,
                   params={"recent": "1"}).json["lifecycle_plugins"]
    assert [c["phase"] for c in one[0]["recent"]] == ["post"]
    none = api.call("GET", "/lifecycle_plugins", role=ADMIN_ROLE, params={"recent": "0"})
    assert [p["recent"] for p in none.json["lifecycle_plugins"]] == [[], []]


@pytest.mark.parametrize("recent", ["201", "-1", "many"])
def test_recent_is_at_most_200(api: ConsoleApi, recent: str) -> None:
    result = api.call("GET", "/lifecycle_plugins", role=ADMIN_ROLE, params={"recent": recent})
    assert result.status_code == 400
    assert result.json["error"]["type"] == "BadRequest"


def test_a_member_is_refused(api: ConsoleApi) -> None:
    api.create("web", TEMPLATE)
    refused = api.call("GET", "/lifecycle_plugins")
    assert refused.status_code == 403
    assert refused.json["error"]["type"] == "OperatorViewForbidden"
    assert "audit" not in refused.text


def test_a_plugin_listing_its_options_under_an_optgroup_shows_them(
        db: Database, registry: ResourceTypeRegistry, clock: Clock,
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real distribution on the path, whose oslo.config.opts entry point lists its
    # options as oslo.config allows: (OptGroup, opts), one of a type JSON cannot hold.
    (tmp_path / "kiln_audit_opts.py").write_text(
        "from oslo_config import cfg\n"
        "def list_opts():\n"
        "    return [(cfg.OptGroup('lifecycle_audit'),\n"
        "             [cfg.IPOpt('collector', default='192.0.2.7'),\n"
        "              cfg.StrOpt('key', secret=True, default='s3cret')])]\n")
    info = tmp_path / "kiln_audit_opts-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kiln-audit-opts\n"
                                   "Version: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[oslo.config.opts]\nkiln.lifecycle.audit = kiln_audit_opts:list_opts\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    api = ConsoleApi(db, registry, clock, [loaded(Recording("audit", []))])

    # Read when the app was built, not on a request.
    assert str(api.kiln.conf.lifecycle_audit.collector) == "192.0.2.7"
    result = api.call("GET", "/lifecycle_plugins", role=ADMIN_ROLE)

    assert result.status_code == 200, result.text
    assert result.json["lifecycle_plugins"][0]["settings"] == [
        {"group": "lifecycle_audit", "name": "collector", "secret": False,
         "value": "192.0.2.7"},
        {"group": "lifecycle_audit", "name": "key", "secret": True, "value": "******"}]
