"""``GET /workers``: Kiln's addition for the console's operator pages (specs/console.rst):
the engine workers as ``kiln-manage worker list`` shows them; an admin's token only (the
same workers as ``GET /services``, in Kiln's own fields)."""

from __future__ import annotations

import falcon

from engine.api import views
from engine.api.requests import context
from engine.services.workers import WorkerService


class WorkerCollection:
    def __init__(self, workers: WorkerService) -> None:
        self._workers = workers

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        resp.media = {"workers": [views.worker(w)
                                  for w in self._workers.list_workers(context(req))]}
