"""``GET /v1/session``: Kiln's addition for the console (specs/console.rst): who the token
in ``X-Auth-Token`` is, so that a client holding only a token can build its tenant's URLs.
No tenant in the path; a missing, unknown, expired or revoked token is a 401."""

from __future__ import annotations

import falcon

from engine.api import views
from engine.api.requests import context
from engine.services.tenants import TenantService


class Session:
    #: Authenticate checks the token though the path names no tenant.
    acts_on_token_tenant = True

    def __init__(self, tenants: TenantService) -> None:
        self._tenants = tenants

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        ctx = context(req)
        tenant = self._tenants.tenant_by_id(ctx.token_tenant_id)
        resp.media = {"session": views.session(ctx, tenant)}
