"""Third-party lifecycle-plugin packages, pip-installed: discovered and ordered with the
built-ins, and a broken one stops every long-running process at start."""

from __future__ import annotations

import json
import pathlib
import subprocess

from tests.functional import servers
from tests.functional.dists import pip_install, with_path


def test_a_broken_plugin_package_stops_every_process_and_names_the_plugin(
        tmp_path: pathlib.Path) -> None:
    site = pip_install("kiln-test-lifecycle-broken", tmp_path / "site")
    env = with_path(servers.kiln_environment(tmp_path / "state", None, servers.free_port()),
                    site, tmp_path / "cache")
    servers.manage(env, "db", "upgrade")  # the admin CLI still works, to fix things
    for command in ("kiln-all", "kiln-engine", "kiln-api"):
        result = subprocess.run([str(servers.BIN / command)], env=env, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 1, (command, result.stdout, result.stderr)
        assert ("Plugin licence in namespace kiln.lifecycle_plugins could not be loaded: "
                "module 'kiln_test_lifecycle_broken.plugins' has no attribute 'LicenceCheck'"
                ) in result.stderr, (command, result.stderr)


def test_a_typo_in_enabled_stops_start_rather_than_dropping_a_policy(
        tmp_path: pathlib.Path) -> None:
    env = servers.kiln_environment(tmp_path / "state", None, servers.free_port(),
                                   OS_LIFECYCLE_PLUGINS__ENABLED="policy,qouta")
    servers.manage(env, "db", "upgrade")
    result = subprocess.run([str(servers.BIN / "kiln-all")], env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 1
    assert ("[lifecycle_plugins] enabled: qouta: no such lifecycle plugin is installed"
            in result.stderr)


def test_the_admin_cli_lists_third_party_plugins_in_call_order(
        tmp_path: pathlib.Path, test_plugins_site: pathlib.Path) -> None:
    env = with_path(servers.kiln_environment(tmp_path / "state", None),
                    test_plugins_site, tmp_path / "cache")
    servers.manage(env, "db", "upgrade")
    listed = json.loads(servers.manage(env, "plugins", "list", "--format", "json").stdout)

    assert [(p["position"], p["name"], p["ordinal"], p["enabled"]) for p in listed] == [
        (1, "policy", 10, True), (2, "audit", 5, True), (3, "approval", 15, True),
        (4, "quota", 20, True), (5, "gate", 60, True), (6, "placement", 50, True),
        (7, "hang", 70, True)]
    audit = listed[1]
    assert (audit["after"], audit["distribution"], audit["version"], audit["entry_point"]) == (
        "policy", "kiln-test-lifecycle", "1.0", "kiln_test_lifecycle.plugins:Audit")
