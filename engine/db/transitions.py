"""The named state transitions of stacks, operations and resources: every change of a
row's action/status/state goes through one of these, so each is written (with its event)
in one place and read by its name.

Functions take the caller's session and change rows in the caller's transaction; they
never commit. User-facing wording (Heat's status reasons) is passed in by the caller,
which owns the words; this layer only stores them."""

from __future__ import annotations

import datetime

from sqlalchemy.orm import Session

from engine.db import queries
from engine.db.models import Resource, Stack
from engine.vocabulary import Action, Status


def set_resource_state(session: Session, stack: Stack, row: Resource, action: Action | str,
                       status: Status | str, reason: str, now: datetime.datetime) -> None:
    """Set the resource's action, status and reason and write its event, together."""
    row.action, row.status, row.status_reason, row.updated_at = action, status, reason, now
    queries.add_event(session, stack_id=stack.id, resource_name=row.name,
                      physical_resource_id=row.physical_id or "", resource_type=row.type,
                      action=action, status=status, reason=reason, now=now)
