"""What every test shares: the ``--slow`` option, the hypothesis settings profiles and a
test run without a trace function (``untraced``).

CI runs the ``kiln`` profile: a fixed derandomized seed (the same examples every run of
the same command, so a red run is a real change, not luck) and no example database. No
``.hypothesis`` directory appears in the tree: what hypothesis caches besides (the
constants it reads from the source) goes to a temporary directory. ``--slow`` loads
``kiln-slow``: random seeds and twenty times the examples, for a long hunt by hand; a
test sizes itself with ``tests.strategies.examples``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

settings.register_profile(
    "kiln", database=None, derandomize=True, deadline=None, max_examples=100,
    print_blob=False,
    # Templates are big draws and the functional examples talk to a server: neither is
    # a fault of the strategy.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("kiln-slow", settings.get_profile("kiln"), derandomize=False,
                          max_examples=2000)

_HOME = pytest.StashKey[str]()
# The run order under pytest-xdist, and --record-durations.
pytest_plugins = ["tests.scheduling"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", default=False,
                     help="run the property-based tests with twenty times the examples "
                          "and random seeds (hypothesis profile kiln-slow)")


def pytest_configure(config: pytest.Config) -> None:
    settings.load_profile("kiln-slow" if config.getoption("--slow") else "kiln")
    config.stash[_HOME] = tempfile.mkdtemp(prefix="kiln-hypothesis-")
    set_hypothesis_home_dir(config.stash[_HOME])


def pytest_unconfigure(config: pytest.Config) -> None:
    if _HOME in config.stash:
        shutil.rmtree(config.stash[_HOME], ignore_errors=True)


@pytest.fixture
def untraced() -> Iterator[None]:
    """The test runs with no trace function; coverage's, if any, is put back afterwards.
    For tests of engine.budget's Python deadline, a trace function that chains to the one
    it finds: coverage's C tracer, once called that way, installs itself again in the
    deadline's place, and the deadline never fires (pytest-cov's ``no_cover`` does not
    help under pytest-xdist, where a second collector resumes)."""
    previous = sys.gettrace()
    sys.settrace(None)
    try:
        yield
    finally:
        sys.settrace(previous)
