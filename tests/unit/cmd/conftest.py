"""What the command tests share."""

from __future__ import annotations

import logging
import pathlib
import socket
from collections.abc import Iterator

import pytest

from engine.cmd import manage


@pytest.fixture(autouse=True)
def logging_put_back(root_logging: logging.Logger) -> None:
    """A command sets up the process's logging (``engine.logs.configure``), on the test's
    captured stderr: put back after each test, so no later test writes to it."""


@pytest.fixture
def upgraded_state(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """A migrated SQLite state path the commands find, and a home of the test's own (no
    developer's ~/.kiln/kiln.conf)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("OS_DEFAULT__STATE_PATH", str(tmp_path / "state"))
    assert manage.main(["db", "upgrade"]) == 0
    return tmp_path / "state"


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port on 127.0.0.1 that something already listens on."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield int(taken.getsockname()[1])
