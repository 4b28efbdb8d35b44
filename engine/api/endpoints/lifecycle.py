"""``GET .../stacks/{name}/{id}/lifecycle``: Kiln's addition to the Heat API.

What each lifecycle plugin holds for the stack (its placements, its reserved quota), and
every plugin call recorded for it, oldest first."""

from __future__ import annotations

import falcon

from engine.api.requests import context
from engine.services.events import StackEvents
from engine.services.lifecycle import LifecycleService
from engine.services.stack_reads import StackReads


class StackLifecycle:
    def __init__(self, reads: StackReads, events: StackEvents,
                 lifecycle: LifecycleService) -> None:
        self._reads = reads
        self._events = events
        self._lifecycle = lifecycle

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        ctx = context(req)
        # 404 for another tenant's (no outputs resolved: none are shown)
        stack = self._reads.get(ctx, stack_name, stack_id, with_outputs=False)
        resp.media = {"lifecycle": {
            "plugins": self._lifecycle.describe(stack.id),
            "calls": self._events.lifecycle_calls(ctx, stack_name, stack_id),
        }}
