"""What a stack snapshot keeps: Heat's layout (``Stack.prepare_abandon``, its status
set to the snapshot's), from the stack row and its resource rows as the SNAPSHOT
operation left them. Hidden parameter values are kept as given, for the restore; the
API masks them (``engine.services.snapshots``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.db.models import Resource, Stack


def snapshot_data(stack: Stack, rows: Iterable[Resource], status: str) -> dict[str, Any]:
    template = stack.template if isinstance(stack.template, Mapping) else {}
    # HOT's resources or CFN's Resources: each one's metadata as the template gives it.
    written = template.get("resources") or template.get("Resources") or {}
    resources = {}
    for row in rows:
        entry = written.get(row.name) if isinstance(written, Mapping) else None
        metadata = (entry.get("metadata") or entry.get("Metadata")
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
