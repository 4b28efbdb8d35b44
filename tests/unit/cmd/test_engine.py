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


@pytest.mark.usefixtures("upgraded_state")
def test_a_lease_shorter_than_two_heartbeats_is_refused(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # A worker stops acting a heartbeat before its lease ends: it would never act.
    monkeypatch.setenv("OS_ENGINE__LEASE_SECONDS", "1.5")
    monkeypatch.setenv("OS_ENGINE__HEARTBEAT_INTERVAL_SECONDS", "1")
    capsys.readouterr()

    with pytest.raises(SystemExit) as exited:
        kiln_engine.main([])

    assert exited.value.code == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "kiln-engine: [engine] lease_seconds (1.5) must be at least twice "
        "heartbeat_interval_seconds (1.0)")
