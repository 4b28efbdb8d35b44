"""Resources of a stack: list, show, metadata, mark-unhealthy and signal."""

from __future__ import annotations

import falcon

from engine.api import responses, views
from engine.api.requests import (
    base_url,
    context,
    flag,
    integer,
    json_body,
    multi,
    signal_details,
)
from engine.services.stack_resources import StackResources


class ResourceCollection:
    def __init__(self, resources: StackResources) -> None:
        self._resources = resources

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        filters = multi(req)
        detail = flag(req, "with_detail")
        records = self._resources.list_resources(context(req), stack_name, stack_id, filters,
                                                 with_attributes=detail,
                                                 nested_depth=integer(req, "nested_depth") or 0)
        base = base_url(req, tenant_id)
        resp.media = {"resources": [views.resource(base, stack_name, stack_id, r, detail=detail)
                                    for r in records]}


class ResourceItem:
    def __init__(self, resources: StackResources) -> None:
        self._resources = resources

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str, resource_name: str) -> None:
        record = self._resources.get_resource(context(req), stack_name, stack_id,
                                              resource_name,
                                              req.get_param_as_list("with_attr") or ())
        resp.media = {"resource": views.resource(base_url(req, tenant_id), stack_name, stack_id,
                                                 record, detail=True)}

    def on_patch(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
                 stack_name: str, stack_id: str, resource_name: str) -> None:
        """Mark-unhealthy; ``resource_name`` may also be the physical resource id."""
        self._resources.mark_unhealthy(context(req), stack_name, stack_id, resource_name,
                                       json_body(req))
        responses.json_null(resp)


class ResourceMetadata:
    def __init__(self, resources: StackResources) -> None:
        self._resources = resources

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str, resource_name: str) -> None:
        resp.media = {"metadata": self._resources.resource_metadata(
            context(req), stack_name, stack_id, resource_name)}


class ResourceSignal:
    """``POST …/resources/<name>/signal``: a tenant token, or the resource's own signal
    token (``middleware.Authenticate``), in the header or in a signed URL's query. ``PUT``
    is Kiln's addition: a software deployment's TEMP_URL_SIGNAL agent PUTs its result to
    its signed URL, as Heat's agents PUT it to a Swift TempURL."""

    accepts_signal_tokens = True

    def __init__(self, resources: StackResources) -> None:
        self._resources = resources

    def on_post(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
                stack_name: str, stack_id: str, resource_name: str) -> None:
        details = signal_details(req)
        self._resources.signal(context(req), stack_name, stack_id, resource_name, details)
        responses.json_null(resp)

    on_put = on_post
