"""Time windows: when a rule with ``during`` applies (a change freeze, office hours).

Two kinds, both in a named time zone (UTC by default):

* :class:`Weekly` -- on some days of the week (every day when none are given), from one
  time of day to another. ``to`` earlier than ``from`` crosses midnight: the window
  opens on each listed day and closes the next day.
* :class:`Period` -- once, from one date (and time) to another.

The end is inclusive, as people write it: ``to: "23:59"`` covers the whole of 23:59, and
``end: 2025-01-03`` the whole of that day. Pure: ``now`` is always handed in (the
plugins read it from the clock Kiln gives them), never read here.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import zoneinfo

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")  # datetime.weekday() order
EVERY_DAY = tuple(range(7))
MINUTES_PER_DAY = 24 * 60
UTC_NAME = "UTC"


@dataclasses.dataclass(frozen=True)
class Weekly:
    """Each of ``days`` (0 is Monday) from minute ``start`` to minute ``end`` of the day,
    both included; ``end < start`` ends on the next day."""

    days: tuple[int, ...] = EVERY_DAY
    start: int = 0
    end: int = MINUTES_PER_DAY - 1
    timezone: str = UTC_NAME

    def holds(self, now: datetime.datetime) -> bool:
        local = now.astimezone(zone(self.timezone))
        minute = local.hour * 60 + local.minute
        day = local.weekday()
        if self.start <= self.end:
            return day in self.days and self.start <= minute <= self.end
        # Across midnight: the evening of a listed day, or the morning after one.
        return ((day in self.days and minute >= self.start)
                or ((day - 1) % 7 in self.days and minute <= self.end))

    def __str__(self) -> str:
        days = "daily" if self.days == EVERY_DAY else ", ".join(WEEKDAYS[d] for d in self.days)
        return f"{days} {_clock(self.start)}-{_clock(self.end)} {self.timezone}"


@dataclasses.dataclass(frozen=True)
class Period:
    """From ``start`` (included) to ``end`` (excluded), both timezone-aware; ``end`` is
    the instant after the last minute or day the operator wrote."""

    start: datetime.datetime
    end: datetime.datetime
    timezone: str = UTC_NAME

    def holds(self, now: datetime.datetime) -> bool:
        return self.start <= now < self.end

    def __str__(self) -> str:
        return f"{_moment(self.start)} to {_moment(self.end, last=True)} {self.timezone}"


Window = Weekly | Period


def open_window(windows: tuple[Window, ...], now: datetime.datetime) -> Window | None:
    """The first of ``windows`` that holds ``now`` (timezone-aware), or None."""
    return next((window for window in windows if window.holds(now)), None)


@functools.cache
def zone(name: str) -> datetime.tzinfo:
    """The time zone of an IANA name; raises ``zoneinfo.ZoneInfoNotFoundError`` or
    ``ValueError`` for an unknown one. UTC needs no time-zone database."""
    if name == UTC_NAME:
        return datetime.UTC
    return zoneinfo.ZoneInfo(name)


def _clock(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def _moment(instant: datetime.datetime, last: bool = False) -> str:
    """``instant`` as the operator wrote it: a date when it is a midnight, else a date and
    time. With ``last``, ``instant`` is an exclusive end: the day or minute before it."""
    if (instant.hour, instant.minute) == (0, 0):
        day = instant.date() - datetime.timedelta(days=1) if last else instant.date()
        return day.isoformat()
    if last:
        instant -= datetime.timedelta(minutes=1)
    return instant.strftime("%Y-%m-%d %H:%M")
