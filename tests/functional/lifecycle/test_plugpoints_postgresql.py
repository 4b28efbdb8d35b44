"""The same lifecycle calls with kiln-api and two kiln-engine processes on PostgreSQL,
where pre-ops, steps and post-ops of one operation may run on different engines."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status
from tests.functional.lifecycle.conftest import PluginKiln
from tests.functional.lifecycle.test_plugpoints import ORDER, calls, none_stack, typed_stack


@pytest.fixture
def heat(plugin_kiln_postgresql: PluginKiln) -> Any:
    return heat_for(plugin_kiln_postgresql.kiln,
                    servers.new_tenant(plugin_kiln_postgresql.env, unique("tenant-")))


def test_create_update_delete_call_every_plugin_in_order(
        plugin_kiln_postgresql: PluginKiln, heat: Any) -> None:
    stack_id = heat.stacks.create(stack_name=unique("s"),
                                  template=typed_stack("OS::Heat::RandomString", 2)
                                  )["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    heat.stacks.update(stack_id, template=none_stack(2))
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE")
    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")

    for action in ("CREATE", "UPDATE", "DELETE"):
        pre, post = calls(heat, stack_id, action)
        assert [r["plugin"] for r in pre] == ORDER, action
        assert [r["plugin"] for r in post] == ORDER[::-1], action
        assert {r["is_stack_failure"] for r in post} == {False}, action
    own = plugin_kiln_postgresql.calls(stack_id)
    # audit, gate, hang: a pre and a post per action; and audit's dry runs at the door of
    # the create and the update, made by kiln-api.
    assert len([c for c in own if not c["dry_run"]]) == 3 * 2 * 3
    assert [(c["plugin"], c["action"]) for c in own if c["dry_run"]] == [
        ("audit", "CREATE"), ("audit", "UPDATE")]


def test_a_denied_create_unwinds_in_reverse_on_postgresql(heat: Any) -> None:
    name = unique("s")
    stack_id = heat.stacks.create(stack_name=name, template=none_stack(1),
                                  tags="gate-deny")["stack"]["id"]
    stack = wait_for_status(heat, stack_id, "CREATE_FAILED")
    _, post = calls(heat, stack_id, "CREATE")

    assert stack.stack_status_reason == (
        f"Lifecycle plugin gate pre-op CREATE: deny: gate closed for {name}")
    assert [r["plugin"] for r in post] == ["gate", "quota", "approval", "audit", "policy"]
    assert heat.resources.list(stack_id) == []
