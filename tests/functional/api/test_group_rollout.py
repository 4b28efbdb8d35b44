"""A ResourceGroup's update_policy through python-heatclient: batch_create creates the
members in batches and rolling_update replaces them in batches (highest index first,
extra members while min_in_service asks for them), each batch one operation on the child
stack, with the pause between batches the policy sets."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status

GROUP = """\
heat_template_version: rocky
parameters:
  prefix: {{type: string, default: a}}
  count: {{type: number, default: 3}}
resources:
  group:
    type: OS::Heat::ResourceGroup
    update_policy: {policy}
    properties:
      count: {{get_param: count}}
      resource_def:
        type: OS::Heat::Value
        properties: {{value: {{list_join: ["-", [{{get_param: prefix}}, "%index%"]]}}}}
outputs:
  values: {{value: {{get_attr: [group, value]}}}}
  refs: {{value: {{get_attr: [group, refs]}}}}
"""


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln) -> Any:
    return heat_for(kiln_all, servers.new_tenant(kiln_all.env, unique("roll-")))


def create(heat: Any, policy: str, **parameters: Any) -> tuple[str, str]:
    """The stack's id and its group's child stack id, once created."""
    stack_id = heat.stacks.create(stack_name=unique("group"), template=GROUP.format(
        policy=policy), parameters=parameters)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=60)
    return stack_id, heat.resources.get(stack_id, "group").physical_resource_id


def update(heat: Any, stack_id: str, **parameters: Any) -> None:
    heat.stacks.update(stack_id, existing=True, parameters=parameters)
    wait_for_status(heat, stack_id, "UPDATE_COMPLETE", timeout=60)


def outputs(heat: Any, stack_id: str) -> dict[str, Any]:
    return {o["output_key"]: o["output_value"] for o in heat.stacks.get(stack_id).outputs}


def child_operations(heat: Any, child_id: str) -> list[str]:
    """The child stack's operations in order, from its "started" events."""
    events = heat.events.list(child_id, sort_dir="asc")
    return [e.resource_status.split("_")[0] for e in events
            if e.physical_resource_id == child_id
            and e.resource_status_reason.startswith("Stack ")
            and e.resource_status.endswith("IN_PROGRESS")]


def member_events(heat: Any, child_id: str, action: str) -> list[str]:
    """The members that completed ``action``, in the order they did."""
    events = heat.events.list(child_id, sort_dir="asc")
    return [e.resource_name for e in events
            if e.physical_resource_id != child_id
            and e.resource_status == f"{action}_COMPLETE"]


def test_batch_create_makes_the_members_in_batches(heat: Any) -> None:
    stack_id, child = create(heat, "{batch_create: {max_batch_size: 2}}")

    # Batches of at most two: create the child with 0 and 1, then update it to add 2.
    assert child_operations(heat, child) == ["CREATE", "UPDATE"]
    created = member_events(heat, child, "CREATE")
    assert sorted(created[:2]) == ["0", "1"]
    assert created[2:] == ["2"]
    assert outputs(heat, stack_id)["values"] == ["a-0", "a-1", "a-2"]


def test_rolling_update_replaces_one_batch_at_a_time_highest_index_first(heat: Any) -> None:
    stack_id, child = create(heat, "{rolling_update: {max_batch_size: 1}}")
    refs = outputs(heat, stack_id)["refs"]

    update(heat, stack_id, prefix="b")

    assert outputs(heat, stack_id)["values"] == ["b-0", "b-1", "b-2"]
    assert child_operations(heat, child) == ["CREATE", "UPDATE", "UPDATE", "UPDATE"]
    # OS::Heat::Value changes in place: one member per batch, index 2 first.
    assert member_events(heat, child, "UPDATE") == ["2", "1", "0"]
    assert outputs(heat, stack_id)["refs"] == refs


def test_min_in_service_adds_a_member_before_replacing_and_removes_it_after(heat: Any
                                                                            ) -> None:
    stack_id, child = create(
        heat, "{rolling_update: {max_batch_size: 2, min_in_service: 3}}", count=3)

    update(heat, stack_id, prefix="c")

    assert outputs(heat, stack_id)["values"] == ["c-0", "c-1", "c-2"]
    # Batches (capacity, new): (5, 2) adds members 3 and 4 on the new definition; (5, 2)
    # replaces 2 and 1 together; (4, 1) replaces 0 and drops 4; (3, 0) drops 3.
    assert member_events(heat, child, "CREATE")[3:] == ["3", "4"]
    updated = member_events(heat, child, "UPDATE")
    assert sorted(updated[:2]) == ["1", "2"]
    assert updated[2:] == ["0"]
    assert member_events(heat, child, "DELETE") == ["4", "3"]
    assert {r.resource_name for r in heat.resources.list(child)} == {"0", "1", "2"}


def test_without_a_resource_def_change_the_update_is_one_operation(heat: Any) -> None:
    stack_id, child = create(heat, "{rolling_update: {max_batch_size: 1}}", count=1)

    update(heat, stack_id, count=3)

    assert child_operations(heat, child) == ["CREATE", "UPDATE"]
    assert outputs(heat, stack_id)["values"] == ["a-0", "a-1", "a-2"]


def test_the_pause_separates_the_batches(heat: Any) -> None:
    stack_id, child = create(heat, "{rolling_update: {max_batch_size: 2, pause_time: 2}}")

    update(heat, stack_id, prefix="d")

    events = [e for e in heat.events.list(child, sort_dir="asc")
              if e.physical_resource_id == child and e.resource_status.startswith("UPDATE")
              and e.resource_status_reason.startswith("Stack ")]
    (first_end, second_start) = (events[1], events[2])
    assert first_end.resource_status == "UPDATE_COMPLETE"
    assert second_start.resource_status == "UPDATE_IN_PROGRESS"
    gap = (_time(second_start.event_time) - _time(first_end.event_time)).total_seconds()
    assert gap >= 1  # pause_time 2, at the events' one-second resolution


@pytest.mark.parametrize(("policy", "message"), [
    ("{rolling_update: {max_batch_size: 0}}",
     "resources.group.update_policy.rolling_update: Property error: "
     "rolling_update.max_batch_size: "),
    ("{batch_creat: {}}", "resources.group.update_policy.batch_creat: Unknown Property "
                          "batch_creat"),
])
def test_a_wrong_policy_is_refused_at_its_line(heat: Any, policy: str, message: str) -> None:
    with pytest.raises(heat_exc.HTTPBadRequest) as raised:
        heat.stacks.create(stack_name=unique("bad"), template=GROUP.format(policy=policy))

    assert f"template:8 {message}" in str(raised.value)


def _time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
