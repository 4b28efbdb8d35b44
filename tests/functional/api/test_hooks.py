"""Breakpoints through the unchanged clients against kiln-all: an environment's hooks
(exact, wildcard, and on a nested stack's resource), ``openstack stack hook poll`` and
``hook clear`` on a create and on a delete, Heat's event reasons in ``stack event list``,
and Heat's refusals of a bad hook."""

from __future__ import annotations

import json
import os
import pathlib
import time
from typing import Any

import pytest
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status

TEMPLATE = """\
heat_template_version: 2018-08-31
resources:
  app_a: {type: OS::Heat::RandomString}
  app_b: {type: OS::Heat::RandomString}
  db: {type: OS::Heat::None}
  nested: {type: inner.yaml}
"""
INNER = """\
heat_template_version: 2018-08-31
resources:
  inner: {type: OS::Heat::None}
"""
ENVIRONMENT = """\
resource_registry:
  resources:
    db: {hooks: [pre-create, pre-delete]}
    'app_*': {hooks: pre-create}
    nested:
      inner: {hooks: pre-create}
"""
PAUSED = "CREATE paused until Hook pre-create is cleared"


@pytest.fixture(scope="module")
def tenant(kiln_all: servers.Kiln) -> servers.Credentials:
    return servers.new_tenant(kiln_all.env, unique("hooks-"))


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln, tenant: servers.Credentials) -> Any:
    return heat_for(kiln_all, tenant)


@pytest.fixture(scope="module")
def env(kiln_all: servers.Kiln, tenant: servers.Credentials) -> dict[str, str]:
    found = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    found.update(OS_AUTH_TYPE="admin_token", OS_ENDPOINT=kiln_all.endpoint(tenant.tenant_id),
                 OS_TOKEN=tenant.token)
    return found


def openstack(env: dict[str, str], *args: str) -> str:
    return servers.openstack_forked(env, *args).stdout


def paused_events(heat: Any, stack: str, reason: str, count: int) -> list[Any]:
    """The stack's events (and its nested stack's) with ``reason``, once there are
    ``count`` of them."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = [e for e in heat.events.list(stack, nested_depth=1)
                 if e.resource_status_reason == reason]
        if len(found) >= count:
            return found
        time.sleep(0.1)
    raise AssertionError(f"never {count} events {reason!r} in {stack}")


def test_hooks_polled_and_cleared_on_create_and_delete(
        heat: Any, env: dict[str, str], tmp_path: pathlib.Path) -> None:
    (tmp_path / "main.yaml").write_text(TEMPLATE)
    (tmp_path / "inner.yaml").write_text(INNER)
    (tmp_path / "env.yaml").write_text(ENVIRONMENT)
    name = unique("hk")
    openstack(env, "stack", "create", "-t", str(tmp_path / "main.yaml"),
              "-e", str(tmp_path / "env.yaml"), name)
    paused_events(heat, name, PAUSED, 4)
    stack_id = heat.stacks.get(name).id

    polled = json.loads(openstack(env, "stack", "hook", "poll", name, "--nested-depth", "1",
                                  "-f", "json"))
    assert sorted((row["Resource Name"], row["Resource Status"],
                   row["Resource Status Reason"]) for row in polled) == [
        (resource, "INIT_COMPLETE", PAUSED) for resource in ("app_a", "app_b", "db", "inner")]
    assert heat.stacks.get(name).stack_status == "CREATE_IN_PROGRESS"

    openstack(env, "stack", "hook", "clear", name, "db", "app_*", "nested/inner")
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    events = json.loads(openstack(env, "stack", "event", "list", name, "-f", "json"))
    assert [(e["resource_name"], e["resource_status"], e["resource_status_reason"])
            for e in events if e["resource_name"] == "db"] == [
        ("db", "INIT_COMPLETE", PAUSED),
        ("db", "INIT_COMPLETE", "Hook pre-create is cleared"),
        ("db", "CREATE_IN_PROGRESS", "state changed"),
        ("db", "CREATE_COMPLETE", "state changed")]

    openstack(env, "stack", "delete", "--yes", name)
    paused_events(heat, name, "DELETE paused until Hook pre-delete is cleared", 1)
    polled = json.loads(openstack(env, "stack", "hook", "poll", name, "-f", "json"))
    assert [(row["Resource Name"], row["Resource Status"]) for row in polled] == [
        ("db", "CREATE_COMPLETE")]
    openstack(env, "stack", "hook", "clear", "--pre-delete", name, "db")
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")


def test_bad_hooks_are_refused_as_heat_refuses_them(heat: Any) -> None:
    with pytest.raises(heat_exc.HTTPBadRequest) as bad:
        heat.stacks.create(stack_name=unique("hk"), template=INNER, environment={
            "resource_registry": {"resources": {"inner": {"hooks": "pre-bogus"}}}})
    assert "Invalid hook type \"pre-bogus\" for resource breakpoint" in str(bad.value)

    stack_id = heat.stacks.create(stack_name=unique("hk"), template=INNER)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    with pytest.raises(heat_exc.HTTPBadRequest) as not_set:
        heat.resources.signal(stack_id, "inner", data={"unset_hook": "pre-create"})
    assert 'The "pre-create" hook is not defined on NoneResource "inner"' in str(
        not_set.value)
