"""What the command tests share."""

from __future__ import annotations

import logging

import pytest


@pytest.fixture(autouse=True)
def logging_put_back(root_logging: logging.Logger) -> None:
    """A command sets up the process's logging (``engine.logs.configure``), on the test's
    captured stderr: put back after each test, so no later test writes to it."""
