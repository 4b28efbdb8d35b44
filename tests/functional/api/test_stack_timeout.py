"""An operation that outlives its timeout fails cleanly instead of staying IN_PROGRESS."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional import servers, templates
from tests.functional.conftest import heat_for, unique, wait_for_status


@pytest.fixture(scope="module")
def heat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    state: pathlib.Path = tmp_path_factory.mktemp("kiln-timeout")
    kiln = servers.start_all(state, None, OS_ENGINE__STACK_ACTION_TIMEOUT_SECONDS="2")
    try:
        yield heat_for(kiln, servers.new_tenant(kiln.env, "timeouts"))
    finally:
        kiln.stop()


def test_create_that_never_finishes_times_out(heat: Any) -> None:
    created = heat.stacks.create(stack_name=unique("slow"), template=templates.FOREVER)
    stack_id = created["stack"]["id"]
    stack = wait_for_status(heat, stack_id, "CREATE_FAILED", timeout=20)
    assert stack.stack_status_reason == "Create timed out"
    slow = heat.resources.get(stack_id, "slow")
    assert slow.resource_status == "CREATE_FAILED"
    assert slow.resource_status_reason == "CREATE aborted"


def test_timed_out_stack_can_be_deleted(heat: Any) -> None:
    created = heat.stacks.create(stack_name=unique("slow"), template=templates.FOREVER)
    stack_id = created["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_FAILED", timeout=20)
    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE", timeout=20)
