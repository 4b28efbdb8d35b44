"""kiln-api's metrics directory: chosen, and set for prometheus_client, before anything
imports prometheus_client (which picks its multiprocess mode at its first import)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from engine import config
from engine.cmd import api


def test_importing_the_command_does_not_import_prometheus_client() -> None:
    # In a fresh interpreter: this one imported it long ago.
    subprocess.run([sys.executable, "-c", (
        "import sys, engine.cmd.api; "
        "assert 'prometheus_client' not in sys.modules, 'imported too early'")],
        check=True, timeout=60)


def test_the_directory_is_one_per_port_under_state_path(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(api.METRICS_DIR_VARIABLE, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no developer's ~/.kiln/kiln.conf
    monkeypatch.setenv("OS_DEFAULT__STATE_PATH", str(tmp_path / "state"))
    monkeypatch.setenv("OS_API__BIND_PORT", "18004")
    expected = tmp_path / "state" / "metrics" / "kiln-api-18004"
    expected.mkdir(parents=True)
    (expected / "counter_123.db").write_bytes(b"a running kiln-api's")

    assert api.metrics_directory(config.load([])) == str(expected)
    # Chosen, not emptied: this kiln-api may yet find its port busy.
    assert sorted(path.name for path in expected.iterdir()) == ["counter_123.db"]


def test_emptying_removes_only_metric_files(tmp_path: pathlib.Path) -> None:
    (tmp_path / "counter_123.db").write_bytes(b"left by the last run")
    (tmp_path / "notes.txt").write_text("not ours")

    api.empty_metrics_directory(str(tmp_path))

    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]


def test_the_operators_directory_is_used_when_set(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(api.METRICS_DIR_VARIABLE, str(tmp_path / "theirs"))

    assert api.metrics_directory(config.load([])) == str(tmp_path / "theirs")
    assert (tmp_path / "theirs").is_dir()
