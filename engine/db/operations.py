"""Building operation rows: the one place an operation's fields are filled in."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping
from typing import Any

from engine.db.models import Operation
from engine.db.states import OP_PENDING


def new_operation(context: Mapping[str, Any], stack_id: str, action: str,
                  now: datetime.datetime, timeout_seconds: int,
                  payload: Any = None) -> Operation:
    """A PENDING operation. ``context`` is the requester's (tenant, role, request id):
    lifecycle plugins are called with it, as Heat calls them with the request's."""
    return Operation(id=str(uuid.uuid4()), stack_id=stack_id, action=action, state=OP_PENDING,
                     attempt=0, created_at=now, context=dict(context), lifecycle={},
                     payload=payload,
                     deadline_at=now + datetime.timedelta(seconds=timeout_seconds))
