"""``POST .../actions``, ``DELETE .../abandon`` and ``GET .../export``."""

from __future__ import annotations

import falcon

from engine.api import responses
from engine.api.requests import context, json_body
from engine.services.stack_actions import StackActions


class StackActionsEndpoint:
    def __init__(self, actions: StackActions) -> None:
        self._actions = actions

    def on_post(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
                stack_name: str, stack_id: str) -> None:
        self._actions.act(context(req), stack_name, stack_id, json_body(req))
        responses.json_null(resp)


class StackAbandon:
    def __init__(self, actions: StackActions) -> None:
        self._actions = actions

    def on_delete(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
                  stack_name: str, stack_id: str) -> None:
        resp.media = self._actions.abandon(context(req), stack_name, stack_id)


class StackExport:
    def __init__(self, actions: StackActions) -> None:
        self._actions = actions

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        resp.media = self._actions.export(context(req), stack_name, stack_id)
