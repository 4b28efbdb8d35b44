"""A stack in Heat's abandon layout (``Stack.prepare_abandon``, each resource's
``Resource.prepare_abandon``), and the one way it is shown.

The layout is what abandon and export answer and what a snapshot keeps (Heat's snapshot
is ``prepare_abandon`` with the snapshot's status). A snapshot row keeps it as built, for
the restore; every view of it, and abandon and export, go through :func:`shown`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from engine.errors import KilnError
from engine.resources.read_only import StackFacts
from engine.resources.registry import ResourceTypeRegistry
from engine.template.parameters import MASK, redact
from engine.template.stored_parameters import (
    masked_environment,
    masked_template,
    stored_hidden_values,
)


class _StackFacts(StackFacts, Protocol):
    @property
    def action(self) -> str: ...
    @property
    def template(self) -> Any: ...
    @property
    def parameters(self) -> Any: ...
    @property
    def environment(self) -> Any: ...
    @property
    def files(self) -> Any: ...
    @property
    def tags(self) -> Any: ...


class _RowFacts(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def action(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def physical_id(self) -> str | None: ...
    @property
    def data(self) -> Any: ...


def layout(stack: _StackFacts, rows: Iterable[_RowFacts], status: str) -> dict[str, Any]:
    """The stack and its resource rows in Heat's layout, ``status`` the stack's (a
    snapshot's: its own). Nothing masked: see :func:`shown`."""
    template = stack.template if isinstance(stack.template, Mapping) else {}
    # HOT's resources or CFN's Resources: each one's metadata as the template gives it.
    written = template.get("resources") or template.get("Resources")
    written = written if isinstance(written, Mapping) else {}
    resources = {}
    for row in rows:
        entry = written.get(row.name)
        metadata = ((entry.get("metadata") or entry.get("Metadata"))
                    if isinstance(entry, Mapping) else None)
        resources[row.name] = {
            "name": row.name, "resource_id": row.physical_id, "type": row.type,
            "action": row.action, "status": row.status, "metadata": metadata or {},
            "resource_data": dict(row.data or {})}
    return {"name": stack.name, "id": stack.id, "action": stack.action, "status": status,
            "template": template,
            "environment": {**(stack.environment or {}),
                            "parameters": dict(stack.parameters or {})},
            "files": dict(stack.files or {}), "project_id": stack.tenant_id,
            "stack_user_project_id": stack.tenant_id, "tags": list(stack.tags or []),
            "resources": resources}


def shown(data: Mapping[str, Any], registry: ResourceTypeRegistry) -> dict[str, Any]:
    """``data`` (a :func:`layout`) as every answer shows it. Masked, wherever they appear:
    the hidden parameters' values (given as parameters, as parameter_defaults or as the
    template's default: the last by name, a default a given value overrides too), and the
    resource data entries each type declares secret (``Resource.secret_data``; none for a
    type uninstalled since). An adopt must give the hidden values again
    (``engine.services.adopt``); the rows, and a snapshot's row, keep them all."""
    template = data.get("template")
    environment = data.get("environment")
    environment = dict(environment) if isinstance(environment, Mapping) else {}
    parameters = environment.get("parameters")
    secrets = list(stored_hidden_values(
        template, parameters if isinstance(parameters, Mapping) else {}, environment))
    resources = data.get("resources")
    shown_resources: dict[str, Any] = {}
    for name, entry in (resources.items() if isinstance(resources, Mapping) else ()):
        secret_keys = _secret_data(registry, entry)
        if not secret_keys:
            shown_resources[name] = entry
            continue
        kept = entry.get("resource_data")
        kept = kept if isinstance(kept, Mapping) else {}
        secrets.extend(value for key, value in kept.items()
                       if key in secret_keys and isinstance(value, str) and value)
        shown_resources[name] = {**entry, "resource_data": {
            key: MASK if key in secret_keys else value for key, value in kept.items()}}
    masked = {**data, "template": masked_template(template),
              "environment": masked_environment(template, environment)}
    if isinstance(resources, Mapping):
        masked["resources"] = shown_resources
    redacted: dict[str, Any] = redact(masked, tuple(secrets))
    return redacted


def _secret_data(registry: ResourceTypeRegistry, entry: Any) -> frozenset[str]:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("type"), str):
        return frozenset()
    try:
        return registry.get(entry["type"]).secret_data
    except KilnError:
        return frozenset()  # uninstalled since: what it kept cannot be told apart
