"""``…/snapshots`` (create, list), ``…/snapshots/{snapshot_id}`` (show, delete) and
``…/snapshots/{snapshot_id}/restore``, with Heat's statuses: 200 and the snapshot on
create (Heat's controller returns it, unwrapped), 204 on delete, 202 on restore."""

from __future__ import annotations

import falcon

from engine.api import responses, views
from engine.api.requests import context, json_body
from engine.services.snapshots import StackSnapshots


class SnapshotCollection:
    def __init__(self, snapshots: StackSnapshots) -> None:
        self._snapshots = snapshots

    def on_post(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
                stack_name: str, stack_id: str) -> None:
        resp.media = views.snapshot(self._snapshots.create(
            context(req), stack_name, stack_id, json_body(req)))

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        resp.media = {"snapshots": [views.snapshot(s) for s in self._snapshots.list_snapshots(
            context(req), stack_name, stack_id)]}


class SnapshotItem:
    def __init__(self, snapshots: StackSnapshots) -> None:
        self._snapshots = snapshots

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str, snapshot_id: str) -> None:
        resp.media = {"snapshot": views.snapshot(self._snapshots.show(
            context(req), stack_name, stack_id, snapshot_id))}

    def on_delete(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
                  stack_name: str, stack_id: str, snapshot_id: str) -> None:
        self._snapshots.delete(context(req), stack_name, stack_id, snapshot_id)
        responses.no_content(resp)


class SnapshotRestore:
    def __init__(self, snapshots: StackSnapshots) -> None:
        self._snapshots = snapshots

    def on_post(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
                stack_name: str, stack_id: str, snapshot_id: str) -> None:
        self._snapshots.restore(context(req), stack_name, stack_id, snapshot_id)
        responses.accepted(resp)
