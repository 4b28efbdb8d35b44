"""engine.ir.update_decision: nothing, in place, replace, or restore."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from engine.errors import ResourceActionRestricted
from engine.ir.update_decision import Decision, Stored, check_restricted, decide, prop_diff


def stored(properties: Mapping[str, Any] | None = None, *, type_name: str = "T",
           action: str = "CREATE", status: str = "COMPLETE",
           replaced: Mapping[str, Any] | None = None,
           physical_id: str | None = "p-1") -> Stored:
    return Stored(type_name, {"a": 1} if properties is None else properties, physical_id,
                  action, status, replaced)


def in_place(diff: Mapping[str, Any]) -> bool:
    return False


def replaces(diff: Mapping[str, Any]) -> bool:
    return True


def test_unchanged_properties_do_nothing() -> None:
    assert decide(stored({"a": 1}), "T", {"a": 1}, replaces, False) == Decision.NONE


def test_changed_properties_update_in_place_or_replace_as_the_type_says() -> None:
    assert decide(stored({"a": 1}), "T", {"a": 2}, in_place, False) == Decision.UPDATE
    assert decide(stored({"a": 1}), "T", {"a": 2}, replaces, False) == Decision.REPLACE


def test_a_new_type_replaces() -> None:
    assert decide(stored({"a": 1}), "Other", {"a": 1}, in_place, False) == Decision.REPLACE


def test_a_resource_never_created_is_created() -> None:
    never = Stored("T", None, None, "INIT", "COMPLETE", None)
    assert decide(never, "T", {"a": 1}, in_place, False) == Decision.CREATE


@pytest.mark.parametrize("action", ["CREATE", "CHECK", "UPDATE"])
def test_a_failed_resource_is_replaced_even_unchanged(action: str) -> None:
    assert decide(stored(action=action, status="FAILED"), "T", {"a": 1}, in_place,
                  False) == Decision.REPLACE


def test_a_rollback_changes_a_failed_update_back_in_place() -> None:
    failed = stored({"a": 2}, action="UPDATE", status="FAILED")
    assert decide(failed, "T", {"a": 1}, in_place, rolling_back=True) == Decision.UPDATE


def test_a_rollback_restores_the_resource_the_update_replaced() -> None:
    old = {"type": "T", "physical_id": "p-0", "properties": {"a": 1}, "data": {}}
    replacement = stored({"a": 2}, replaced=old)
    assert decide(replacement, "T", {"a": 1}, replaces, rolling_back=True) == Decision.RESTORE
    # only a rollback takes it back, and only when it is what the rollback wants
    assert decide(replacement, "T", {"a": 1}, replaces, rolling_back=False) == Decision.REPLACE
    assert decide(replacement, "T", {"a": 3}, replaces, rolling_back=True) == Decision.REPLACE


def test_prop_diff_names_changed_added_and_removed_properties() -> None:
    assert prop_diff({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 5, "d": 4}) == {
        "b": 5, "c": None, "d": 4}


@pytest.mark.parametrize(("decision", "restricted", "refused"), [
    (Decision.UPDATE, {"update"}, "update"),
    (Decision.REPLACE, {"replace"}, "replace"),
    (Decision.UPDATE, {"replace"}, None),
    (Decision.REPLACE, {"update"}, None),
    (Decision.NONE, {"update", "replace"}, None),
    (Decision.CREATE, {"update", "replace"}, None),
    (Decision.RESTORE, {"update", "replace"}, None),
])
def test_only_what_the_decision_does_is_checked_against_the_restrictions(
        decision: Decision, restricted: set[str], refused: str | None) -> None:
    if refused is None:
        check_restricted(decision, frozenset(restricted))
        return
    with pytest.raises(ResourceActionRestricted) as caught:
        check_restricted(decision, frozenset(restricted))
    assert caught.value.message == f"{refused} is restricted for resource."
