"""``GET /lifecycle_plugins[?recent=N]``: Kiln's addition for the console's operator pages
(specs/console.rst): the installed lifecycle plugins in their calling order, as
``kiln-manage plugins list`` shows them, each with its settings (secret ones masked) and
its last N calls across every tenant's stacks; an admin's token only."""

from __future__ import annotations

import falcon

from engine.api import views
from engine.api.requests import context, integer
from engine.services.events import StackEvents
from engine.services.lifecycle import LifecycleService

DEFAULT_RECENT = 20
MAX_RECENT = 200


class LifecyclePluginCollection:
    def __init__(self, lifecycle: LifecycleService, events: StackEvents) -> None:
        self._lifecycle = lifecycle
        self._events = events

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        ctx = context(req)
        plugins = self._lifecycle.list_plugins(ctx)  # 403 before the query is read
        recent = integer(req, "recent", MAX_RECENT)
        limit = DEFAULT_RECENT if recent is None else recent
        resp.media = {"lifecycle_plugins": [
            views.lifecycle_plugin(plugin, self._lifecycle.settings(plugin.name),
                                   self._events.recent_lifecycle_calls(ctx, plugin.name, limit))
            for plugin in plugins]}
