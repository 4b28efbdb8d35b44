"""The time Kiln reads: the services and the worker are handed a ``Clock`` (tests hand
them one they move by hand); ``utcnow`` is the real one."""

from __future__ import annotations

import datetime
from collections.abc import Callable

#: Now, timezone-aware in UTC.
Clock = Callable[[], datetime.datetime]


def utcnow() -> datetime.datetime:
    """Now, timezone-aware in UTC, as the database stores times."""
    return datetime.datetime.now(datetime.UTC)


def isotime(value: datetime.datetime | None) -> str | None:
    """A time as Heat's API shows one (its ``isotime``): UTC, to the second, with a
    ``Z``; None stays None."""
    if value is None:
        return None
    return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
