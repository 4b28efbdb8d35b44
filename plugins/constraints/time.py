"""Custom constraints on times: ``iso_8601`` and ``timezone``."""

from __future__ import annotations

import datetime
import zoneinfo
from typing import Any

from engine.schema import CustomCheck


class ISO8601(CustomCheck):
    """A date and time in ISO 8601 (``2026-11-22T15:04:05Z``)."""

    def check(self, value: Any) -> str | None:
        try:
            datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return self.refused(value)
        return None


class Timezone(CustomCheck):
    """An IANA time zone name (``Europe/Paris``); empty is allowed."""

    def check(self, value: Any) -> str | None:
        if not value:
            return None
        try:
            zoneinfo.ZoneInfo(str(value))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
            return self.refused(value, f"Invalid timezone: {exc}")
        return None
