"""Per-tenant limits: the defaults, the overrides and the verdicts with their messages."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from engine.lifecycle.base import Denied

UNLIMITED = -1

# <stacks>/<resources>, each a whole number or -1; nothing else (no spaces, no signs).
_OVERRIDE = re.compile(r"(-1|0|[1-9][0-9]*)/(-1|0|[1-9][0-9]*)")


@dataclasses.dataclass(frozen=True)
class Limits:
    stacks: int  # UNLIMITED for no limit
    resources: int


@dataclasses.dataclass(frozen=True)
class Quotas:
    default: Limits
    overrides: Mapping[str, Limits]

    def for_tenant(self, tenant_id: str) -> Limits:
        return self.overrides.get(tenant_id, self.default)


def parse_overrides(raw: Mapping[str, str], option: str) -> dict[str, Limits]:
    """``{tenant: "<stacks>/<resources>"}`` to limits; raise ``ValueError`` naming
    ``option``, the tenant and what is wrong."""
    overrides = {}
    for tenant_id, value in raw.items():
        if not tenant_id:
            raise ValueError(f"{option}: an entry has no tenant id before ':'")
        match = _OVERRIDE.fullmatch(value)
        if match is None:
            raise ValueError(f"{option}: {tenant_id}: {value!r} is not <stacks>/<resources>, "
                             "each a whole number or -1 for unlimited (e.g. 10/200)")
        overrides[tenant_id] = Limits(stacks=int(match[1]), resources=int(match[2]))
    return overrides


def check_stacks(tenant_id: str, limits: Limits, others: int) -> None:
    """Deny one more stack beside the tenant's ``others``."""
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
