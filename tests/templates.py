"""Templates both test tiers build: the unit tests through the services in-process, the
functional tests through a running Kiln."""

from __future__ import annotations

# Two None resources, b after a: the least that has an order.
TWO_IN_ORDER = """\
heat_template_version: 2018-08-31
resources:
  a: {type: OS::Heat::None}
  b: {type: OS::Heat::None, depends_on: a}
"""

# One resource whose create fails.
FAILING_ONE = """\
heat_template_version: 2018-08-31
resources:
  broken:
    type: OS::Heat::TestResource
    properties: {fail: true}
"""


def group_of_groups(outer: int, inner: int) -> str:
    """A ResourceGroup of ``outer`` ResourceGroups of ``inner`` None resources each: the
    shape whose members multiply across nested stacks."""
    return f"""\
heat_template_version: 2018-08-31
resources:
  outer:
    type: OS::Heat::ResourceGroup
    properties:
      count: {outer}
      resource_def:
        type: OS::Heat::ResourceGroup
        properties:
          count: {inner}
          resource_def: {{type: OS::Heat::None}}
"""
