"""Resources of a stack: list and show."""

from __future__ import annotations

import falcon

from engine.api import views
from engine.api.requests import base_url, context, flag, multi
from engine.services.stacks import StackService


class ResourceCollection:
    def __init__(self, stacks: StackService) -> None:
        self._stacks = stacks

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        filters = multi(req)
        detail = flag(req, "with_detail")
        records = self._stacks.list_resources(context(req), stack_name, stack_id, filters,
                                              with_attributes=detail)
        base = base_url(req, tenant_id)
        resp.media = {"resources": [views.resource(base, stack_name, stack_id, r, detail=detail)
                                    for r in records]}


class ResourceItem:
    def __init__(self, stacks: StackService) -> None:
        self._stacks = stacks

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str, resource_name: str) -> None:
        record = self._stacks.get_resource(context(req), stack_name, stack_id, resource_name,
                                           req.get_param_as_list("with_attr") or ())
        resp.media = {"resource": views.resource(base_url(req, tenant_id), stack_name, stack_id,
                                                 record, detail=True)}
