"""kiln-manage commands run in the test's process, and kiln-manage's start-up cost.

A command that wires Kiln for the database and the registries (``stack list`` does)
imports neither the API, the worker, the template functions, Alembic nor boto3, which it
does not use and which cost it a third of its start (specs/architecture.rst, Start-up
cost); that is measured in a fresh interpreter, as this one imported them all long ago."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from engine import bootstrap, config
from engine.cmd import manage
from engine.context import MEMBER_ROLE, RequestContext
from engine.lifecycle.base import Pending
from tests.unit.api.endpoints.test_approval import TEMPLATE
from tests.unit.worker.running import run, worker
from tests.unit.worker.test_lifecycle_calls import Recording, loaded

DEFERRED = ("falcon", "engine.api.app", "engine.worker.loop", "engine.ir.build", "yaql",
            "alembic", "boto3")


def test_wiring_kiln_for_a_command_defers_what_it_does_not_use(tmp_path: pathlib.Path) -> None:
    state = tmp_path / "state"
    env = {"HOME": str(tmp_path), "OS_DEFAULT__STATE_PATH": str(state),
           "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", "\n".join([
        "from engine import bootstrap, config",
        "from engine.db import migration",
        "kiln = bootstrap.build(config.load([]), check_schema=False, create_database=True)",
        "migration.upgrade(kiln.db, 'head')"])], env=env, check=True, timeout=60)

    probe = "\n".join([
        "import sys",
        "from engine import bootstrap, config",
        "kiln = bootstrap.build(config.load([]))",
        "kiln.registry.names(), kiln.operator.count_stacks('nobody')",
        f"print(','.join(m for m in {DEFERRED!r} if m in sys.modules))"])
    result = subprocess.run([sys.executable, "-c", probe], env=env, check=True,
                            capture_output=True, text=True, timeout=60)

    assert result.stdout.strip() == ""


def test_an_operator_approves_a_parked_operation_by_a_prefix_of_its_id(
        upgraded_state: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    kiln = bootstrap.build(config.load([]))
    tenant = kiln.tenants.create_tenant("t")
    ctx = RequestContext(tenant_id=tenant.id, token_tenant_id=tenant.id, role=MEMBER_ROLE)
    gate = Recording("approval", [], pre=lambda action: Pending("ask the DBA")
                     if action == "CREATE" else None)
    plugins = [loaded(gate)]
    record = kiln.stack_writes.create(ctx, {"stack_name": "db", "template": TEMPLATE})
    run(worker(kiln.db, kiln.registry, kiln.clock, plugins, irs=kiln.irs))
    [operation] = kiln.operator.operations()
    capsys.readouterr()

    assert manage.main(["operation", "approve", operation.id[:8], "--comment", "ok",
                        "-f", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["decision"], shown["comment"], shown["decided_by"].split()[0]) == (
        "approved", "ok", "operator")
    # Decided once: a second decision is refused, and the command says why.
    assert manage.main(["operation", "reject", operation.id]) == 1
    assert "is waiting for approval" in capsys.readouterr().err

    run(worker(kiln.db, kiln.registry, kiln.clock, plugins, irs=kiln.irs))
    stack = kiln.stack_reads.get(ctx, "db", record.id)
    assert (stack.action, stack.status) == ("CREATE", "COMPLETE")
