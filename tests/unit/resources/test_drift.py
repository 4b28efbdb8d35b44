"""Drift: only what the backend reported and the template sets is compared."""

from __future__ import annotations

from engine.resources.drift import drift_of, drift_reason


def test_unset_and_unreported_properties_are_not_drift() -> None:
    assert drift_of({"A": None, "B": 1}, {"A": 5, "C": 3}) == {}


def test_numbers_compare_by_value_and_booleans_by_identity() -> None:
    assert drift_of({"A": 30, "B": True}, {"A": 30.0, "B": True}) == {}
    assert drift_of({"B": True}, {"B": 1}) == {"B": {"expected": True, "actual": 1}}


def test_nested_values_and_order_of_lists_count() -> None:
    expected = {"M": {"x": [1, {"y": 2}]}, "L": [1, 2]}
    assert drift_of(expected, {"M": {"x": [1, {"y": 2.0}]}, "L": [1, 2]}) == {}
    assert drift_of(expected, {"M": {"x": [1, {"y": 3}]}, "L": [2, 1]}) == {
        "L": {"expected": [1, 2], "actual": [2, 1]},
        "M": {"expected": {"x": [1, {"y": 2}]}, "actual": {"x": [1, {"y": 3}]}}}
    assert drift_of({"M": {"x": 1}}, {"M": {"x": 1, "z": 2}}) != {}


def test_the_reason_names_properties_only() -> None:
    assert drift_reason({"Tags": {}, "DelaySeconds": {}}) == (
        "Drift detected: DelaySeconds, Tags differ from the template")


def test_a_null_in_a_map_is_a_key_left_unset() -> None:
    rule = {"IpProtocol": "-1", "FromPort": None, "CidrIp": "10.0.0.0/8"}
    assert drift_of({"R": [rule]}, {"R": [{"IpProtocol": "-1", "CidrIp": "10.0.0.0/8"}]}) == {}
