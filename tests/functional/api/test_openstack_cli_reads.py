"""The unchanged `openstack stack …` CLI on the read side: tag filters, environment,
files, resource metadata, mark-unhealthy, signals and nested event listing."""

from __future__ import annotations

import os
import pathlib
import shlex
import subprocess

import pytest

from tests.functional import servers

TEMPLATE = """\
heat_template_version: 2018-08-31
parameters:
  word: {type: string, default: hello}
resources:
  first:
    type: OS::Heat::TestResource
    metadata: {said: {get_param: word}, other: {get_resource: second}}
    properties: {value: {get_param: word}}
  second:
    type: OS::Heat::None
"""


def openstack(env: dict[str, str], *args: str, ok: bool = True
              ) -> subprocess.CompletedProcess[str]:
    return servers.openstack_forked(env, *args, check=ok)


@pytest.fixture(scope="module")
def env(kiln_all: servers.Kiln, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    line = servers.manage_here(kiln_all.env, "demo-env").stdout.strip()
    found = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    found.update(dict(item.split("=", 1) for item in shlex.split(line)[1:]))
    template = tmp_path_factory.mktemp("cli-reads") / "t.yaml"
    template.write_text(TEMPLATE)
    # --poll 1: the CLI's --wait polls every 5 s by default, a whole period per stack.
    for name, tags in (("r1", "red,blue"), ("r2", "blue")):
        openstack(found, "stack", "create", "-t", str(template), "--tags", tags,
                  "--parameter", "word=hi", "--wait", "--poll", "1", name)
    return found


def lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return sorted(result.stdout.split())


def test_stack_list_tag_modes(env: dict[str, str]) -> None:
    def names(*extra: str) -> list[str]:
        return lines(openstack(env, "stack", "list", "-f", "value", "-c", "Stack Name",
                               *extra))

    assert names("--tags", "red,blue") == ["r1"]
    assert names("--tags", "red,blue", "--tag-mode", "any") == ["r1", "r2"]
    assert names("--tags", "red", "--tag-mode", "not") == ["r2"]
    assert names("--tags", "red,blue", "--tag-mode", "not-any") == []
    assert names("--sort", "stack_name:desc", "--limit", "1") == ["r2"]


def test_environment_files_and_metadata(env: dict[str, str]) -> None:
    shown = openstack(env, "stack", "environment", "show", "r1", "-f", "json").stdout
    assert '"word": "hi"' in shown
    assert "files" in openstack(env, "stack", "file", "list", "r1").stdout
    metadata = openstack(env, "stack", "resource", "metadata", "r1", "first",
                         "-f", "json").stdout
    assert '"said": "hi"' in metadata and '"get_resource": "second"' in metadata


def test_mark_unhealthy_reset_and_signal(env: dict[str, str], tmp_path: pathlib.Path
                                         ) -> None:
    openstack(env, "stack", "resource", "mark", "unhealthy", "r1", "first", "broken disk")
    status = openstack(env, "stack", "resource", "show", "r1", "first", "-f", "value",
                       "-c", "resource_status", "-c", "resource_status_reason").stdout
    assert status.split("\n")[:2] == ["CHECK_FAILED", "broken disk"]
    openstack(env, "stack", "resource", "mark", "unhealthy", "--reset", "r1", "first")
    status = openstack(env, "stack", "resource", "show", "r1", "first", "-f", "value",
                       "-c", "resource_status").stdout
    assert status.strip() == "CHECK_COMPLETE"
    events = openstack(env, "stack", "event", "list", "r1", "--nested-depth", "1").stdout
    assert "CHECK_FAILED" in events and "broken disk" in events

    refused = openstack(env, "stack", "resource", "signal", "r1", "first", "--data",
                        '{"x": 1}', ok=False)
    assert refused.returncode != 0
    assert "signal is not supported for resource." in refused.stderr
