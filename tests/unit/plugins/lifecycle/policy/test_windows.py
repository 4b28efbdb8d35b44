"""Time windows of the policy's rules: weekly windows in a time zone, across midnight,
inclusive ends, and one-off periods."""

from __future__ import annotations

import datetime

from plugins.lifecycle.policy.windows import Period, Weekly, open_window, zone

UTC = datetime.UTC
PARIS = zone("Europe/Paris")
FRI, SAT = 4, 5


def utc(year: int, month: int, day: int, hour: int, minute: int,
        second: int = 0) -> datetime.datetime:
    return datetime.datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def test_a_weekly_window_is_read_in_its_time_zone_with_an_inclusive_end() -> None:
    # Friday and Saturday evenings in Paris, summer time (UTC+2).
    window = Weekly(days=(FRI, SAT), start=16 * 60, end=23 * 60 + 59, timezone="Europe/Paris")

    assert window.holds(utc(2025, 6, 6, 14, 0))  # Fri 16:00 in Paris
    assert not window.holds(utc(2025, 6, 6, 13, 59, 59))
    assert window.holds(utc(2025, 6, 7, 21, 59, 59))  # Sat 23:59:59: the whole last minute
    assert not window.holds(utc(2025, 6, 7, 22, 0))  # Sun 00:00 in Paris
    assert not window.holds(utc(2025, 6, 5, 15, 0))  # Thursday
    assert str(window) == "Fri, Sat 16:00-23:59 Europe/Paris"


def test_a_window_ending_before_it_starts_crosses_midnight() -> None:
    window = Weekly(days=(FRI,), start=22 * 60, end=5 * 60 + 59)

    assert window.holds(utc(2025, 6, 6, 23, 0))  # Friday night
    assert window.holds(utc(2025, 6, 7, 5, 59))  # Saturday morning, the window's last minute
    assert not window.holds(utc(2025, 6, 7, 6, 0))
    assert not window.holds(utc(2025, 6, 6, 21, 59))
    assert not window.holds(utc(2025, 6, 5, 23, 0))  # Thursday night is not listed
    assert not window.holds(utc(2025, 6, 7, 23, 0))  # nor Saturday night
    assert not window.holds(utc(2025, 6, 6, 5, 0))  # Friday morning: Thursday's night
    assert str(window) == "Fri 22:00-05:59 UTC"


def test_a_window_without_days_or_times_covers_them_all() -> None:
    assert Weekly().holds(utc(2025, 6, 4, 0, 0))
    assert Weekly(start=9 * 60, end=17 * 60 + 59).holds(utc(2025, 6, 8, 17, 59))
    assert str(Weekly(start=9 * 60, end=17 * 60 + 59)) == "daily 09:00-17:59 UTC"


def test_a_period_holds_from_its_start_to_its_exclusive_end() -> None:
    # Written as 2024-12-20 to 2025-01-03 in Paris (winter time, UTC+1).
    window = Period(start=datetime.datetime(2024, 12, 20, tzinfo=PARIS),
                    end=datetime.datetime(2025, 1, 4, tzinfo=PARIS), timezone="Europe/Paris")

    assert not window.holds(utc(2024, 12, 19, 22, 59))
    assert window.holds(utc(2024, 12, 19, 23, 0))
    assert window.holds(utc(2025, 1, 3, 22, 59, 59))
    assert not window.holds(utc(2025, 1, 3, 23, 0))
    assert str(window) == "2024-12-20 to 2025-01-03 Europe/Paris"


def test_a_period_with_times_shows_its_last_minute() -> None:
    window = Period(start=utc(2025, 3, 1, 18, 0), end=utc(2025, 3, 2, 8, 1))

    assert window.holds(utc(2025, 3, 2, 8, 0, 59))
    assert not window.holds(utc(2025, 3, 2, 8, 1))
    assert str(window) == "2025-03-01 18:00 to 2025-03-02 08:00 UTC"


def test_open_window_gives_the_first_that_holds() -> None:
    morning, evening = Weekly(start=0, end=11 * 60 + 59), Weekly(start=12 * 60, end=23 * 60 + 59)

    assert open_window((morning, evening), utc(2025, 6, 4, 13, 0)) is evening
    assert open_window((morning, evening), utc(2025, 6, 4, 1, 0)) is morning
    assert open_window((morning,), utc(2025, 6, 4, 13, 0)) is None


def test_utc_needs_no_time_zone_database() -> None:
    assert zone("UTC") is UTC
