"""``max_resources_per_stack`` bounds a whole tree of nested stacks, as Heat bounds it
(``_validate_nested_resources``), through python-heatclient against kiln-all with the
limit lowered to ten by the server's environment: a group of groups whose total passes
it fails with Heat's message, though each group alone is well within it."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status
from tests.templates import group_of_groups


@pytest.fixture(scope="module")
def kiln_all(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Kiln]:
    """kiln-all on a SQLite file, holding stacks of at most ten resources."""
    kiln = servers.start_all(pathlib.Path(tmp_path_factory.mktemp("kiln-ten")), None,
                             OS_API__MAX_RESOURCES_PER_STACK="10")
    yield kiln
    kiln.stop()


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln) -> Any:
    return heat_for(kiln_all, servers.new_tenant(kiln_all.env, unique("ten-")))


def test_a_group_of_groups_past_the_limit_fails_with_heats_message(heat: Any) -> None:
    # 1 + 3 + 3 * 3 = 13 resources in the tree.
    stack_id = heat.stacks.create(stack_name=unique("groups"),
                                  template=group_of_groups(3, 3))["stack"]["id"]

    stack = wait_for_status(heat, stack_id, "CREATE_FAILED")

    assert "Maximum resources per stack exceeded." in stack.stack_status_reason
    outer = heat.resources.get(stack_id, "outer")
    assert outer.resource_status == "CREATE_FAILED"
    members = heat.resources.list(stack_id, nested_depth=2)
    failed = [r for r in members if r.resource_status == "CREATE_FAILED"
              and r.resource_type == "OS::Heat::ResourceGroup" and r.resource_name != "outer"]
    assert [r.resource_status_reason for r in failed] == [
        f"RequestLimitExceeded: resources.{failed[0].resource_name}: Request limit "
        "exceeded: Maximum resources per stack exceeded."]


def test_a_tree_at_the_limit_is_created(heat: Any) -> None:
    # 1 + 3 + 3 * 2 = 10.
    stack_id = heat.stacks.create(stack_name=unique("groups"),
                                  template=group_of_groups(3, 2))["stack"]["id"]

    wait_for_status(heat, stack_id, "CREATE_COMPLETE")


def test_the_same_limit_holds_for_a_template_at_the_api(heat: Any) -> None:
    resources = "".join(f"  r{i}: {{type: OS::Heat::None}}\n" for i in range(11))

    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(stack_name=unique("wide"),
                           template="heat_template_version: 2018-08-31\nresources:\n"
                                    + resources)

    assert "Request limit exceeded: Maximum resources per stack exceeded." \
        in str(caught.value)
