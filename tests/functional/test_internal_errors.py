"""Every operation ends, even when Kiln itself keeps failing on it (issue 17, the poison
rule): through python-heatclient, on kiln-all (SQLite) and on PostgreSQL with two
engines, with a test resource type whose results Kiln cannot store and a test lifecycle
plugin that ends its worker's process.

The stack reaches ``<ACTION>_FAILED`` after three tries (0.1 s doubling apart here) with
a reason naming what the operator greps the engine log for; the post-ops are told it
failed; the engines go on serving other stacks.
"""

from __future__ import annotations

import json
import pathlib
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional import servers
from tests.functional.conftest import heat_for, settled_events, unique, wait_for_status
from tests.functional.dists import pip_install, with_path

IDS = r"(?P<subject>{what}) \(request (?P<request>req-[0-9a-f-]{{36}})\)"
INTERNAL = ("Kiln failed unexpectedly \\(an internal error, {tries}\\); the operator can "
            "find " + IDS + " in the engine log")
OPERATION = "operation [0-9a-f-]{36}"
STEP = "step [0-9]+ of operation [0-9a-f-]{36}"
PLAIN = "heat_template_version: 2018-08-31\nresources:\n  fine: {type: OS::Heat::None}\n"
UNSTORABLE_OUTPUT = ("heat_template_version: 2018-08-31\nresources:\n"
                     "  p:\n    type: Kiln::Test::Poison\n"
                     "    properties: {unstorable_in: [delete]}\n"
                     "outputs:\n  out: {value: {get_attr: [p, unstorable]}}\n")


class PoisonKiln:
    """A running Kiln with the test types and plugins, and the plugins' own call log."""

    def __init__(self, kiln: servers.Kiln, calls_log: pathlib.Path) -> None:
        self.kiln = kiln
        self._calls_log = calls_log

    def calls(self, stack_id: str) -> list[dict[str, Any]]:
        if not self._calls_log.exists():
            return []
        return [call for call in map(json.loads, self._calls_log.read_text().splitlines())
                if call["stack_id"] == stack_id]


@pytest.fixture(scope="module")
def lifecycle_site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return pip_install("kiln-test-lifecycle", tmp_path_factory.mktemp("site-lifecycle"))


def environment(root: pathlib.Path, resources_site: pathlib.Path,
                lifecycle_site: pathlib.Path, **extra: str) -> dict[str, str]:
    env = with_path(with_path({}, resources_site, root / "cache"), lifecycle_site,
                    root / "cache")
    return {"PYTHONPATH": env["PYTHONPATH"], "XDG_CACHE_HOME": env["XDG_CACHE_HOME"],
            "KILN_TEST_LIFECYCLE_LOG": str(root / "calls.jsonl"),
            "OS_ENGINE__INTERNAL_ERROR_BACKOFF_SECONDS": "0.1", **extra}


@pytest.fixture(scope="module", params=["kiln-all", "postgresql"])
def poison_kiln(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                resources_site: pathlib.Path, lifecycle_site: pathlib.Path
                ) -> Iterator[PoisonKiln]:
    root = tmp_path_factory.mktemp(f"poison-{request.param}")
    env = environment(root, resources_site, lifecycle_site)
    if request.param == "kiln-all":
        kiln = servers.start_all(root / "state", None, **env)
    else:
        url = request.getfixturevalue("postgresql_url")
        kiln = servers.start_split(root / "state", url, engines=2, **env)
    yield PoisonKiln(kiln, root / "calls.jsonl")
    kiln.stop()


@pytest.fixture
def heat(poison_kiln: PoisonKiln) -> Any:
    return heat_for(poison_kiln.kiln,
                    servers.new_tenant(poison_kiln.kiln.env, unique("tenant-")))


def create(heat: Any, template: str, **fields: Any) -> str:
    created = heat.stacks.create(stack_name=unique("s"), template=template, **fields)
    return str(created["stack"]["id"])


def internal(reason: str, prefix: str, what: str, tries: str = "3 tries") -> re.Match[str]:
    """The reason, matched whole; its groups name what to grep the log for."""
    match = re.fullmatch(re.escape(prefix) + INTERNAL.format(tries=tries, what=what), reason)
    assert match, reason
    return match


def post_ops(heat: Any, stack_id: str, action: str) -> list[dict[str, Any]]:
    return [ev.lifecycle for ev in settled_events(heat, stack_id, action)
            if getattr(ev, "lifecycle", None) and ev.lifecycle["action"] == action
            and ev.lifecycle["phase"] == "post"]


def test_an_output_no_json_can_hold_is_its_error_and_the_create_completes(
        poison_kiln: PoisonKiln, heat: Any) -> None:
    # Outputs are resolved when shown (specs/live-outputs.rst): a value JSON cannot hold
    # is that output's output_error, as any output that cannot be resolved, and no
    # failure of the operation, which made nothing it cannot store.
    stack_id = create(heat, UNSTORABLE_OUTPUT)
    stack = wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    [output] = stack.outputs
    assert output["output_value"] is None
    assert output["output_error"] == ("The output value cannot be represented as JSON: "
                                      "Object of type set is not JSON serializable")
    assert {r["is_stack_failure"] for r in post_ops(heat, stack_id, "CREATE")} == {False}


def test_a_step_kiln_cannot_record_fails_its_resource_and_the_create(
        poison_kiln: PoisonKiln, heat: Any) -> None:
    stack_id = create(heat, (
        "heat_template_version: 2018-08-31\nresources:\n"
        "  p:\n    type: Kiln::Test::Poison\n    properties: {unstorable_in: [create]}\n"
        "  after: {type: OS::Heat::None, depends_on: p}\n"
        "  fine: {type: OS::Heat::None}\n"))
    stack = wait_for_status(heat, stack_id, "CREATE_FAILED")

    resources = {r.resource_name: r for r in heat.resources.list(stack_id)}
    assert resources["fine"].resource_status == "CREATE_COMPLETE"
    assert resources["after"].resource_status == "INIT_COMPLETE"  # never started
    poisoned = resources["p"]
    assert poisoned.resource_status == "CREATE_FAILED"
    found = internal(poisoned.resource_status_reason, "InternalError: resources.p: ", STEP)
    assert stack.stack_status_reason == (
        f"Resource CREATE failed: {poisoned.resource_status_reason}")
    assert found["subject"] in poison_kiln.kiln.logs()
    assert {r["is_stack_failure"] for r in post_ops(heat, stack_id, "CREATE")} == {True}


def test_a_delete_kiln_cannot_store_ends_failed_too(poison_kiln: PoisonKiln, heat: Any
                                                   ) -> None:
    stack_id = create(heat, UNSTORABLE_OUTPUT)
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    heat.stacks.delete(stack_id)
    stack = wait_for_status(heat, stack_id, "DELETE_FAILED")
    [poisoned] = heat.resources.list(stack_id)
    assert poisoned.resource_status == "DELETE_FAILED"
    internal(poisoned.resource_status_reason, "InternalError: resources.p: ", STEP)
    assert stack.stack_status_reason == (
        f"Resource DELETE failed: {poisoned.resource_status_reason}")
    assert {r["is_stack_failure"] for r in post_ops(heat, stack_id, "DELETE")} == {True}


def test_an_operation_that_kills_its_engine_is_failed_after_a_restart(
        tmp_path: pathlib.Path, resources_site: pathlib.Path,
        lifecycle_site: pathlib.Path) -> None:
    # One try, two-second leases: the restarted engine gives up at its first claim. No
    # dry run at the door: audit's would end kiln-api, and this is the engine's crash.
    env = environment(tmp_path, resources_site, lifecycle_site,
                      OS_ENGINE__INTERNAL_ERROR_ATTEMPTS="1", OS_ENGINE__LEASE_SECONDS="2",
                      OS_LIFECYCLE_PLUGINS__CHECK_AT_THE_DOOR="false")
    kiln = servers.start_split(tmp_path / "state",
                               f"sqlite:///{tmp_path / 'state' / 'kiln.sqlite'}", 1, **env)
    own_log = PoisonKiln(kiln, tmp_path / "calls.jsonl")
    try:
        heat = heat_for(kiln, servers.new_tenant(kiln.env, "t"))
        stack_id = create(heat, PLAIN, tags="audit-exit")
        engine = kiln.processes[1]
        assert engine.popen.wait(timeout=30) == 70  # the plugin ended it mid-pre-op
        assert heat.stacks.get(stack_id).stack_status == "CREATE_IN_PROGRESS"

        restarted = servers.Process([str(servers.BIN / "kiln-engine")], kiln.env,
                                    tmp_path / "kiln-engine-restarted.log")
        kiln.processes.append(restarted)
        stack = wait_for_status(heat, stack_id, "CREATE_FAILED")
        internal(stack.stack_status_reason, "Stack CREATE failed: ", OPERATION,
                 tries="1 try")
        # Not tried again: the plugin that kills was called once, and the engine lives.
        assert [(c["plugin"], c["phase"]) for c in own_log.calls(stack_id)] == [
            ("audit", "pre")]
        assert restarted.popen.poll() is None
        # policy, whose pre-op was recorded before audit's killed the engine, is told.
        assert [(r["plugin"], r["is_stack_failure"])
                for r in post_ops(heat, stack_id, "CREATE")] == [("policy", True)]
        other = create(heat, PLAIN)
        wait_for_status(heat, other, "CREATE_COMPLETE")
    finally:
        kiln.stop()
