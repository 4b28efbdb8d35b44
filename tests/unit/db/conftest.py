"""What the engine.db tests share: rows written straight through the ORM on the migrated
SQLite file of tests/unit/conftest.py's ``db``, so a test of one query module depends on
no other module's writes."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from sqlalchemy.orm import Session

from engine.db.models import Operation, Resource, Stack, Tenant
from engine.db.session import Database
from engine.vocabulary import Action, OperationState, Status

NOW = datetime.datetime(2026, 11, 22, 12, 0, tzinfo=datetime.UTC)
TEMPLATE = {"heat_template_version": "2018-08-31", "resources": {}}


def later(seconds: float = 0) -> datetime.datetime:
    """``NOW`` plus ``seconds``."""
    return NOW + datetime.timedelta(seconds=seconds)


def add_tenant(session: Session, name: str | None = None) -> Tenant:
    tenant = Tenant(id=str(uuid.uuid4()), name=name or f"tenant-{uuid.uuid4().hex[:6]}",
                    created_at=NOW)
    session.add(tenant)
    session.flush()
    return tenant


def add_stack(session: Session, tenant_id: str, name: str | None = None, **columns: Any
              ) -> Stack:
    """A stack row (a name of its own unless given), CREATE_COMPLETE unless ``columns``
    say otherwise."""
    values: dict[str, Any] = {
        "id": str(uuid.uuid4()), "tenant_id": tenant_id,
        "name": name or f"s-{uuid.uuid4().hex[:8]}",
        "action": Action.CREATE, "status": Status.COMPLETE, "template": TEMPLATE,
        "parameters": {}, "environment": {}, "files": {}, "tags": [],
        "created_at": NOW}
    stack = Stack(**{**values, **columns})
    session.add(stack)
    session.flush()
    return stack


def add_operation(session: Session, stack: Stack, action: str = Action.CREATE,
                  state: str = OperationState.PENDING, **columns: Any) -> Operation:
    values: dict[str, Any] = {
        "id": str(uuid.uuid4()), "stack_id": stack.id, "action": action, "state": state,
        "created_at": NOW, "deadline_at": later(3600)}
    operation = Operation(**{**values, **columns})
    session.add(operation)
    session.flush()
    return operation


def add_resource(session: Session, stack: Stack, name: str, **columns: Any) -> Resource:
    """A resource row, CREATE_COMPLETE unless ``columns`` say otherwise."""
    values: dict[str, Any] = {
        "stack_id": stack.id, "name": name, "type": "OS::Heat::None",
        "action": Action.CREATE, "status": Status.COMPLETE, "data": {}, "requires": [],
        "created_at": NOW}
    row = Resource(**{**values, **columns})
    session.add(row)
    session.flush()
    return row


@pytest.fixture
def tenant_id(db: Database) -> str:
    with db.transaction() as session:
        return add_tenant(session, "t").id
