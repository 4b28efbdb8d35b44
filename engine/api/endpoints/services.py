"""``GET /services``: the engine workers, for admins (Heat's ``service list``)."""

from __future__ import annotations

import falcon

from engine.api import views
from engine.api.requests import context
from engine.services.workers import WorkerService


class ServiceCollection:
    def __init__(self, workers: WorkerService) -> None:
        self._workers = workers

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        resp.media = {"services": [views.service(w)
                                   for w in self._workers.list_workers(context(req))]}
