"""OS::Heat::Value: the value property exposed as an attribute, typed by ``type``."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import StackValidationFailed
from plugins.resources.value import Value
from tests.unit.plugins.resources.conftest import Build, FakeRuntime


def test_create_records_a_stack_derived_physical_id(
    build: Build, runtime: FakeRuntime
) -> None:
    res = build(Value, {"value": "x"}, name="v")
    assert res.check_create_complete(res.handle_create()) is True

    assert runtime.recorded == [res.physical_id]
    assert res.physical_id is not None
    assert res.physical_id.startswith("teststack-v-")


def test_value_is_required(build: Build) -> None:
    with pytest.raises(StackValidationFailed, match="Property value not assigned"):
        build(Value, {})


def test_unknown_type_is_rejected_by_the_schema(build: Build) -> None:
    with pytest.raises(StackValidationFailed, match="not an allowed value"):
        build(Value, {"value": 1, "type": "float"})


@pytest.mark.parametrize(
    "value",
    [{"a": [1, 2]}, [1, "b"], "plain", 3.5, False],
)
def test_untyped_value_is_passed_through(build: Build, value: Any) -> None:
    res = build(Value, {"value": value})
    res.validate()

    assert res.get_attribute("value") == value


@pytest.mark.parametrize(
    ("kind", "given", "expected"),
    [
        ("number", "42", 42),
        ("number", "2.5", 2.5),
        ("number", 7, 7),
        ("boolean", "true", True),
        ("boolean", "no", False),
        ("boolean", 0, False),
        ("string", 12, "12"),
        ("string", True, "true"),
        ("json", '{"a": [1, 2]}', {"a": [1, 2]}),
        ("json", "[1, 2]", [1, 2]),
        ("json", {"already": "parsed"}, {"already": "parsed"}),
        ("comma_delimited_list", "a,b, c", ["a", "b", "c"]),
        ("comma_delimited_list", ["x", "y"], ["x", "y"]),
        ("comma_delimited_list", "", []),
    ],
)
def test_typed_value_is_converted(build: Build, kind: str, given: Any, expected: Any) -> None:
    res = build(Value, {"value": given, "type": kind})
    res.validate()

    result = res.get_attribute("value")
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("kind", "given", "message"),
    [
        ("number", "ten", "is not a number"),
        ("boolean", "maybe", "is not a boolean"),
        ("string", {"a": 1}, "is not a string"),
        ("json", "{not json", "is not valid JSON"),
        ("comma_delimited_list", {"a": 1}, "is not a list"),
    ],
)
def test_unconvertible_value_fails_validation(
    build: Build, kind: str, given: Any, message: str
) -> None:
    res = build(Value, {"value": given, "type": kind})

    with pytest.raises(StackValidationFailed, match=message):
        res.validate()


def test_other_attributes_are_null(build: Build) -> None:
    assert build(Value, {"value": 1}).get_attribute("other") is None


def test_schema_flags_match_heat() -> None:
    assert Value.support_version == "7.0.0"
    assert Value.properties_schema["value"].describe()["update_allowed"] is True
    assert Value.properties_schema["type"].describe()["constraints"] == [
        {"allowed_values": ["string", "number", "comma_delimited_list", "json", "boolean"]}
    ]
    assert Value.describe() == "A resource which exposes its value property as an attribute."
