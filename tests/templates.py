"""Templates both test tiers build: the unit tests through the services in-process, the
functional tests through a running Kiln."""

from __future__ import annotations


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
