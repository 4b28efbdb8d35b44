"""``/stacks/arn:openstack:heat::<t>:stacks/<name>/<id>[/<path>]``: Heat's ARN lookup.

An ARN spans several path segments, which no Falcon route template can capture, so this
is a sink (``ARN_SINK_PREFIX``). Sinks are tried only when no route matches. A real ARN
always ends in ``<name>/<id>`` under the ``…:stacks`` segment, so it is one segment longer
than ``/stacks/{stack_name}/{stack_id}`` and no route claims it, unless a forged ARN
spells a stack id such as ``preview`` or ``resources``: such a path is then served as
that route would serve it (for a stack named ``arn:…:stacks``, so a 404), where Heat
would redirect.

Heat's rules, kept here:

* The ARN is used as it is: no database read, so an ARN naming a stack that does not exist
  still redirects, and the next request gets the 404.
* The Location is built from the ARN, its tenant included. An ARN of another tenant
  therefore redirects into that tenant, where the tenant check answers 403 (or serves an
  admin), exactly as a request sent there directly would.
* Text that is not a Heat stack ARN is looked up as a stack name or id, which fails:
  404 ``The Stack (<text>) could not be found.``
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any
from urllib.parse import quote, unquote

import falcon

from engine.api import middleware, responses
from engine.api.requests import base_url, context
from engine.services.stack_reads import StackReads
from engine.services.tenants import TenantService

ARN_SINK_PREFIX = r"^/v1/(?P<tenant_id>[^/]+)/stacks/(?P<arn>arn:.*)$"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_STACK_PATH = re.compile(r"stacks/([^/]+)/([^/]+)(.*)")


@dataclasses.dataclass(frozen=True)
class StackArn:
    tenant_id: str
    stack_name: str
    stack_id: str
    path: str  # "" or "/<sub/path>"


def parse_arn(text: str) -> StackArn | None:
    """``arn:openstack:heat:<region>:<tenant>:stacks/<name>/<id>[/<path>]`` as Heat reads
    it (any region, each part percent-decoded), or None when ``text`` is not one."""
    fields = text.split(":")
    if len(fields) < 6 or fields[0].lower() != "arn" or fields[1:3] != ["openstack", "heat"]:
        return None
    match = _STACK_PATH.match(":".join(fields[5:]))
    if match is None:
        return None
    name, stack_id, path = (unquote(part) for part in match.groups())
    if "/" in name:
        return None  # Heat's identifier refuses it, and the lookup then fails
    return StackArn(unquote(fields[4]), name, stack_id, path)


class ArnLookup:
    """The sink: every method Heat routes to lookup gets a 302; others a 405."""

    def __init__(self, reads: StackReads, tenants: TenantService) -> None:
        self._reads = reads
        # Falcon skips resource middleware for sinks: authenticate here, with the same code.
        self._authenticate = middleware.Authenticate(tenants)

    def __call__(self, req: falcon.Request, resp: falcon.Response, **params: Any) -> None:
        tenant_id: str = params["tenant_id"]
        arn: str = params["arn"]
        self._authenticate.process_resource(req, resp, self, {"tenant_id": tenant_id})
        if req.method == "OPTIONS":
            responses.allowed(resp, METHODS)
            return
        if req.method not in METHODS:
            raise falcon.HTTPMethodNotAllowed(METHODS)
        parsed = parse_arn(arn)
        if parsed is None:
            name, stack_id = self._reads.lookup(context(req), arn)
            parsed = StackArn(tenant_id, name, stack_id, "")
        location = (f"{base_url(req, quote(parsed.tenant_id, safe=''))}/stacks/"
                    f"{quote(parsed.stack_name, safe='')}/{quote(parsed.stack_id, safe='')}"
                    f"{quote(parsed.path)}")
        if req.query_string:
            location += f"?{req.query_string}"
        responses.found(resp, location)
