"""kiln-all's own refusals to start, and the waitress lines it keeps out of its log."""

from __future__ import annotations

import logging

import pytest

from engine.cmd import all as kiln_all


@pytest.mark.usefixtures("upgraded_state")
def test_a_busy_port_is_one_line_naming_the_address(
        busy_port: int, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OS_API__BIND_PORT", str(busy_port))
    capsys.readouterr()

    assert kiln_all.main([]) == 1

    err = capsys.readouterr().err
    assert err == (f"kiln-all: cannot listen on 127.0.0.1:{busy_port}: "
                   "Address already in use\n")


@pytest.mark.usefixtures("upgraded_state")
def test_waitress_writes_no_line_per_queued_request(
        busy_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    queue = logging.getLogger(kiln_all.WAITRESS_QUEUE_LOGGER)
    monkeypatch.setenv("OS_API__BIND_PORT", str(busy_port))
    level = queue.level
    try:
        kiln_all.main([])

        # Its "Task queue depth is N" warning, a line per request under a burst, is off.
        assert not queue.isEnabledFor(logging.WARNING)
        assert queue.isEnabledFor(logging.ERROR)
    finally:
        queue.setLevel(level)
