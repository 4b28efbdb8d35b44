"""Building the frozen views lifecycle plugins receive, for the plugins' unit tests."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from engine.clock import Clock
from engine.lifecycle.view import ResourceChange, ResourceView, StackView, freeze
from engine.vocabulary import Change

STACK_ID = "5f0e9a1c-0000-4000-8000-000000000001"
#: A Wednesday, at noon UTC.
NOON = datetime.datetime(2025, 6, 4, 12, 0, tzinfo=datetime.UTC)


def resource(name: str, type_name: str, /, metadata: Mapping[str, Any] | None = None,
             **properties: Any) -> ResourceView:
    return ResourceView(name=name, type=type_name, properties=freeze(properties),
                        metadata=freeze(metadata or {}), depends_on=())


def stack(*resources: ResourceView, tags: tuple[str, ...] = (), action: str = "CREATE",
          dry_run: bool = False, changes: Mapping[str, Change] | None = None,
          nested_depth: int = 0) -> StackView:
    """A stack holding ``resources``, with ``changes`` as its plan (no property
    differences: the rules read only the kind of change); None: no plan was made. A
    ``nested_depth`` above 0 makes it a child of a nested tree."""
    return StackView(
        id=STACK_ID, name="teststack", tenant_id="tenant-1",
        action=action, status=f"{action}_IN_PROGRESS", status_reason="",
        template=freeze({}), parameters=freeze({}), environment=freeze({}),
        resources=freeze({r.name: r for r in resources}), tags=tags, dry_run=dry_run,
        changes=freeze({name: ResourceChange(action=change, properties=freeze({}))
                        for name, change in (changes or {}).items()}),
        changes_known=changes is not None, nested_depth=nested_depth,
        owner_id="5f0e9a1c-0000-4000-8000-0000000000ff" if nested_depth else None,
    )


def fixed_clock(now: datetime.datetime = NOON) -> Clock:
    """A clock for ``PluginServices`` that always reads ``now``."""
    return lambda: now
