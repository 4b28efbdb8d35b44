"""engine.services.listing: Heat's list filters as Kiln's queries compare them."""

from __future__ import annotations

from engine.services.listing import stack_filters


def test_a_timeout_no_stack_can_have_matches_none() -> None:
    """Past the column's range a value would overflow the database's integer (a 500);
    like a value that is no integer at all, it filters everything out instead."""
    found = stack_filters({"timeout_mins": ["7", "x", str(2**63), str(-(2**63) - 1),
                                            "9" * 5000, str(2**31 - 1)]})

    assert found == {"timeout_mins": [7, 2**31 - 1]}


def test_aliases_merge_and_statuses_split() -> None:
    found = stack_filters({"name": ["a"], "stack_name": ["b"],
                           "status": ["CREATE_COMPLETE", "FAILED"]})

    assert found == {"name": ["a", "b"], "status": ["COMPLETE", "FAILED"],
                     "action": ["CREATE"]}
