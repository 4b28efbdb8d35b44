"""kiln-all's own refusals to start."""

from __future__ import annotations

import pathlib
import socket

import pytest

from engine.cmd import all as kiln_all
from engine.cmd import manage


def test_a_busy_port_is_one_line_naming_the_address(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no developer's ~/.kiln/kiln.conf
    monkeypatch.setenv("OS_DEFAULT__STATE_PATH", str(tmp_path / "state"))
    assert manage.main(["db", "upgrade"]) == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv("OS_API__BIND_PORT", str(port))
        capsys.readouterr()

        assert kiln_all.main([]) == 1

    err = capsys.readouterr().err
    assert err == f"kiln-all: cannot listen on 127.0.0.1:{port}: Address already in use\n"
