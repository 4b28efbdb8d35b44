"""kiln-engine's own refusals to start."""

from __future__ import annotations

import pathlib
import socket

import pytest

from engine.cmd import engine as kiln_engine
from engine.cmd import manage


def test_a_busy_metrics_port_is_one_line_naming_the_address(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no developer's ~/.kiln/kiln.conf
    monkeypatch.setenv("OS_DEFAULT__STATE_PATH", str(tmp_path / "state"))
    assert manage.main(["db", "upgrade"]) == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv("OS_ENGINE__METRICS_PORT", str(port))
        capsys.readouterr()

        assert kiln_engine.main([]) == 1

    last = capsys.readouterr().err.splitlines()[-1]
    assert last == f"kiln-engine: cannot serve metrics on 127.0.0.1:{port}: " \
        "Address already in use"
