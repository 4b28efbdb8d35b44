"""``.../stacks/{name}/{id}/approval``: Kiln's addition to the Heat API, the approval
gate of the stack's operation (``engine.services.approvals``).

``GET`` shows what the operation waits for (404 when nothing); ``POST``
``{"decision": "approve" | "reject", "comment": "..."}`` decides it, with a token of the
stack's tenant with the admin role (403 otherwise, 409 when nothing waits)."""

from __future__ import annotations

import falcon

from engine.api.requests import context, json_body
from engine.services.approvals import Approvals


class StackApproval:
    def __init__(self, approvals: Approvals) -> None:
        self._approvals = approvals

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        record = self._approvals.awaited(context(req), stack_name, stack_id)
        resp.media = {"approval": record.as_dict()}

    def on_post(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
                stack_name: str, stack_id: str) -> None:
        record = self._approvals.decide(context(req), stack_name, stack_id, json_body(req))
        resp.media = {"approval": record.as_dict()}
