"""Evaluation budgets through python-heatclient against kiln-all, with the shipped
defaults: a template that would cost without bound is a 400 naming its line when the
API can tell, and a FAILED stack with the reason when only the worker can; a pattern
that backtracks for ever is a 400 within the time budget."""

from __future__ import annotations

from typing import Any

import pytest
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status

THOUSAND = "x" * 1000

# Three levels of str_replace, each multiplying by a thousand: 10**9 characters.
AMPLIFIED = f"""\
heat_template_version: 2021-04-16
resources:
  bomb:
    type: OS::Heat::Value
    properties:
      value:
        str_replace:
          template:
            str_replace:
              template: {THOUSAND}
              params: {{x: {THOUSAND}}}
          params: {{x: {THOUSAND}}}
"""

# The amplifier is a random string only the worker knows: 4,000 places times 512
# characters is past the budget, which the API cannot see.
AT_RUN_TIME = f"""\
heat_template_version: 2021-04-16
resources:
  seed:
    type: OS::Heat::RandomString
    properties: {{length: 512}}
  bomb:
    type: OS::Heat::Value
    properties:
      value:
        str_replace:
          template: {"x" * 4000}
          params: {{x: {{get_attr: [seed, value]}}}}
"""

GROUP = """\
heat_template_version: 2021-04-16
parameters:
  count: {type: number, default: 2}
resources:
  size: {type: OS::Heat::Value, properties: {value: {get_param: count}}}
  group:
    type: OS::Heat::ResourceGroup
    properties:
      count: COUNT
      resource_def: {type: OS::Heat::None}
"""

PATTERN = """\
heat_template_version: 2021-04-16
parameters:
  name:
    type: string
    constraints:
      - allowed_pattern: "(a|aa)+$"
resources:
  r: {type: OS::Heat::None}
"""


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln) -> Any:
    return heat_for(kiln_all, servers.new_tenant(kiln_all.env, unique("budget-")))


def test_an_amplification_known_at_the_api_is_a_400_at_its_line(heat: Any) -> None:
    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(stack_name=unique("amp"), template=AMPLIFIED)

    assert ('template:7 resources.bomb.properties.value.str_replace: "str_replace" would '
            "produce a value larger than 1048576 characters") in str(caught.value)


def test_an_amplification_known_only_at_run_time_fails_the_stack(heat: Any) -> None:
    stack_id = heat.stacks.create(stack_name=unique("late"),
                                  template=AT_RUN_TIME)["stack"]["id"]

    stack = wait_for_status(heat, stack_id, "CREATE_FAILED")

    bomb = heat.resources.get(stack_id, "bomb")
    assert bomb.resource_status == "CREATE_FAILED"
    assert '"str_replace" would produce a value larger than' in bomb.resource_status_reason
    assert "bomb" in stack.stack_status_reason


def test_a_group_of_a_billion_is_a_400_or_a_failed_resource(heat: Any) -> None:
    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(stack_name=unique("huge"),
                           template=GROUP.replace("COUNT", "{get_param: count}"),
                           parameters={"count": 10**9})
    assert ("resources.group.properties.count: Property error: count: Maximum resources "
            "per stack exceeded: 1000000000 resources, more than 1000.") in str(caught.value)

    stack_id = heat.stacks.create(
        stack_name=unique("late-huge"),
        template=GROUP.replace("COUNT", "{get_attr: [size, value]}"),
        parameters={"count": 10**9})["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_FAILED")
    group = heat.resources.get(stack_id, "group")
    assert "Maximum resources per stack exceeded" in group.resource_status_reason


@pytest.mark.timeout(120)
def test_a_backtracking_allowed_pattern_is_a_400_within_the_time_budget(heat: Any) -> None:
    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(stack_name=unique("regex"), template=PATTERN,
                           parameters={"name": "a" * 40 + "b"})

    assert ('template:6 parameters.name.constraints[0]: Matching the pattern "(a|aa)+$" '
            "took too long") in str(caught.value)
