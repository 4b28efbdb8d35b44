"""The runtime a resource instance gets from the worker (``engine.resources.base.Runtime``):
its stack's names, the clock, resource services, signal tokens and nested stacks, each
database call in a short transaction of its own (handlers run outside the step's)."""

from __future__ import annotations

import functools
import secrets as secret_tokens
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.budget import MAX_NESTED_DEPTH
from engine.clock import Clock
from engine.db import resource_rows, signals
from engine.db.models import Stack
from engine.db.session import Database
from engine.resources.base import (
    SIGNAL_TOKEN_PARAM,
    IssuedSignalToken,
    SignalledResource,
    resource_key,
)
from engine.resources.registry import ResourceTypeRegistry
from engine.worker.nested import WorkerNestedStacks
from engine.worker.software_store import WorkerSoftwareConfigs

#: (stack id, resource name) -> where a lifecycle plugin placed it (``placement_of``).
Placements = Callable[[str, str], Mapping[str, Any] | None]

# NOTE: URL-safe base64 starts with "-" one time in 64, and an argparse tool given such a
# secret reads it as an option; a prefix never starts with "-". It also lets scanners and
# people tell a leaked signal token from a tenant token (``kiln_``,
# engine/services/tenants.py). Tokens issued before it still authenticate: only the hash
# of the whole secret is compared.
SIGNAL_TOKEN_PREFIX = "kilnsig_"


class StepRuntime:
    """The ``engine.resources.base.Runtime`` a resource instance gets from the worker."""

    def __init__(self, db: Database, clock: Clock, stack: Stack, row_id: int,
                 resource_name: str, generation: int = 0, replaced: bool = False, *,
                 registry: ResourceTypeRegistry, api_url: str,
                 placements: Placements | None = None) -> None:
        self._db = db
        self._clock = clock
        self._row_id = row_id
        self._generation = generation
        self._replaced = replaced
        self._registry = registry
        self._api_url = api_url
        self._resource_name = resource_name
        self._placements = placements
        self.stack_id = stack.id
        self.stack_name = stack.name
        self.tenant_id = stack.tenant_id
        self.resource_key = resource_key(stack.id, resource_name, row_id, generation)

    def now(self) -> float:
        return self._clock().timestamp()

    def service(self, name: str) -> Any:
        return self._registry.services.get(name)

    def placement(self) -> Mapping[str, Any] | None:
        if self._placements is None:
            return None
        return self._placements(self.stack_id, self._resource_name)

    @functools.cached_property
    def nested(self) -> WorkerNestedStacks:
        """Child stacks of this resource's stack (nested-stack resource types)."""
        return WorkerNestedStacks(self._db, self._clock, self._registry, self.stack_id,
                                  self._resource_name, MAX_NESTED_DEPTH)

    def record_physical_id(self, physical_id: str, data: Mapping[str, Any]) -> None:
        if not self._replaced:
            # The step runner writes the instance's physical id and data with the step's
            # next write (its token, or its close), lease-guarded, in the transaction that
            # ends the round of handler calls: before anything waits, and without a
            # transaction per resource.
            return
        with self._db.transaction() as session:  # the resource an update replaced
            resource_rows.record_replaced_physical_id(session, self._row_id, physical_id,
                                                      dict(data))

    def issue_signal_token(self) -> IssuedSignalToken:
        # A replaced resource's token is good until its cleanup ends
        # (``signals.live_generation``). As a tenant token: 256 random bits shown once,
        # only the sha256 stored.
        secret = SIGNAL_TOKEN_PREFIX + secret_tokens.token_urlsafe(32)
        with self._db.transaction() as session:
            token = signals.add_signal_token(session, self._row_id, self._generation, secret,
                                             self._clock())
            token_id = token.id
        tenant_url = f"{self._api_url}/v1/{urllib.parse.quote(self.tenant_id, safe='')}"
        path = "/".join(urllib.parse.quote(part, safe="") for part in (
            "stacks", self.stack_name, self.stack_id, "resources", self._resource_name,
            "signal"))
        url = f"{tenant_url}/{path}"
        signed = f"{url}?{urllib.parse.urlencode({SIGNAL_TOKEN_PARAM: secret})}"
        return IssuedSignalToken(token_id, secret, url, signed, tenant_url)

    def revoke_signal_tokens(self) -> None:
        with self._db.transaction() as session:
            signals.delete_signal_tokens(session, self._row_id, self._generation)

    def signals(self) -> Sequence[Mapping[str, Any]]:
        with self._db.read() as session:
            return tuple(signals.list_signals(session, self._row_id, self._generation))

    def signals_after(self, after: int | None) -> Sequence[tuple[int, Mapping[str, Any]]]:
        with self._db.read() as session:
            return tuple(signals.list_signals_after(session, self._row_id, self._generation,
                                                    after))

    def software_configs(self) -> WorkerSoftwareConfigs:
        return WorkerSoftwareConfigs(self._db, self._clock, self.tenant_id)

    def find_signalled_resource(self, reference_id: str) -> SignalledResource | None:
        with self._db.read() as session:
            row = signals.find_signalled_resource(session, self.stack_id, reference_id)
            if row is None:
                return None
            cls = self._registry.for_stored(row.type)
            if cls is None:
                return None  # a type uninstalled since: nothing Kiln can ask about it
            return SignalledResource(row.name, cls,
                                     tuple(signals.list_signals(session, row.id,
                                                                row.generation)))
