"""kiln-manage's start-up cost: a command that wires Kiln for the database and the
registries (``stack list`` does) imports neither the API, the worker, the template
functions, Alembic nor boto3, which it does not use and which cost it a third of its start
(specs/architecture.rst, Start-up cost). In a fresh interpreter: this one imported them
all long ago."""

from __future__ import annotations

import pathlib
import subprocess
import sys

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
