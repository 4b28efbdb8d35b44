"""Heat's software config and deployment APIs (``/software_configs``,
``/software_deployments``): what a tenant asks of them, checked as Heat checks it, on the
rows of ``engine.db.software_configs``. ``specs/software-config.rst``.

Each call acts on the request's tenant only (the URL's, as every route): another tenant's
config or deployment reads as none, with Heat's 404. The resource types reach the same
rows from the worker (``engine/worker/software_store.py``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from engine.clock import Clock
from engine.context import RequestContext
from engine.db import software_configs as rows
from engine.db.session import Database
from engine.errors import BadRequest, OperatorViewForbidden, RequestLimitExceeded
from engine.schema import config_io_records

#: Heat's ``max_software_configs_per_tenant`` and ``max_software_deployments_per_tenant``
#: defaults. As in Heat every row of the tenant counts (a stack's too) and an admin is
#: never refused; unlike Heat, a stack's resources are not refused either (the stack
#: limits bound them).
MAX_CONFIGS_PER_TENANT = 4096
MAX_DEPLOYMENTS_PER_TENANT = 4096
#: The longest text a name, group, server id, action or status may be (their columns').
MAX_FIELD_CHARS = 255


class SoftwareConfigs:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    # --- configs ---------------------------------------------------------------------

    def list_configs(self, ctx: RequestContext, *, limit: int | None = None,
                     marker: str | None = None, global_tenant: bool = False
                     ) -> list[dict[str, Any]]:
        """Summaries, oldest first; an admin's show each config's ``project`` (and with
        ``global_tenant``, every tenant's configs), as Heat's."""
        if global_tenant and not ctx.is_admin:
            raise OperatorViewForbidden(what="the software configs")
        with self._db.read() as session:
            found = rows.list_configs(session, None if global_tenant else ctx.tenant_id,
                                      limit, marker)
            docs = []
            for row in found:
                doc = rows.config_document(row, detail=False)
                if ctx.is_admin:
                    doc["project"] = row.tenant_id
                docs.append(doc)
            return docs

    def show_config(self, ctx: RequestContext, config_id: str) -> dict[str, Any]:
        with self._db.read() as session:
            return rows.config_document(rows.get_config(session, ctx.tenant_id, config_id))

    def create_config(self, ctx: RequestContext, body: Mapping[str, Any]) -> dict[str, Any]:
        """Heat's fields (``name``, ``group``, ``config``, ``inputs``, ``outputs``,
        ``options``); inputs and outputs checked and typed as the config resources' are."""
        name = _text(body, "name")
        group = _text(body, "group")
        inputs = config_io_records(body.get("inputs"), True, "inputs")
        outputs = config_io_records(body.get("outputs"), False, "outputs")
        options = body.get("options")
        if options is not None and not isinstance(options, Mapping):
            raise BadRequest(reason="options must be a map")
        stored = {"inputs": inputs, "outputs": outputs, "options": options,
                  "config": body.get("config")}
        with self._db.transaction() as session:
            if not ctx.is_admin and rows.count_configs(session, ctx.tenant_id) \
                    >= MAX_CONFIGS_PER_TENANT:
                raise RequestLimitExceeded(
                    reason=f"You have reached the maximum software configs per tenant, "
                           f"{MAX_CONFIGS_PER_TENANT}. Please delete some configs.")
            row = rows.add_config(session, ctx.tenant_id, str(uuid.uuid4()), name=name,
                                  group=group, body=stored, now=self._clock())
            return rows.config_document(row)

    def delete_config(self, ctx: RequestContext, config_id: str) -> None:
        with self._db.transaction() as session:
            rows.delete_config(session, ctx.tenant_id, config_id)

    # --- deployments -----------------------------------------------------------------

    def list_deployments(self, ctx: RequestContext, server_id: str | None = None
                         ) -> list[dict[str, Any]]:
        with self._db.read() as session:
            return [rows.deployment_document(row)
                    for row in rows.list_deployments(session, ctx.tenant_id, server_id)]

    def show_deployment(self, ctx: RequestContext, deployment_id: str) -> dict[str, Any]:
        with self._db.read() as session:
            return rows.deployment_document(
                rows.get_deployment(session, ctx.tenant_id, deployment_id))

    def metadata(self, ctx: RequestContext, server_id: str) -> list[dict[str, Any]]:
        """The configs deployed to ``server_id``, in full, ordered by name: what a
        server's agent applies."""
        with self._db.read() as session:
            return rows.server_metadata(session, ctx.tenant_id, server_id)

    def create_deployment(self, ctx: RequestContext, body: Mapping[str, Any]
                          ) -> dict[str, Any]:
        """Heat's fields (``config_id``, ``server_id``, ``input_values``, ``action``,
        ``status``, ``status_reason``; ``stack_user_project_id`` is Keystone's and
        ignored)."""
        config_id = _text(body, "config_id")
        server_id = _text(body, "server_id")
        if not config_id:
            raise BadRequest(reason="config_id must be specified")
        if not server_id:
            raise BadRequest(reason="server_id must be specified")
        fields = _deployment_fields(body, ("input_values", "action", "status",
                                           "status_reason"))
        with self._db.transaction() as session:
            if not ctx.is_admin and rows.count_deployments(session, ctx.tenant_id) \
                    >= MAX_DEPLOYMENTS_PER_TENANT:
                raise RequestLimitExceeded(
                    reason=f"You have reached the maximum software deployments per tenant, "
                           f"{MAX_DEPLOYMENTS_PER_TENANT}. Please delete some deployments.")
            row = rows.add_deployment(
                session, ctx.tenant_id, str(uuid.uuid4()), config_id=config_id,
                server_id=server_id, input_values=fields.get("input_values"),
                action=fields.get("action"), status=fields.get("status"),
                status_reason=fields.get("status_reason"), now=self._clock())
            return rows.deployment_document(row)

    def update_deployment(self, ctx: RequestContext, deployment_id: str,
                          body: Mapping[str, Any]) -> dict[str, Any]:
        """Heat's update: each of ``config_id``, ``input_values``, ``output_values``,
        ``action``, ``status`` and ``status_reason`` that is given (and not empty, as
        Heat skips it) replaces the stored one. An agent reporting its result so
        (``heat-config-notify``) completes the deployment's resource: it waits on the
        status."""
        fields = _deployment_fields(body, rows.DEPLOYMENT_FIELDS)
        changes = {key: value for key, value in fields.items() if value}
        with self._db.transaction() as session:
            row = rows.lock_deployment(session, ctx.tenant_id, deployment_id)
            return rows.deployment_document(
                rows.update_deployment(session, row, changes, self._clock()))

    def delete_deployment(self, ctx: RequestContext, deployment_id: str) -> None:
        with self._db.transaction() as session:
            rows.lock_deployment(session, ctx.tenant_id, deployment_id)
            rows.delete_deployment(session, ctx.tenant_id, deployment_id)


def _text(body: Mapping[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRequest(reason=f"{key} must be a string")
    if len(value) > MAX_FIELD_CHARS:
        raise BadRequest(reason=f"{key} is longer than {MAX_FIELD_CHARS} characters")
    return value


def _deployment_fields(body: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The given deployment fields, each of the type its column holds."""
    fields: dict[str, Any] = {}
    for key in keys:
        if key in ("input_values", "output_values"):
            value = body.get(key)
            if value is not None and not isinstance(value, Mapping):
                raise BadRequest(reason=f"{key} must be a map")
            fields[key] = dict(value) if value is not None else None
        elif key == "status_reason":
            value = body.get(key)
            fields[key] = None if value is None else str(value)
        else:
            fields[key] = _text(body, key)
    return fields
