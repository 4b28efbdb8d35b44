"""``GET .../stacks/{name}/{id}/graph[?nested_depth=N]``: Kiln's addition for the console
(specs/console.rst): the stack's resources as nodes and dependency edges
(``engine.services.stack_graph``)."""

from __future__ import annotations

import falcon

from engine.api import views
from engine.api.requests import context, integer
from engine.services.stack_graph import StackGraphs


class StackGraph:
    def __init__(self, graphs: StackGraphs) -> None:
        self._graphs = graphs

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        graph = self._graphs.graph(context(req), stack_name, stack_id,
                                   integer(req, "nested_depth") or 0)
        resp.media = {"graph": views.graph(graph)}
