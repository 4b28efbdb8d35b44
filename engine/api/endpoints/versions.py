"""Version discovery and build information."""

from __future__ import annotations

import falcon

BUILD_VERSION = "0.1.0"


class Versions:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.status = falcon.HTTP_300
        resp.media = {"versions": [{"id": "v1.0", "status": "CURRENT",
                                    "links": [{"rel": "self", "href": f"{req.prefix}/v1/"}]}]}


class BuildInfo:
    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        resp.media = {"api": {"revision": BUILD_VERSION}, "engine": {"revision": BUILD_VERSION}}
