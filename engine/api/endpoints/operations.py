"""``GET /operations[?state=unfinished|all][&stack_id=ID][&limit=N]``: Kiln's addition for
the console's operator pages (specs/console.rst): every tenant's operations, as
``kiln-manage operation list`` shows them, newest first; an admin's token only."""

from __future__ import annotations

import falcon

from engine.api import views
from engine.api.requests import context, integer
from engine.errors import BadRequest
from engine.services.operator import OperatorService

STATES = ("unfinished", "all")


class OperationCollection:
    def __init__(self, operator: OperatorService) -> None:
        self._operator = operator

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        ctx = context(req)
        self._operator.check_operator(ctx)  # 403 before the query is read
        state = req.get_param("state") or STATES[0]
        if state not in STATES:
            raise BadRequest(reason=f"state must be one of {', '.join(STATES)}.")
        found = self._operator.list_operations(
            ctx, unfinished_only=state == "unfinished",
            stack_id=req.get_param("stack_id"), limit=integer(req, "limit"))
        resp.media = {"operations": [views.operation(op) for op in found]}
