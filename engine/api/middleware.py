"""Per-request plumbing: request id, text a URL may not hold, body-size limit, token ->
RequestContext."""

from __future__ import annotations

import uuid
from typing import Any

import falcon

from engine.context import RequestContext
from engine.errors import BadRequest, InvalidTenant, RequestLimitExceeded
from engine.services.tenants import TenantService

REQUEST_ID_HEADER = "x-openstack-request-id"


class RequestId:
    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.request_id = f"req-{uuid.uuid4()}"
        resp.set_header(REQUEST_ID_HEADER, req.context.request_id)


class UrlText:
    """Refuse a path or query holding a NUL character (``%00``): no name, id or filter
    value of Kiln's has one, and PostgreSQL refuses to compare such text, so the request
    would otherwise fail in the database."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        texts = [req.path, *req.params]
        for value in req.params.values():
            texts.extend(value if isinstance(value, list) else [value])
        if any("\x00" in text for text in texts):
            raise BadRequest(reason="The request's path or query has a NUL character (%00).")


class BodyLimit:
    """Refuse bodies over the limit before anything reads them."""

    def __init__(self, max_bytes: int) -> None:
        self._max = max_bytes

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.max_body_bytes = self._max
        length = req.content_length
        if length is not None and length > self._max:
            raise RequestLimitExceeded(
                reason=f"JSON body size ({length} bytes) exceeds maximum allowed size "
                       f"({self._max} bytes).")


class Authenticate:
    """Every /v1 request needs a token; the URL's tenant must be the token's, or admin."""

    def __init__(self, tenants: TenantService) -> None:
        self._tenants = tenants

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         params: dict[str, Any]) -> None:
        tenant_id = params.get("tenant_id")
        if tenant_id is None:
            return  # version discovery needs no token
        secret = req.get_header("X-Auth-Token")
        if getattr(resource, "accepts_signal_tokens", False):
            # Only here may a resource's signal token stand in for a tenant token, and
            # only for the resource it was issued for (the URL's).
            principal = self._tenants.authenticate_for_signal(
                secret, tenant_id, params["stack_name"], params["stack_id"],
                params["resource_name"])
        else:
            principal = self._tenants.authenticate(secret)
        ctx = RequestContext(tenant_id=tenant_id, token_tenant_id=principal.tenant_id,
                             role=principal.role, request_id=req.context.request_id,
                             username=principal.token_id)
        if tenant_id != principal.tenant_id:
            if not ctx.is_admin:
                raise InvalidTenant(target=tenant_id, actual=principal.tenant_id)
            self._tenants.require_tenant_id(tenant_id)
        req.context.kiln = ctx
