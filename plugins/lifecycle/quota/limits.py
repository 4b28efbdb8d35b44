"""Per-tenant limits: the defaults, the overrides and the verdicts with their messages."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from engine.lifecycle.base import Denied

UNLIMITED = -1

# <stacks>/<resources>[/<resources per stack>], each a whole number or -1; nothing else
# (no spaces, no signs).
_NUMBER = r"(-1|0|[1-9][0-9]*)"
_OVERRIDE = re.compile(rf"{_NUMBER}/{_NUMBER}(?:/{_NUMBER})?")
_FORM = "<stacks>/<resources>[/<resources per stack>]"


@dataclasses.dataclass(frozen=True)
class Limits:
    stacks: int  # UNLIMITED for no limit; counts top-level stacks (trees)
    resources: int  # every stack of every tree of the tenant
    #: One top-level stack and every stack nested in it, together.
    stack_resources: int = UNLIMITED


@dataclasses.dataclass(frozen=True)
class Quotas:
    default: Limits
    overrides: Mapping[str, Limits]

    def for_tenant(self, tenant_id: str) -> Limits:
        return self.overrides.get(tenant_id, self.default)


def parse_overrides(raw: Mapping[str, str], option: str,
                    stack_resources: int = UNLIMITED) -> dict[str, Limits]:
    """``{tenant: "<stacks>/<resources>[/<resources per stack>]"}`` to limits, the
    default ``stack_resources`` where the third number is left out; raise ``ValueError``
    naming ``option``, the tenant and what is wrong."""
    overrides = {}
    for tenant_id, value in raw.items():
        if not tenant_id:
            raise ValueError(f"{option}: an entry has no tenant id before ':'")
        match = _OVERRIDE.fullmatch(value)
        if match is None:
            raise ValueError(f"{option}: {tenant_id}: {value!r} is not {_FORM}, "
                             "each a whole number or -1 for unlimited (e.g. 10/200 or "
                             "10/200/50)")
        overrides[tenant_id] = Limits(
            stacks=int(match[1]), resources=int(match[2]),
            stack_resources=stack_resources if match[3] is None else int(match[3]))
    return overrides


def check_stacks(tenant_id: str, limits: Limits, others: int) -> None:
    """Deny one more top-level stack beside the tenant's ``others``."""
    if limits.stacks != UNLIMITED and others + 1 > limits.stacks:
        raise Denied(f"stack quota exceeded: tenant {tenant_id} has {others} stacks "
                     f"of {limits.stacks} allowed")


def check_resources(tenant_id: str, limits: Limits, others: int, held: int,
                    wanted: int) -> None:
    """Deny a stack going from ``held`` to ``wanted`` resources beside the ``others``
    the tenant's other stacks hold. A stack that does not grow is never denied, even
    when the tenant is over a limit that was lowered: shrinking must stay possible."""
    if limits.resources == UNLIMITED or wanted <= held:
        return
    if others + wanted > limits.resources:
        raise Denied(f"resource quota exceeded: tenant {tenant_id} has {others + held} "
                     f"resources of {limits.resources} allowed, this stack needs "
                     f"{wanted - held} more")


def check_stack_resources(root_name: str, nested: bool, limits: Limits, others: int,
                          held: int, wanted: int) -> None:
    """Deny a stack going from ``held`` to ``wanted`` resources beside the ``others``
    the other stacks of its tree hold (its root and every stack nested in the root), so
    that splitting a stack into nested ones does not pass the per-stack limit. As for
    the tenant's limit, a stack that does not grow is never denied."""
    if limits.stack_resources == UNLIMITED or wanted <= held:
        return
    if others + wanted > limits.stack_resources:
        this = "this nested stack" if nested else "this stack"
        raise Denied(f"stack resource quota exceeded: stack {root_name} and the stacks "
                     f"nested in it have {others + held} resources of "
                     f"{limits.stack_resources} allowed per stack, {this} needs "
                     f"{wanted - held} more")
