"""The resource-type catalogue."""

from __future__ import annotations

import falcon

from engine.api import views
from engine.api.requests import flag
from engine.services.stacks import StackService


class ResourceTypeCollection:
    def __init__(self, stacks: StackService) -> None:
        self._stacks = stacks

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        records = self._stacks.list_resource_types()
        if flag(req, "with_description"):
            resp.media = {"resource_types": [
                {"resource_type": r.name, "description": r.description} for r in records]}
        else:
            resp.media = {"resource_types": [r.name for r in records]}


class ResourceTypeItem:
    def __init__(self, stacks: StackService) -> None:
        self._stacks = stacks

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               type_name: str) -> None:
        resp.media = views.resource_type(self._stacks.get_resource_type(type_name))
