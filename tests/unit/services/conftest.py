"""The stack services as ``engine.bootstrap`` builds them, over one ``StoredIrs``, and a
record of the request bodies they check."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from engine.db.session import Database
from engine.ir.stored import StoredIrs
from engine.resources.registry import ResourceTypeRegistry
from engine.services import stack_requests
from engine.services.proposals import StackLimits
from engine.services.stack_dry_runs import StackDryRuns
from engine.services.stack_writes import StackWrites
from tests.unit.conftest import Clock


@pytest.fixture
def irs(registry: ResourceTypeRegistry) -> StoredIrs:
    return StoredIrs(registry.get, registry.constraint)


@pytest.fixture
def writes(db: Database, registry: ResourceTypeRegistry, clock: Clock,
           irs: StoredIrs) -> StackWrites:
    return StackWrites(db, registry, StackLimits(), clock, irs)


@pytest.fixture
def dry_runs(db: Database, registry: ResourceTypeRegistry, clock: Clock,
             irs: StoredIrs) -> StackDryRuns:
    return StackDryRuns(db, registry, StackLimits(), clock, irs)


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[Mapping[str, Any]]:
    """Every body ``check_body`` is given, the real check still made."""
    bodies: list[Mapping[str, Any]] = []
    real = stack_requests.check_body

    def check_body(body: Mapping[str, Any]) -> None:
        bodies.append(body)
        real(body)

    monkeypatch.setattr(stack_requests, "check_body", check_body)
    return bodies
