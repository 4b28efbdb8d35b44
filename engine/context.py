"""The identity a request or an operation acts under, passed explicitly, never global."""

from __future__ import annotations

import dataclasses

ADMIN_ROLE = "admin"
MEMBER_ROLE = "member"
ROLES = (MEMBER_ROLE, ADMIN_ROLE)
# A resource's signal token (``OS::Heat::WaitConditionHandle``): it authenticates only on
# that resource's signal URL, and is never issued by ``kiln-manage token create``.
SIGNAL_ROLE = "signal"


@dataclasses.dataclass(frozen=True)
class RequestContext:
    """Who is asking: the tenant a request acts on, the token's own tenant and role."""

    tenant_id: str
    token_tenant_id: str
    role: str
    request_id: str = ""
    username: str = ""

    @property
    def is_admin(self) -> bool:
        return self.role == ADMIN_ROLE
