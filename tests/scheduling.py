"""The order the suite runs in under pytest-xdist: the longest modules first.

``make test`` hands whole modules to its test processes (``--dist loadscope``), in the
order collected, each process taking the next module when it runs out. Module-scoped
servers are then started once, and a module that waits (an ``openstack … --wait`` polls
every 5 s, a lease expires) waits while the other processes work, provided it starts
early: the same modules collected in file order left the long waiters for last, with
the cores idle beside them. So the collection is sorted by each module's time in an
earlier run (``tests/durations.json``), longest first: what starts last is short, so
the processes end close together.

The times only decide the order, never what runs or whether it passes. Refresh them
after a change that moves a module's time a lot::

    make test PYTEST_ARGS=--record-durations=tests/durations.json

A module not in the file (a new one) goes by :data:`DEFAULT_SECONDS` of its tier.
"""

from __future__ import annotations

import collections
import json
import pathlib

import pytest

DURATIONS = pathlib.Path(__file__).with_name("durations.json")
#: The time assumed for a module with no recorded time: a functional module starts
#: servers and most take seconds, a unit module seldom takes one.
DEFAULT_SECONDS = {"tests/functional": 5.0, "tests/unit": 0.5}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--record-durations", metavar="PATH", default=None,
                     help="write each test module's total time (setup, call and "
                          "teardown) to PATH as JSON, for the run order of "
                          "tests/scheduling.py")


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def seconds_of(module: str, recorded: dict[str, float]) -> float:
    if module in recorded:
        return recorded[module]
    return next((seconds for tier, seconds in DEFAULT_SECONDS.items()
                 if module.startswith(tier + "/")), 0.5)


def longest_first(items: list[pytest.Item], recorded: dict[str, float]) -> list[pytest.Item]:
    """``items`` with their modules longest first; a module's tests keep their order,
    and modules of equal time keep the order they were collected in (every process
    of a run must collect the same order)."""
    return sorted(items, key=lambda item: -seconds_of(module_of(item.nodeid), recorded))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    recorded = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    items[:] = longest_first(items, recorded)


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--record-durations")
    # Only the controlling process sees every module's reports (xdist's workers have
    # ``workerinput``).
    if path is not None and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(pathlib.Path(path)))


class DurationRecorder:
    """Sums each module's reported times and writes them at the end of the run."""

    def __init__(self, path: pathlib.Path) -> None:
        self._path = path
        self._times: collections.Counter[str] = collections.Counter()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._times[module_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self) -> None:
        ordered = {module: round(seconds, 1) for module, seconds in
                   sorted(self._times.items(), key=lambda entry: (-entry[1], entry[0]))}
        self._path.write_text(json.dumps(ordered, indent=1) + "\n")
