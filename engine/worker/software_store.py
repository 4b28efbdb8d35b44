"""``engine.resources.base.SoftwareConfigStore`` in the worker: a stack's tenant's
software configs and deployments for its resources (``Runtime.software_configs``), each
call a short transaction of its own, as every runtime call (handlers run outside the
step's). The rows and documents are ``engine.db.software_configs``'s."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.clock import Clock
from engine.db import software_configs as rows
from engine.db.session import Database
from engine.errors import SoftwareConfigNotFound


class WorkerSoftwareConfigs:
    def __init__(self, db: Database, clock: Clock, tenant_id: str) -> None:
        self._db = db
        self._clock = clock
        self._tenant_id = tenant_id

    def create_config(self, *, name: str | None, group: str | None, config: Any,
                      inputs: Sequence[Mapping[str, Any]],
                      outputs: Sequence[Mapping[str, Any]],
                      options: Mapping[str, Any] | None,
                      config_id: str | None = None) -> Mapping[str, Any]:
        with self._db.transaction() as session:
            if config_id is not None:
                found = rows.find_config(session, self._tenant_id, config_id)
                if found is not None:  # a resumed create made it already
                    return rows.config_document(found)
            body = {"inputs": [dict(i) for i in inputs],
                    "outputs": [dict(o) for o in outputs],
                    "options": dict(options) if options is not None else None,
                    "config": config}
            row = rows.add_config(session, self._tenant_id, config_id or str(uuid.uuid4()),
                                  name=name, group=group, body=body, now=self._clock())
            return rows.config_document(row)

    def get_config(self, config_id: str) -> Mapping[str, Any] | None:
        with self._db.read() as session:
            row = rows.find_config(session, self._tenant_id, config_id)
            return rows.config_document(row) if row is not None else None

    def delete_config(self, config_id: str) -> None:
        try:
            with self._db.transaction() as session:
                rows.delete_config(session, self._tenant_id, config_id)
        except SoftwareConfigNotFound:
            pass  # gone already: what was asked

    def create_deployment(self, deployment_id: str, *, config_id: str, server_id: str,
                          input_values: Mapping[str, Any] | None, action: str, status: str,
                          status_reason: str) -> Mapping[str, Any]:
        with self._db.transaction() as session:
            found = rows.find_deployment(session, self._tenant_id, deployment_id)
            if found is None:
                found = rows.add_deployment(
                    session, self._tenant_id, deployment_id, config_id=config_id,
                    server_id=server_id,
                    input_values=dict(input_values) if input_values is not None else None,
                    action=action, status=status, status_reason=status_reason,
                    now=self._clock())
            return rows.deployment_document(found)

    def get_deployment(self, deployment_id: str) -> Mapping[str, Any] | None:
        with self._db.read() as session:
            row = rows.find_deployment(session, self._tenant_id, deployment_id)
            return rows.deployment_document(row) if row is not None else None

    def update_deployment(self, deployment_id: str, changes: Mapping[str, Any]
                          ) -> Mapping[str, Any] | None:
        return self.change_deployment(deployment_id, lambda _: changes)

    def change_deployment(self, deployment_id: str,
                          change: Callable[[Mapping[str, Any]], Mapping[str, Any] | None]
                          ) -> Mapping[str, Any] | None:
        with self._db.transaction() as session:
            row = rows.find_locked_deployment(session, self._tenant_id, deployment_id)
            if row is None:
                return None
            changes = change(rows.deployment_document(row))
            if changes is not None:
                rows.update_deployment(session, row, dict(changes), self._clock())
            return rows.deployment_document(row)

    def delete_deployment(self, deployment_id: str) -> None:
        with self._db.transaction() as session:
            rows.delete_deployment(session, self._tenant_id, deployment_id)
