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

The modules of a group in :data:`GROUPS` are one unit of work: one process runs them
all, one after another, and their times add up for the order. The modules that use the
session's PostgreSQL servers (``conftest.kiln_postgresql``: kiln-api and two engines, a
few seconds of CPU to start and a poll each second for the rest of the run) are such a
group, so one process starts those servers rather than each. A module that uses them and
is not listed still passes; it only starts them in its own process.
"""

from __future__ import annotations

import collections
import json
import pathlib
from typing import Any

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


#: Groups of modules one test process runs together, by name.
GROUPS: dict[str, tuple[str, ...]] = {
    "kiln_postgresql": (
        "tests/functional/api/test_malformed_requests.py",
        "tests/functional/api/test_resource_health.py",
        "tests/functional/api/test_stack_lifecycle.py",
        "tests/functional/api/test_stack_list.py",
        "tests/functional/api/test_wait_condition.py",
    ),
}
_GROUP_OF = {module: f"@{name}" for name, modules in GROUPS.items() for module in modules}


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its module's group, else its module."""
    module = module_of(nodeid)
    return _GROUP_OF.get(module, module)


def longest_first(items: list[pytest.Item], recorded: dict[str, float]) -> list[pytest.Item]:
    """``items`` by unit of work, longest first; a module's tests keep their order, and
    units of equal time keep the order they were collected in (every process of a run
    must collect the same order)."""
    modules: dict[str, set[str]] = collections.defaultdict(set)
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        unit = unit_of(item.nodeid)
        modules[unit].add(module_of(item.nodeid))
        first.setdefault(unit, index)
    seconds = {unit: sum(seconds_of(module, recorded) for module in members)
               for unit, members in modules.items()}
    return sorted(items, key=lambda item: (-seconds[unit_of(item.nodeid)],
                                           first[unit_of(item.nodeid)]))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    recorded = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    items[:] = longest_first(items, recorded)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadscope`` with the groups above as units of work."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupedScopes(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return _GROUP_OF.get(module_of(nodeid)) or str(super()._split_scope(nodeid))

    return GroupedScopes(config, log)


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
