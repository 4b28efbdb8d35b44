"""Stack collection, item, lookup redirects, template and outputs."""

from __future__ import annotations

from typing import Any

import falcon

from engine.api import responses, views
from engine.api.requests import (
    base_url,
    context,
    flag,
    integer,
    json_body,
    multi,
    sort_dir,
    tags,
)
from engine.errors import GlobalTenantForbidden
from engine.services.stack_dry_runs import StackDryRuns
from engine.services.stack_reads import StackQuery, StackReads
from engine.services.stack_writes import StackWrites

LIST_CONTROL = {"limit", "marker", "sort_keys", "sort_dir", "with_count", "show_deleted",
                "show_nested", "show_hidden", "global_tenant", "tags", "tags_any",
                "not_tags", "not_tags_any"}


class StackCollection:
    def __init__(self, reads: StackReads, writes: StackWrites) -> None:
        self._reads = reads
        self._writes = writes

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        ctx = context(req)
        all_tenants = flag(req, "global_tenant")
        if all_tenants and not ctx.is_admin:
            raise GlobalTenantForbidden()
        # Kiln has no hidden tags: show_hidden changes nothing, but is checked as Heat
        # checks it.
        flag(req, "show_hidden")
        query = StackQuery(
            show_nested=flag(req, "show_nested"),
            filters=multi(req, skip=LIST_CONTROL), show_deleted=flag(req, "show_deleted"),
            limit=integer(req, "limit"), marker=req.get_param("marker"),
            sort_keys=tuple(req.get_param_as_list("sort_keys") or ()),
            sort_dir=sort_dir(req), all_tenants=all_tenants,
            tags=tags(req, "tags"), tags_any=tags(req, "tags_any"),
            not_tags=tags(req, "not_tags"), not_tags_any=tags(req, "not_tags_any"),
            with_count=flag(req, "with_count"))
        page = self._reads.list_stacks(ctx, query)
        base = base_url(req, tenant_id)
        body: dict[str, Any] = {"stacks": [
            views.stack_summary(base, r, with_project=ctx.is_admin) for r in page.stacks]}
        if page.full:
            params = {k: v for k, v in req.params.items() if k != "marker"}
            params["marker"] = page.stacks[-1].id
            query_string = falcon.to_query_str(params, comma_delimited_lists=False)
            body["links"] = [{"rel": "next", "href": f"{base}/stacks{query_string}"}]
        if page.count is not None:
            body["count"] = page.count
        resp.media = body

    def on_post(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        record = self._writes.create(context(req), json_body(req))
        href = views.stack_url(base_url(req, tenant_id), record.name, record.id)
        resp.status = falcon.HTTP_201
        resp.location = href
        resp.media = {"stack": {"id": record.id, "links": [{"href": href, "rel": "self"}]}}


class StackDetailCollection:
    """``GET /stacks/detail``: the list keys of the stacks, no paging parameters (as
    Heat): the first page of the list without a ``limit``."""

    def __init__(self, reads: StackReads) -> None:
        self._reads = reads

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        ctx = context(req)
        page = self._reads.list_stacks(ctx, StackQuery())
        base = base_url(req, tenant_id)
        resp.media = {"stacks": [views.stack_summary(base, r, with_project=False)
                                 for r in page.stacks]}


class StackLookup:
    """``/stacks/{name_or_id}[/sub]`` for every method -> 302 to the canonical URL."""

    def __init__(self, reads: StackReads, suffix: str = "") -> None:
        self._reads = reads
        self._suffix = suffix

    def _redirect(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
                  stack_name: str) -> None:
        name, stack_id = self._reads.lookup(context(req), stack_name)
        location = views.stack_url(base_url(req, tenant_id), name, stack_id) + self._suffix
        if req.query_string:
            location += f"?{req.query_string}"
        responses.found(resp, location)

    on_get = on_post = on_put = on_patch = on_delete = _redirect


class StackPreview:
    """``POST /stacks/preview``: what a create would build, stored nowhere, plus each
    lifecycle plugin's dry-run verdict (a 400 when one would fail it). Other methods
    treat ``preview`` as a stack name, as Heat's routes do (they match this path for POST
    only)."""

    def __init__(self, dry_runs: StackDryRuns, reads: StackReads) -> None:
        self._dry_runs = dry_runs
        self._lookup = StackLookup(reads)

    def on_post(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        preview = self._dry_runs.preview(context(req), json_body(req))
        resp.media = {"stack": views.stack_preview(base_url(req, tenant_id), preview)}

    def _named_preview(self, req: falcon.Request, resp: falcon.Response,
                       tenant_id: str) -> None:
        self._lookup.on_get(req, resp, tenant_id, "preview")

    on_get = on_put = on_patch = on_delete = _named_preview


class StackItem:
    def __init__(self, reads: StackReads, writes: StackWrites) -> None:
        self._reads = reads
        self._writes = writes

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        resolve_outputs = flag(req, "resolve_outputs", default=True)
        record = self._reads.get(context(req), stack_name, stack_id,
                                 with_outputs=resolve_outputs)
        resp.media = {"stack": views.stack_detail(base_url(req, tenant_id), record,
                                                  resolve_outputs=resolve_outputs)}

    def on_put(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        self._writes.update(context(req), stack_name, stack_id, json_body(req), patch=False)
        responses.accepted(resp)

    def on_patch(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
                 stack_name: str, stack_id: str) -> None:
        self._writes.update(context(req), stack_name, stack_id, json_body(req), patch=True)
        responses.accepted(resp)

    def on_delete(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
                  stack_name: str, stack_id: str) -> None:
        self._writes.delete(context(req), stack_name, stack_id)
        responses.no_content(resp)


class StackUpdatePreview:
    """``PUT|PATCH /stacks/{name}/{id}/preview``: what the same update would do to each
    resource (Heat's ``resource_changes``), plus each lifecycle plugin's dry-run
    verdict (a 400 when one would fail it); nothing is stored. The worker's decision
    function is handed to the service here, because the service layer may not import the
    worker."""

    def __init__(self, dry_runs: StackDryRuns) -> None:
        self._dry_runs = dry_runs

    def on_put(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        self._preview(req, resp, stack_name, stack_id, patch=False)

    def on_patch(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
                 stack_name: str, stack_id: str) -> None:
        self._preview(req, resp, stack_name, stack_id, patch=True)

    def _preview(self, req: falcon.Request, resp: falcon.Response, stack_name: str,
                 stack_id: str, *, patch: bool) -> None:
        # Checked as a boolean, as Heat checks it, and otherwise ignored: the preview
        # lists the top stack's resources only.
        flag(req, "show_nested")
        preview = self._dry_runs.preview_update(context(req), stack_name, stack_id,
                                                json_body(req), patch=patch)
        resp.media = views.update_preview(preview)


class StackTemplate:
    def __init__(self, reads: StackReads) -> None:
        self._reads = reads

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        resp.media = self._reads.get_template(context(req), stack_name, stack_id)


class StackEnvironment:
    def __init__(self, reads: StackReads) -> None:
        self._reads = reads

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        resp.media = self._reads.get_environment(context(req), stack_name, stack_id)


class StackFiles:
    def __init__(self, reads: StackReads) -> None:
        self._reads = reads

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        resp.media = self._reads.get_files(context(req), stack_name, stack_id)


class OutputCollection:
    def __init__(self, reads: StackReads) -> None:
        self._reads = reads

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        resp.media = {"outputs": self._reads.list_outputs(context(req), stack_name, stack_id)}


class OutputItem:
    def __init__(self, reads: StackReads) -> None:
        self._reads = reads

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str, output_key: str) -> None:
        resp.media = {"output": self._reads.get_output(context(req), stack_name, stack_id,
                                                       output_key)}
