"""The README's promise: the unchanged `openstack stack …` CLI drives Kiln."""

from __future__ import annotations

import os
import pathlib
import shlex
import subprocess

from tests.functional import servers, templates


def openstack(env: dict[str, str], *args: str) -> str:
    """The ``openstack`` executable, as the README has a tenant run it."""
    result = subprocess.run([str(servers.BIN / "openstack"), *args], env=env, text=True,
                            capture_output=True, timeout=120)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def reads(env: dict[str, str], *args: str) -> str:
    """The same CLI forked from this process (``servers.openstack_forked``): the reads
    between the executable's create and delete, without a second of start-up each."""
    return servers.openstack_forked(env, *args).stdout


def test_create_list_and_delete_with_wait(kiln_all: servers.Kiln, tmp_path: pathlib.Path
                                          ) -> None:
    line = servers.manage_here(kiln_all.env, "demo-env").stdout.strip()
    assert line.startswith("export ")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(dict(item.split("=", 1) for item in shlex.split(line)[1:]))
    template = tmp_path / "t.yaml"
    template.write_text(templates.CHAIN)

    # --poll 1: the CLI's --wait polls every 5 s by default (delete's cannot be changed).
    created = openstack(env, "stack", "create", "-t", str(template), "--wait", "--poll", "1",
                        "-f", "value", "-c", "stack_status", "s1")
    assert created.strip().splitlines()[-1] == "CREATE_COMPLETE"
    resources = reads(env, "stack", "resource", "list", "s1", "-f", "value",
                          "-c", "resource_name", "-c", "resource_status")
    assert sorted(resources.splitlines()) == [
        "first CREATE_COMPLETE", "second CREATE_COMPLETE", "third CREATE_COMPLETE"]
    events = reads(env, "stack", "event", "list", "s1")
    assert "Stack CREATE completed successfully" in events
    output = reads(env, "stack", "output", "show", "s1", "joined", "-f", "value",
                       "-c", "output_value")
    assert output.startswith("hello-")
    assert "s1" in reads(env, "stack", "list", "-f", "value", "-c", "Stack Name")

    openstack(env, "stack", "delete", "--yes", "--wait", "s1")
    assert "s1" not in reads(env, "stack", "list", "-f", "value", "-c", "Stack Name")
