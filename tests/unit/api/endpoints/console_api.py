"""The real app over two tenants, for the tests of the console's API additions
(specs/console.rst): a member's and an admin's token of each, requests made with either,
and a worker to run what they start."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import falcon.testing

from engine.bootstrap import Kiln
from engine.context import ADMIN_ROLE, MEMBER_ROLE
from engine.db.session import Database
from engine.lifecycle.registry import LifecycleRegistry, LoadedPlugin
from engine.resources.registry import ResourceTypeRegistry
from engine.services.proposals import StackLimits
from engine.worker.loop import WorkerLoop
from tests.stack_api import kiln_config
from tests.unit.conftest import Clock
from tests.unit.worker.running import worker


class ConsoleApi:
    def __init__(self, db: Database, registry: ResourceTypeRegistry, clock: Clock,
                 plugins: Sequence[LoadedPlugin] = ()) -> None:
        self.db, self.registry, self.clock = db, registry, clock
        self.plugins = LifecycleRegistry(plugins)
        self.kiln = Kiln(kiln_config(StackLimits()), db, clock=clock, registry=registry,
                         lifecycle=self.plugins)
        tenants = self.kiln.tenants
        self.a = tenants.create_tenant("a")
        self.b = tenants.create_tenant("b")
        self.tokens = {(tenant.id, role): tenants.create_token(tenant.id, role).secret
                       for tenant in (self.a, self.b) for role in (MEMBER_ROLE, ADMIN_ROLE)}
        self.client = falcon.testing.TestClient(self.kiln.wsgi_app())

    def call(self, method: str, path: str, *, tenant: str | None = None,
             role: str = MEMBER_ROLE, body: dict[str, Any] | None = None,
             token: str | None = None, params: dict[str, str] | None = None
             ) -> falcon.testing.Result:
        """``path`` under ``/v1/<tenant>`` (tenant A's unless told), with the token of
        ``role`` in that tenant, or ``token`` as given."""
        tenant = tenant or self.a.id
        secret = token if token is not None else self.tokens[(tenant, role)]
        return self.client.simulate_request(
            method, f"/v1/{tenant}{path}", json=body, params=params,
            headers={"X-Auth-Token": secret} if secret else {})

    def create(self, name: str, template: str, *, tenant: str | None = None,
               files: dict[str, str] | None = None) -> str:
        """A stack's path (``/stacks/<name>/<id>``), its create run to the end."""
        body: dict[str, Any] = {"stack_name": name, "template": template}
        if files:
            body["files"] = files
        created = self.call("POST", "/stacks", tenant=tenant, body=body)
        assert created.status_code == 201, created.text
        self.settle()
        return f"/stacks/{name}/{created.json['stack']['id']}"

    def worker(self) -> WorkerLoop:
        return worker(self.db, self.registry, self.clock, self.plugins, irs=self.kiln.irs)

    def settle(self, ticks: int = 20) -> None:
        """Run a worker, the clock moving a second a tick: a parent resource looks at
        its child stack once a second."""
        loop = self.worker()
        for _ in range(ticks):
            loop.run_once()
            self.clock.advance(1)
