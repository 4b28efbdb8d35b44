"""A runtime that refuses every write, for resources built from their stored state only
to be read: their attributes for the API, a signal's ``handle_signal`` (pure), and an
update's forecast before it runs. A read must never change a resource or call a backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from engine.clock import Clock
from engine.resources.base import (
    IssuedSignalToken,
    SignalledResource,
    SoftwareConfigStore,
    resource_key,
)


class StackFacts(Protocol):
    """The stack a resource read belongs to (a ``Stack`` row, a listed one)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def tenant_id(self) -> str: ...


class RowFacts(Protocol):
    """The resource row's identity (a ``Resource`` row satisfies it)."""

    @property
    def id(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def generation(self) -> int: ...


class ReadOnlyRuntime:
    def __init__(self, stack: StackFacts, row: RowFacts, clock: Clock) -> None:
        self.stack_id = stack.id
        self.stack_name = stack.name
        self.tenant_id = stack.tenant_id
        self.resource_key = resource_key(stack.id, row.name, row.id, row.generation)
        self._clock = clock

    def now(self) -> float:
        return self._clock().timestamp()

    def record_physical_id(self, physical_id: str, data: Mapping[str, Any]) -> None:
        raise RuntimeError("a resource tried to change its state while its attributes "
                           "were being read")

    def placement(self) -> Mapping[str, Any] | None:
        raise RuntimeError("a resource asked for its placement while its attributes were "
                           "being read")

    def service(self, name: str) -> Any:
        # Attributes come from stored state: a read never calls the backend.
        raise RuntimeError(f"a resource asked for the {name!r} service while its "
                           "attributes were being read")

    def issue_signal_token(self) -> IssuedSignalToken:
        raise RuntimeError("a resource tried to issue a signal token while it was being "
                           "read")

    def revoke_signal_tokens(self) -> None:
        raise RuntimeError("a resource tried to revoke its signal tokens while it was being "
                           "read")

    def signals(self) -> Sequence[Mapping[str, Any]]:
        # NOTE: an attribute is answered from the resource's own stored state.
        raise RuntimeError("a resource tried to read its signals while it was being read")

    def signals_after(self, after: int | None) -> Sequence[tuple[int, Mapping[str, Any]]]:
        raise RuntimeError("a resource tried to read its signals while it was being read")

    def software_configs(self) -> SoftwareConfigStore:
        raise RuntimeError("a resource tried to reach the software configs while it was "
                           "being read")

    def find_signalled_resource(self, reference_id: str) -> SignalledResource | None:
        # NOTE: only the worker waits on signals; an attribute is answered from the
        # resource's own stored state (a wait condition keeps what it last read).
        raise RuntimeError("a resource tried to read another resource's signals while it "
                           "was being read")
