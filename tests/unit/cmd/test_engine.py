"""kiln-engine's own refusals to start."""

from __future__ import annotations

import pytest

from engine.cmd import engine as kiln_engine


@pytest.mark.usefixtures("upgraded_state")
def test_a_busy_metrics_port_is_one_line_naming_the_address(
        busy_port: int, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OS_ENGINE__METRICS_PORT", str(busy_port))
    capsys.readouterr()

    assert kiln_engine.main([]) == 1

    last = capsys.readouterr().err.splitlines()[-1]
    assert last == f"kiln-engine: cannot serve metrics on 127.0.0.1:{busy_port}: " \
        "Address already in use"
