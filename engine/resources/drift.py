"""Drift: where a resource's live state differs from what its template says.

Pure functions over the template's typed properties and what the type's ``observe``
read back. Only properties the backend reported and the template sets are compared: a
property the template leaves unset has no expected value (the backend's default is fine),
and one the backend cannot report has no observed one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Drift = dict[str, dict[str, Any]]


def drift_of(expected: Mapping[str, Any], observed: Mapping[str, Any]) -> Drift:
    """``{property: {"expected": ..., "actual": ...}}`` for each property that drifted."""
    return {name: {"expected": expected[name], "actual": actual}
            for name, actual in sorted(observed.items())
            if expected.get(name) is not None and not _same(expected[name], actual)}


def drift_reason(drift: Mapping[str, Any]) -> str:
    """The event's reason for a resource whose check found ``drift`` (names only: values
    may be secret, and the resource document has them, masked)."""
    return f"Drift detected: {', '.join(sorted(drift))} differ from the template"


def _same(expected: Any, actual: Any) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return float(expected) == float(actual)
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        # A key set to null is a key left unset (typed properties fill every key of a
        # map's schema), on either side.
        wanted = {k: v for k, v in expected.items() if v is not None}
        found = {k: v for k, v in actual.items() if v is not None}
        return wanted.keys() == found.keys() and all(_same(wanted[k], found[k])
                                                     for k in wanted)
    if isinstance(expected, list) and isinstance(actual, list):
        return (len(expected) == len(actual)
                and all(_same(e, a) for e, a in zip(expected, actual, strict=True)))
    return bool(expected == actual)
