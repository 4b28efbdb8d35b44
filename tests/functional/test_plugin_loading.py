"""A resource type that does not load stops the long-running processes at start with a
message naming it; the admin CLI still migrates the database."""

from __future__ import annotations

import os
import pathlib
import subprocess

from tests.functional import servers


def broken_distribution(root: pathlib.Path) -> pathlib.Path:
    """A minimal distribution (dist-info only) whose entry point names a missing module."""
    info = root / "kiln_broken_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kiln-broken-plugin\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[kiln.resource_types]\nBroken::Type = kiln_broken_plugin_missing:Nope\n")
    return root


def test_broken_type_plugin_stops_start_and_names_itself(tmp_path: pathlib.Path) -> None:
    extra = broken_distribution(tmp_path / "site")
    env = servers.kiln_environment(tmp_path / "state", None, servers.free_port())
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(extra), env.get("PYTHONPATH")]))
    # NOTE: stevedore caches entry points per sys.path; a fresh cache dir keeps this honest.
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")

    servers.manage(env, "db", "upgrade")
    for command in ("kiln-all", "kiln-engine"):
        result = subprocess.run([str(servers.BIN / command)], env=env, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 1, (command, result.stdout, result.stderr)
        assert ("Plugin Broken::Type in namespace kiln.resource_types could not be loaded: "
                "No module named 'kiln_broken_plugin_missing'") in result.stderr
