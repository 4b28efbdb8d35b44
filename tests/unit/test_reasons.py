"""engine.reasons: the sentences Heat's clients match, byte for byte."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from engine import reasons


@pytest.mark.parametrize(("summary", "details", "expected"), [
    ("got 2 of 3", {"data": "x"}, "Signal: got 2 of 3"),
    (None, None, "No signal details provided"),
    (None, {"previous": "ok", "current": "alarm", "reason": "cpu high"},
     "alarm state changed from ok to alarm (cpu high)"),
    (None, {"data": "x"}, "Unknown"),
    ("", {}, "Unknown"),
])
def test_a_signal_event_gives_the_types_summary_else_heats_reading_of_the_details(
        summary: str | None, details: Mapping[str, Any] | None, expected: str) -> None:
    assert reasons.signal_taken(summary, details) == expected


def test_a_failed_resource_names_the_error_class_and_the_resource() -> None:
    assert reasons.resource_error("NotFound", "web", "gone") == "NotFound: resources.web: gone"
    assert reasons.resource_failed("CREATE", reasons.resource_error("E", "web", "m")) == (
        "Resource CREATE failed: E: resources.web: m")
