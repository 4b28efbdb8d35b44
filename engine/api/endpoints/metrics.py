"""``GET /metrics``: Prometheus metrics in the text exposition format
(specs/health-and-metrics.rst, Metrics)."""

from __future__ import annotations

import falcon

from engine import metrics


class Metrics:
    """The process's metrics, or with ``multiprocess_dir`` (kiln-api under gunicorn)
    those of every worker process. No token is needed, as for ``/healthcheck``: no label
    holds a tenant's data, and a Prometheus server has no Kiln token."""

    def __init__(self, multiprocess_dir: str | None = None) -> None:
        self._multiprocess_dir = multiprocess_dir

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.data = metrics.exposition(self._multiprocess_dir)
        resp.content_type = metrics.CONTENT_TYPE
