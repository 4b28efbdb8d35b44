"""Reading a resource's attributes from its stored state, for the API's resource views.

The plugin computes them from properties, physical id and private data, as in the worker,
on a runtime that refuses to write (``ReadOnlyRuntime``): a read must never change a
resource.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from engine.clock import Clock
from engine.db.models import Resource as ResourceRow
from engine.db.models import Stack
from engine.resources.read_only import ReadOnlyRuntime
from engine.resources.registry import ResourceTypeRegistry


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
