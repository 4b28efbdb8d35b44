"""Heat v1 routes Kiln does not serve: each answers 501 ``NotProvided`` naming the feature.

Without a route of their own these paths fell to Falcon's 404, or to the stack lookup,
so ``openstack stack snapshot create s`` said ``Stack not found: s`` and ``openstack
software config list`` got a bare 404. Each route takes Heat's methods, so another method
is a 405 with ``Allow`` as on any route. A feature moves from ``ROUTES`` to an endpoint
module of its own when Kiln serves it.
"""

from __future__ import annotations

from typing import NoReturn

import falcon

from engine.errors import NotProvided

SNAPSHOTS = "stack snapshots"
SOFTWARE_CONFIGS = "software configs"
SOFTWARE_DEPLOYMENTS = "software deployments"


class _Refused:
    def __init__(self, feature: str) -> None:
        self._feature = feature

    def _refuse(self, req: falcon.Request, resp: falcon.Response, **params: str) -> NoReturn:
        raise NotProvided(feature=self._feature)


class Collection(_Refused):
    on_get = on_post = _Refused._refuse


class Item(_Refused):
    on_get = on_delete = _Refused._refuse


class Replaceable(_Refused):
    on_get = on_put = on_delete = _Refused._refuse


class Readable(_Refused):
    on_get = _Refused._refuse


class Postable(_Refused):
    on_post = _Refused._refuse


#: (path under ``/v1/{tenant_id}``, the resource answering it), as Heat's v1 router has them.
ROUTES: tuple[tuple[str, _Refused], ...] = (
    ("/stacks/{stack_name}/{stack_id}/snapshots", Collection(SNAPSHOTS)),
    ("/stacks/{stack_name}/{stack_id}/snapshots/{snapshot_id}", Item(SNAPSHOTS)),
    ("/stacks/{stack_name}/{stack_id}/snapshots/{snapshot_id}/restore",
     Postable(SNAPSHOTS)),
    ("/software_configs", Collection(SOFTWARE_CONFIGS)),
    ("/software_configs/{config_id}", Item(SOFTWARE_CONFIGS)),
    ("/software_deployments", Collection(SOFTWARE_DEPLOYMENTS)),
    ("/software_deployments/metadata/{server_id}", Readable(SOFTWARE_DEPLOYMENTS)),
    ("/software_deployments/{deployment_id}", Replaceable(SOFTWARE_DEPLOYMENTS)),
)
