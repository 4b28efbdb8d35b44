"""A Kiln with every lifecycle plugin in play: the built-ins (policy, quota, placement,
configured from files) and a third-party package built and installed with pip, as an
operator would install one."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional import servers
from tests.functional.dists import pip_install, with_path

POLICY = """\
rules:
  - name: value-cap
    effect: deny
    max_count: {type: "OS::Heat::Value", limit: 3}
    message: at most three values per stack
  - name: big-stack
    effect: warn
    max_resources: 6
"""

# Only RandomString is placed, so the other tests never compete for capacity.
INVENTORY = """\
units: [slots]
racks:
  rack-a:
    hosts:
      host-a1: {slots: 2}
  rack-b:
    hosts:
      host-b1: {slots: 2}
types:
  OS::Heat::RandomString:
    cost: {slots: 1}
"""


@pytest.fixture(scope="session")
def test_plugins_site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return pip_install("kiln-test-lifecycle", tmp_path_factory.mktemp("site-good"))


class PluginKiln:
    """A running kiln-all plus the third-party plugins' own log of the calls they got."""

    def __init__(self, kiln: servers.Kiln, calls_log: pathlib.Path) -> None:
        self.kiln = kiln
        self.env = kiln.env
        self._calls_log = calls_log

    def calls(self, stack_id: str) -> list[dict[str, Any]]:
        return [call for call in self._all() if call["stack_id"] == stack_id]

    def calls_named(self, stack_name: str) -> list[dict[str, Any]]:
        """By name: a create refused at the door leaves no id to look for."""
        return [call for call in self._all() if call["stack_name"] == stack_name]

    def _all(self) -> list[dict[str, Any]]:
        if not self._calls_log.exists():
            return []
        return [json.loads(line) for line in self._calls_log.read_text().splitlines()]


def plugin_environment(root: pathlib.Path, site: pathlib.Path) -> dict[str, str]:
    """Kiln's environment for the plugin tests: the test package on the path, the
    built-ins configured from files, the hang plugin timed out after 1 s."""
    (root / "policy.yaml").write_text(POLICY)
    (root / "inventory.yaml").write_text(INVENTORY)
    env = with_path({}, site, root / "cache")
    return {"PYTHONPATH": env["PYTHONPATH"], "XDG_CACHE_HOME": env["XDG_CACHE_HOME"],
            "KILN_TEST_LIFECYCLE_LOG": str(root / "calls.jsonl"),
            "OS_LIFECYCLE_PLUGINS__PLUGIN_TIMEOUT_SECONDS": "hang:1",
            "OS_LIFECYCLE_POLICY__RULES_FILE": str(root / "policy.yaml"),
            "OS_LIFECYCLE_PLACEMENT__INVENTORY_FILE": str(root / "inventory.yaml")}


@pytest.fixture(scope="module")
def plugin_kiln(tmp_path_factory: pytest.TempPathFactory,
                test_plugins_site: pathlib.Path) -> Iterator[PluginKiln]:
    root = tmp_path_factory.mktemp("kiln-lifecycle")
    kiln = servers.start_all(root / "state", None,
                             **plugin_environment(root, test_plugins_site))
    yield PluginKiln(kiln, root / "calls.jsonl")
    kiln.stop()


@pytest.fixture(scope="module")
def plugin_kiln_postgresql(tmp_path_factory: pytest.TempPathFactory,
                           test_plugins_site: pathlib.Path,
                           postgresql_url: str) -> Iterator[PluginKiln]:
    """kiln-api and two kiln-engine processes on PostgreSQL, plugins as above."""
    root = tmp_path_factory.mktemp("kiln-lifecycle-pg")
    kiln = servers.start_split(root / "state", postgresql_url, engines=2,
                               **plugin_environment(root, test_plugins_site))
    yield PluginKiln(kiln, root / "calls.jsonl")
    kiln.stop()
