"""Version discovery and build information."""

from __future__ import annotations

import importlib.metadata

import falcon

DISTRIBUTION = "kiln"
#: Heat's default ``[revision] heat_revision``, for a Kiln run from a tree nobody installed.
UNKNOWN_REVISION = "unknown"


def package_version(distribution: str = DISTRIBUTION) -> str:
    """The installed version of Kiln: its build revision."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return UNKNOWN_REVISION


class Versions:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.status = falcon.HTTP_300
        resp.media = {"versions": [{"id": "v1.0", "status": "CURRENT",
                                    "links": [{"rel": "self", "href": f"{req.prefix}/v1/"}]}]}


class BuildInfo:
    """``GET /build_info``: Heat's shape. The API and the engine are one package in Kiln,
    so both report its version (Heat asks its engine over RPC)."""

    def __init__(self, revision: str) -> None:
        self._revision = revision

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        resp.media = {"api": {"revision": self._revision},
                      "engine": {"revision": self._revision}}
