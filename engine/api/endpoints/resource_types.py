"""The resource-type catalogue."""

from __future__ import annotations

import falcon

from engine.api import views
from engine.api.requests import flag
from engine.services import template_info
from engine.services.resource_types import ResourceTypes, TypeFilters


class ResourceTypeCollection:
    """``GET /resource_types[?name=<regex>&version=<v>&support_status=<s>]
    [&with_description=true]``: names, or ``{resource_type, description}`` items."""

    def __init__(self, types: ResourceTypes) -> None:
        self._types = types

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        with_description = flag(req, "with_description")
        records = self._types.list_resource_types(TypeFilters(
            name=req.get_param("name"), version=req.get_param("version"),
            support_status=req.get_param("support_status")))
        resp.media = {"resource_types": [
            views.resource_type_summary(r, with_description=with_description)
            for r in records]}


class ResourceTypeItem:
    """``GET /resource_types/{type}[?with_description=true]``: the type's schemas."""

    def __init__(self, types: ResourceTypes) -> None:
        self._types = types

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               type_name: str) -> None:
        with_description = flag(req, "with_description")
        resp.media = views.resource_type(self._types.get_resource_type(type_name),
                                         with_description=with_description)


class ResourceTypeTemplate:
    """``GET /resource_types/{type}/template[?template_type=cfn|hot]``: a starting template
    for the type; CFN unless asked otherwise, as in Heat."""

    def __init__(self, types: ResourceTypes) -> None:
        self._types = types

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               type_name: str) -> None:
        # The template type is checked first, as Heat does: a bad one is a 400 even for an
        # unknown resource type.
        template_type = template_info.parse_template_type(req.get_param("template_type"))
        resp.media = self._types.generate_template(type_name, template_type)
