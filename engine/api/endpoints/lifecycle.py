"""``GET .../stacks/{name}/{id}/lifecycle``: Kiln's addition to the Heat API.

What each lifecycle plugin holds for the stack (its placements, its reserved quota), and
every plugin call recorded for it, oldest first."""

from __future__ import annotations

import falcon

from engine.api.requests import context
from engine.services.lifecycle import LifecycleService
from engine.services.stacks import StackService


class StackLifecycle:
    def __init__(self, stacks: StackService, lifecycle: LifecycleService) -> None:
        self._stacks = stacks
        self._lifecycle = lifecycle

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        ctx = context(req)
        stack = self._stacks.get(ctx, stack_name, stack_id)  # 404 for another tenant's
        resp.media = {"lifecycle": {
            "plugins": self._lifecycle.describe(stack.id),
            "calls": self._stacks.lifecycle_calls(ctx, stack_name, stack_id),
        }}
