"""``GET`` and ``HEAD /healthcheck``: oslo.middleware's healthcheck, as OpenStack load
balancers expect it (specs/health-and-metrics.rst)."""

from __future__ import annotations

import datetime
import gc
import html
import io
import json
import platform
import sys
import traceback
from typing import Any

import falcon

from engine.context import ADMIN_ROLE
from engine.errors import KilnError
from engine.services.health import CheckResult, HealthService
from engine.services.tenants import TenantService

PLAIN, HTML, JSON = "text/plain", "text/html", "application/json"
#: oslo's order: text/plain wins a tie (``*/*``), and is the answer to any other Accept.
FORMATS = (PLAIN, HTML, JSON)


class Healthcheck:
    """200 ``OK`` or 503 with the failed checks' reasons; ``HEAD`` answers 204 or 503
    with no body. No token is needed; the detailed view (each check's details, the
    process's threads) is for an admin's token, or for everyone with
    ``[api] healthcheck_detailed``."""

    def __init__(self, health: HealthService, tenants: TenantService, *,
                 detailed: bool) -> None:
        self._health = health
        self._tenants = tenants
        self._detailed = detailed

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        results = self._health.check()
        healthy = all(result.available for result in results)
        resp.status = falcon.HTTP_200 if healthy else falcon.HTTP_503
        # With the database away no token can be checked; the view stays plain.
        detailed = self._detailed or (healthy and self._is_admin(req))
        kind = req.client_prefers(FORMATS) or PLAIN
        if kind == JSON:
            resp.text = json.dumps(_json(results, detailed), indent=4, sort_keys=True)
            resp.content_type = JSON
        elif kind == HTML:
            resp.text = _html(results, detailed)
            resp.content_type = "text/html; charset=UTF-8"
        else:
            resp.text = "\n".join(result.reason for result in results)
            resp.content_type = "text/plain; charset=UTF-8"

    def on_head(self, req: falcon.Request, resp: falcon.Response) -> None:
        healthy = all(result.available for result in self._health.check())
        # oslo also sends a Content-Type here; WSGI forbids one on a 204, and no balancer
        # reads it.
        resp.status = falcon.HTTP_204 if healthy else falcon.HTTP_503

    def _is_admin(self, req: falcon.Request) -> bool:
        secret = req.get_header("X-Auth-Token")
        if not secret:
            return False
        try:
            return self._tenants.authenticate(secret).role == ADMIN_ROLE
        except KilnError:
            return False  # a probe is never refused for its token: it gets the plain view


def _json(results: list[CheckResult], detailed: bool) -> dict[str, Any]:
    if not detailed:
        return {"detailed": False, "reasons": [result.reason for result in results]}
    return {"detailed": True, **_process(),
            "reasons": [{"reason": result.reason, "details": result.details,
                         "class": result.name} for result in results]}


def _process() -> dict[str, Any]:
    """What oslo's detailed view tells of the process; stacks name code, never values."""
    stacks = []
    for frame in sys._current_frames().values():
        buffer = io.StringIO()
        traceback.print_stack(frame, file=buffer)
        stacks.append(buffer.getvalue())
    return {"now": _now(), "python_version": sys.version, "platform": platform.platform(),
            "gc": {"counts": gc.get_count(), "threshold": gc.get_threshold()},
            "greenthreads": [], "threads": stacks}


def _html(results: list[CheckResult], detailed: bool) -> str:
    rows = "".join(
        "<TR>" + (f"<TD>{html.escape(r.name)}</TD>" if detailed else "")
        + f"<TD>{html.escape(r.reason)}</TD>"
        + (f"<TD>{html.escape(r.details)}</TD>" if detailed else "") + "</TR>\n"
        for r in results)
    heads = "<TH>Kind</TH><TH>Reason</TH><TH>Details</TH>" if detailed else "<TH>Reason</TH>"
    status = ""
    if detailed:
        status = ("<H1>Server status</H1>\n"
                  f"<B>Current time:</B><PRE>{_now()}</PRE>\n"
                  f"<B>Python version:</B><PRE>{html.escape(sys.version)}</PRE>\n"
                  f"<B>Platform:</B><PRE>{html.escape(platform.platform())}</PRE>\n"
                  "<HR></HR>\n")
    return ("<HTML>\n<HEAD><TITLE>Healthcheck Status</TITLE></HEAD>\n<BODY>\n" + status
            + f"<H2>Result of {len(results)} checks:</H2>\n"
            + '<TABLE bgcolor="#ffffff" border="1">\n<TBODY>\n'
            + f"<TR>{heads}</TR>\n{rows}</TBODY>\n</TABLE>\n<HR></HR>\n</BODY>\n</HTML>")


def _now() -> str:
    """UTC, naive, as oslo's ``timeutils.utcnow`` prints it."""
    return str(datetime.datetime.now(datetime.UTC).replace(tzinfo=None))
