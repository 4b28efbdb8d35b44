"""Software configs and deployments: the rows, each a tenant's own, and their documents.

The one owner of both tables. The API's service (``engine/services/software_configs.py``)
and the worker's store (``engine/worker/software_store.py``, what resource types reach
through ``Runtime.software_configs``) both read and write them here, and both hand out
the documents built here, with Heat's keys (``heat/engine/api.py``'s
``format_software_config`` and ``format_software_deployment``). Every query names the
tenant: a tenant never reads another's rows, and an id of another tenant's reads as none.
"""

from __future__ import annotations

import datetime
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from engine.clock import isotime
from engine.db.models import SoftwareConfig, SoftwareDeployment
from engine.db.paging import keyset_after
from engine.errors import (
    Invalid,
    InvalidRestrictedAction,
    SoftwareConfigNotFound,
    SoftwareDeploymentNotFound,
)

Now = datetime.datetime

#: The fields of a deployment an update may change (Heat's ``update_software_deployment``).
DEPLOYMENT_FIELDS = ("config_id", "input_values", "output_values", "action", "status",
                     "status_reason")


# --- configs -----------------------------------------------------------------------------


def add_config(session: Session, tenant_id: str, config_id: str, *, name: str | None,
               group: str | None, body: dict[str, Any], now: Now) -> SoftwareConfig:
    """``body``: Heat's stored form, ``{"inputs", "outputs", "options", "config"}``."""
    row = SoftwareConfig(id=config_id, tenant_id=tenant_id, name=name, group=group,
                         config=body, created_at=now)
    session.add(row)
    session.flush()
    return row


def find_config(session: Session, tenant_id: str, config_id: str) -> SoftwareConfig | None:
    row = session.get(SoftwareConfig, config_id)
    return row if row is not None and row.tenant_id == tenant_id else None


def get_config(session: Session, tenant_id: str, config_id: str) -> SoftwareConfig:
    row = find_config(session, tenant_id, config_id)
    if row is None:
        raise SoftwareConfigNotFound(id=config_id)
    return row


def _lock_config(session: Session, tenant_id: str, config_id: str) -> SoftwareConfig | None:
    """The tenant's config, locked until the transaction ends (PostgreSQL; SQLite's
    writers are serial already): a delete of it and a deployment naming it come one after
    the other, so the delete's "no deployment names it" stays true until it commits."""
    return session.scalars(select(SoftwareConfig)
                           .where(SoftwareConfig.id == config_id,
                                  SoftwareConfig.tenant_id == tenant_id)
                           .with_for_update()
                           .execution_options(populate_existing=True)).first()


def _require_config(session: Session, tenant_id: str, config_id: str) -> None:
    """Lock the config a deployment is to name, or Heat's 400 (``exception.Invalid``:
    "Data supplied was not valid: Config with id <id> not found")."""
    if _lock_config(session, tenant_id, config_id) is None:
        raise Invalid(reason=f"Data supplied was not valid: Config with id {config_id} "
                             "not found")


def list_configs(session: Session, tenant_id: str | None, limit: int | None,
                 marker: str | None) -> list[SoftwareConfig]:
    """The tenant's (every tenant's for None), oldest first, as Heat pages them (by
    creation time); after ``marker``'s row when there is one with that id among them (an
    unknown marker is ignored, as in Heat)."""
    query = select(SoftwareConfig)
    after = session.get(SoftwareConfig, marker) if marker else None
    if tenant_id is not None:
        query = query.where(SoftwareConfig.tenant_id == tenant_id)
        after = after if after is not None and after.tenant_id == tenant_id else None
    if after is not None:
        query = query.where(keyset_after((SoftwareConfig.created_at, SoftwareConfig.id),
                                         (after.created_at, after.id), descending=False))
    query = query.order_by(SoftwareConfig.created_at, SoftwareConfig.id)
    if limit is not None:
        query = query.limit(limit)
    return list(session.scalars(query))


def count_configs(session: Session, tenant_id: str) -> int:
    """Every config of the tenant, a stack's and the API's alike (Heat's
    ``software_config_count_all``)."""
    return int(session.scalar(select(func.count()).select_from(SoftwareConfig)
                              .where(SoftwareConfig.tenant_id == tenant_id)) or 0)


def delete_config(session: Session, tenant_id: str, config_id: str) -> None:
    """Heat's refusals: no such config (404), one a deployment names (409). The row is
    locked first and deleted by a statement: of two deletes at once, the second finds
    nothing (404), never a stale row."""
    if _lock_config(session, tenant_id, config_id) is None:
        raise SoftwareConfigNotFound(id=config_id)
    used = session.scalar(select(SoftwareDeployment.id)
                          .where(SoftwareDeployment.config_id == config_id).limit(1))
    if used is not None:
        raise InvalidRestrictedAction(id=config_id)
    deleted = session.execute(delete(SoftwareConfig).where(
        SoftwareConfig.id == config_id, SoftwareConfig.tenant_id == tenant_id))
    if getattr(deleted, "rowcount", 0) == 0:
        raise SoftwareConfigNotFound(id=config_id)


def config_document(row: SoftwareConfig, *, detail: bool = True) -> dict[str, Any]:
    """Heat's ``format_software_config``: the summary a list shows, or every field."""
    doc: dict[str, Any] = {"id": row.id, "name": row.name, "group": row.group,
                           "creation_time": isotime(row.created_at)}
    if detail:
        body = row.config or {}
        for key in ("config", "inputs", "outputs", "options"):
            doc[key] = body.get(key)
    return doc


# --- deployments -------------------------------------------------------------------------


def add_deployment(session: Session, tenant_id: str, deployment_id: str, *, config_id: str,
                   server_id: str, input_values: Any, action: str | None,
                   status: str | None, status_reason: str | None,
                   now: Now) -> SoftwareDeployment:
    """A deployment of one of the tenant's configs (locked meanwhile); another id is
    Heat's 400 (:func:`_require_config`)."""
    _require_config(session, tenant_id, config_id)
    row = SoftwareDeployment(id=deployment_id, tenant_id=tenant_id, config_id=config_id,
                             server_id=server_id, input_values=input_values,
                             output_values=None, action=action, status=status,
                             status_reason=status_reason, created_at=now, updated_at=None)
    session.add(row)
    session.flush()
    return row


def find_deployment(session: Session, tenant_id: str, deployment_id: str
                    ) -> SoftwareDeployment | None:
    row = session.get(SoftwareDeployment, deployment_id)
    return row if row is not None and row.tenant_id == tenant_id else None


def get_deployment(session: Session, tenant_id: str, deployment_id: str
                   ) -> SoftwareDeployment:
    row = find_deployment(session, tenant_id, deployment_id)
    if row is None:
        raise SoftwareDeploymentNotFound(id=deployment_id)
    return row


def find_locked_deployment(session: Session, tenant_id: str, deployment_id: str
                           ) -> SoftwareDeployment | None:
    """The deployment, locked until the transaction ends (PostgreSQL; SQLite's writers
    are serial already): an agent's update and the worker's never interleave."""
    return session.scalars(select(SoftwareDeployment)
                           .where(SoftwareDeployment.id == deployment_id,
                                  SoftwareDeployment.tenant_id == tenant_id)
                           .with_for_update()
                           .execution_options(populate_existing=True)).first()


def lock_deployment(session: Session, tenant_id: str, deployment_id: str
                    ) -> SoftwareDeployment:
    """:func:`find_locked_deployment`, or Heat's 404."""
    row = find_locked_deployment(session, tenant_id, deployment_id)
    if row is None:
        raise SoftwareDeploymentNotFound(id=deployment_id)
    return row


def list_deployments(session: Session, tenant_id: str, server_id: str | None
                     ) -> list[SoftwareDeployment]:
    """Oldest first, as Heat lists them; only the server's when ``server_id`` is given."""
    query = select(SoftwareDeployment).where(SoftwareDeployment.tenant_id == tenant_id)
    if server_id:
        query = query.where(SoftwareDeployment.server_id == server_id)
    return list(session.scalars(query.order_by(SoftwareDeployment.created_at,
                                               SoftwareDeployment.id)))


def count_deployments(session: Session, tenant_id: str) -> int:
    return int(session.scalar(select(func.count()).select_from(SoftwareDeployment)
                              .where(SoftwareDeployment.tenant_id == tenant_id)) or 0)


def update_deployment(session: Session, row: SoftwareDeployment, changes: dict[str, Any],
                      now: Now) -> SoftwareDeployment:
    """Set the given fields (:data:`DEPLOYMENT_FIELDS`) and ``updated_at``; a new config
    must be one of the tenant's (locked meanwhile; Heat's 400 otherwise)."""
    config_id = changes.get("config_id")
    if config_id is not None:
        _require_config(session, row.tenant_id, config_id)
    for key in DEPLOYMENT_FIELDS:
        if key in changes:
            setattr(row, key, changes[key])
    row.updated_at = now
    session.flush()
    return row


def delete_deployment(session: Session, tenant_id: str, deployment_id: str) -> None:
    session.execute(delete(SoftwareDeployment).where(
        SoftwareDeployment.id == deployment_id, SoftwareDeployment.tenant_id == tenant_id))


def server_metadata(session: Session, tenant_id: str, server_id: str) -> list[dict[str, Any]]:
    """Heat's deployment metadata of a server: the config of each of its deployments,
    in full, ordered by config name (a server's tool applies them in that order)."""
    rows = session.execute(
        select(SoftwareConfig)
        .join(SoftwareDeployment, SoftwareDeployment.config_id == SoftwareConfig.id)
        .where(SoftwareDeployment.tenant_id == tenant_id,
               SoftwareDeployment.server_id == server_id)
        .order_by(SoftwareDeployment.created_at, SoftwareDeployment.id)).scalars().all()
    # A stable sort by name, as Heat's sorted(); a config without a name sorts first.
    return [config_document(row) for row in sorted(rows, key=lambda r: r.name or "")]


def deployment_document(row: SoftwareDeployment) -> dict[str, Any]:
    """Heat's ``format_software_deployment``: ``updated_time`` only once updated."""
    doc: dict[str, Any] = {
        "id": row.id, "server_id": row.server_id, "input_values": row.input_values,
        "output_values": row.output_values, "action": row.action, "status": row.status,
        "status_reason": row.status_reason, "config_id": row.config_id,
        "creation_time": isotime(row.created_at)}
    if row.updated_at is not None:
        doc["updated_time"] = isotime(row.updated_at)
    return doc
