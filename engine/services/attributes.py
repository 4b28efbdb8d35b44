"""Reading a resource's attributes from its stored state, for the API's resource views.

The plugin computes them from properties, physical id and private data, as in the worker;
the runtime it gets here refuses to write, because a read must never change a resource.
The API also builds instances on it to hand them a signal (``handle_signal`` is pure).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from engine.clock import Clock
from engine.db.models import Resource as ResourceRow
from engine.db.models import Stack
from engine.resources.base import IssuedSignalToken, SignalledResource
from engine.resources.registry import ResourceTypeRegistry


class ReadOnlyRuntime:
    def __init__(self, stack: Stack, row: ResourceRow, clock: Clock) -> None:
        self.stack_id = stack.id
        self.stack_name = stack.name
        self.tenant_id = stack.tenant_id
        self.resource_key = f"{stack.id}/{row.name}/{row.id}"
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

    def find_signalled_resource(self, reference_id: str) -> SignalledResource | None:
        # NOTE: only the worker waits on signals; an attribute is answered from the
        # resource's own stored state (a wait condition keeps what it last read).
        raise RuntimeError("a resource tried to read another resource's signals while it "
                           "was being read")


def read_attributes(stack: Stack, row: ResourceRow, registry: ResourceTypeRegistry,
                    clock: Clock, extra: Iterable[str] = ()) -> dict[str, Any]:
    """Every schema attribute plus ``extra`` names; unknown or failing ones are null."""
    cls = registry.for_stored(row.type)
    names = list(cls.attributes_schema) if cls else []
    names += [name for name in extra if name not in names]
    if cls is None or row.properties is None:
        return dict.fromkeys(names)  # not created (or type gone): nothing to read yet
    instance = cls(row.name, row.properties, ReadOnlyRuntime(stack, row, clock),
                   physical_id=row.physical_id, data=dict(row.data or {}))
    if cls.allow_unknown_attributes:
        # A type without a fixed schema (a template resource: its template's outputs)
        # shows what it has; if that fails (plugin code), the schema's names still show.
        with contextlib.suppress(Exception):
            names += [name for name in instance.all_attributes() if name not in names]
    values: dict[str, Any] = {}
    for name in names:
        try:
            values[name] = instance.get_attribute(name)
        except Exception:  # noqa: BLE001 -- Heat shows an attribute that fails as null
            values[name] = None
    return values
