"""Per-request plumbing: request metrics, request id, access log and log context, text a
URL may not hold, body-size limit, token -> RequestContext, the console's security
headers, Heat's answer to ``OPTIONS``."""

from __future__ import annotations

import logging
import time
import urllib.parse
import uuid
from typing import Any

import falcon

from engine import logs, metrics
from engine.api import responses
from engine.context import RequestContext
from engine.errors import BadRequest, InvalidTenant, RequestLimitExceeded
from engine.resources.base import SIGNAL_TOKEN_PARAM
from engine.services.records import Principal
from engine.services.tenants import TenantService

REQUEST_ID_HEADER = "x-openstack-request-id"
ACCESS_LOG = logging.getLogger(logs.ACCESS_LOGGER)
# What a path may show as it is in the access line; anything else is percent-encoded.
URL_SAFE = "/:@!$&'()*+,;=-._~{}[]"
QUIET_ROUTES = frozenset({"/healthcheck", "/metrics"})


class RequestMetrics:
    """Count every request and time it (``kiln_http_requests_total``,
    ``kiln_http_request_duration_seconds``), by the route template that matched, never
    by the path, which holds tenant ids and stack names. First of the components, so the
    time covers the others and every answer is counted, refusals included (Falcon calls
    each ``process_response`` after its error handlers)."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.metrics_started = time.monotonic()

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         req_succeeded: bool) -> None:
        # Falcon refuses a method it does not know before any process_request runs.
        started = getattr(req.context, "metrics_started", None)
        elapsed = 0.0 if started is None else time.monotonic() - started
        metrics.http_request(req.uri_template, req.method, resp.status_code, elapsed)


class RequestId:
    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.request_id = f"req-{uuid.uuid4()}"
        resp.set_header(REQUEST_ID_HEADER, req.context.request_id)


class AccessLog:
    """One line per request on logger ``kiln.access`` (INFO; DEBUG for a load balancer's
    /healthcheck and a scrape of /metrics that succeed), errors included (Falcon calls
    every component's ``process_response`` after its error handlers, and after a
    component's ``process_request`` raised): the client's address, method, path with
    query, status and duration, under the request's log context. The context (request
    id, the URL's tenant, its stack name and id) is bound for the whole request, so that
    every line logged while serving it carries it. Comes after ``RequestId``."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.started = time.monotonic()
        req.context.log_token = logs.bind(request_id=req.context.request_id)

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         params: dict[str, Any]) -> None:
        # Rebound, not added to: the outer binding is reset whole at the response.
        logs.unbind(req.context.log_token)
        req.context.log_token = logs.bind(
            request_id=req.context.request_id, tenant_id=params.get("tenant_id"),
            stack_name=params.get("stack_name"), stack_id=params.get("stack_id"))

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         req_succeeded: bool) -> None:
        # Neither is set when Falcon refused the request (a method it does not know)
        # before any process_request ran: the line is written all the same, untimed.
        token = getattr(req.context, "log_token", None)
        started = getattr(req.context, "started", None)
        try:
            duration_ms = 0.0 if started is None else round(
                (time.monotonic() - started) * 1000, 1)
            # Encoded again: a decoded %0A would start a forged line of its own.
            path = urllib.parse.quote(req.path, safe=URL_SAFE)
            query = _masked_query(req.query_string)
            path = f"{path}?{query}" if query else path
            status = resp.status_code
            # A load balancer's probes and Prometheus's scrapes, every few seconds, would
            # bury the tenants' requests: at DEBUG unless they fail.
            quiet = req.uri_template in QUIET_ROUTES and status < 400
            ACCESS_LOG.log(logging.DEBUG if quiet else logging.INFO, "%s %s %s %d %.1fms",
                           req.remote_addr, req.method, path, status, duration_ms, extra={
                                "remote_addr": req.remote_addr, "method": req.method,
                                "path": path, "status": status, "duration_ms": duration_ms})
        finally:
            # The server's thread serves the next request with nothing bound.
            if token is not None:
                logs.unbind(token)


def _masked_query(query: str) -> str:
    """The query as the access line shows it: a signed signal URL's secret masked. A
    parameter is known by its decoded name, as Falcon reads it (``signal%5Ftoken`` is
    ``signal_token`` too)."""
    def masked(part: str) -> str:
        name = urllib.parse.unquote_plus(part.split("=", 1)[0])
        return f"{SIGNAL_TOKEN_PARAM}=***" if name == SIGNAL_TOKEN_PARAM else part

    return "&".join(masked(part) for part in query.split("&")) if query else query


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
    """Every /v1 request needs a token; the URL's tenant must be the token's, or admin.
    A route with no tenant in its path needs none (version discovery, the console's
    files), unless its resource says ``acts_on_token_tenant`` (``GET /v1/session``): it
    then acts on the token's own tenant."""

    def __init__(self, tenants: TenantService) -> None:
        self._tenants = tenants

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         params: dict[str, Any]) -> None:
        tenant_id: str | None = params.get("tenant_id")
        if tenant_id is None:
            if getattr(resource, "acts_on_token_tenant", False):
                principal = self._tenants.authenticate(req.get_header("X-Auth-Token"))
                req.context.kiln = _context(req, principal.tenant_id, principal)
            return
        secret = req.get_header("X-Auth-Token")
        if getattr(resource, "accepts_signal_tokens", False):
            # Only here may a resource's signal token stand in for a tenant token, and
            # only for the resource it was issued for (the URL's). A signed URL carries
            # it in its query instead (a software deployment's deploy_signal_id): a
            # signal token only, never a tenant token.
            signed = req.get_param(SIGNAL_TOKEN_PARAM) if secret is None else None
            principal = self._tenants.authenticate_for_signal(
                signed or secret, tenant_id, params["stack_name"], params["stack_id"],
                params["resource_name"], signal_only=signed is not None)
        else:
            principal = self._tenants.authenticate(secret)
        ctx = _context(req, tenant_id, principal)
        if tenant_id != principal.tenant_id:
            if not ctx.is_admin:
                raise InvalidTenant(target=tenant_id, actual=principal.tenant_id)
            self._tenants.require_tenant_id(tenant_id)
        req.context.kiln = ctx


def _context(req: falcon.Request, tenant_id: str, principal: Principal) -> RequestContext:
    return RequestContext(tenant_id=tenant_id, token_tenant_id=principal.tenant_id,
                          role=principal.role, request_id=req.context.request_id,
                          username=principal.token_id)


class ConsoleHeaders:
    """The console's security headers on every answer under its prefix, errors included
    (specs/console.rst): no inline script and no framing, so a stack name or a status
    reason rendered into the page cannot become code; no ``<base>`` (an injected one
    would move every relative URL) and no form submitted by the browser itself (the
    console's forms are all handled by script, so a form's native submission, which
    could carry a typed token elsewhere, is never needed); no type sniffing; no referrer
    carrying a stack's URL elsewhere. The console needs no token to load (it signs in
    with one): ``Authenticate`` passes it, as it has no tenant in its path."""

    HEADERS = {
        "Content-Security-Policy": ("default-src 'self'; frame-ancestors 'none'; "
                                    "base-uri 'none'; form-action 'none'"),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         req_succeeded: bool) -> None:
        if req.path == self._prefix or req.path.startswith(self._prefix + "/"):
            resp.set_headers(self.HEADERS)


class Options:
    """``OPTIONS`` on any route answers 204 with ``Allow`` and no body, as Heat's does
    (``engine.api.responses``). Falcon's own responder, which every route gets, answers
    200 with an empty body under its default JSON ``Content-Type``: its ``Allow`` is kept,
    the rest becomes a 204. Last of the components, so that its ``process_response`` runs
    first and the access log and the metrics see the 204."""

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         req_succeeded: bool) -> None:
        if (req.method == "OPTIONS" and req_succeeded and resp.status_code == 200
                and resp.text is None and resp.data is None and resp.media is None
                and resp.stream is None):
            resp.delete_header("Content-Length")
            responses.no_content(resp)
