"""The resource-type catalogue."""

from __future__ import annotations

import falcon

from engine.api import views
from engine.api.requests import flag
from engine.services import template_info
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


class ResourceTypeTemplate:
    """``GET /resource_types/{type}/template[?template_type=cfn|hot]``: a starting template
    for the type; CFN unless asked otherwise, as in Heat."""

    def __init__(self, stacks: StackService) -> None:
        self._stacks = stacks

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               type_name: str) -> None:
        # The template type is checked first, as Heat does: a bad one is a 400 even for an
        # unknown resource type.
        template_type = template_info.parse_template_type(req.get_param("template_type"))
        resp.media = self._stacks.generate_template(type_name, template_type)
