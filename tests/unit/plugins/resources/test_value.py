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
    ("kind", "given"),
    [
        # Heat checks the value against the type but hands it back as given
        # (value.py: the attribute reads the property through its ANY schema).
        ("number", "12.5"),
        ("number", "7"),
        ("number", " 1e3 "),
        ("number", 7),
        ("number", 2.5),
        ("boolean", "true"),
        ("boolean", "FALSE"),
        ("boolean", False),
        ("string", "plain"),
        ("string", 12),
        ("string", True),
        ("json", {"a": [1, 2]}),
        ("comma_delimited_list", ["x", "y"]),
        ("comma_delimited_list", []),
    ],
)
def test_typed_value_is_checked_and_given_back_unconverted(
        build: Build, kind: str, given: Any) -> None:
    res = build(Value, {"value": given, "type": kind})
    res.validate()

    result = res.get_attribute("value")
    assert result == given
    assert type(result) is type(given)


@pytest.mark.parametrize(
    ("kind", "given", "message"),
    [
        ("number", "ten", "Value 'ten' is not a number"),
        ("number", [1], "Value '[1]' is not a number"),
        ("boolean", "yes", '"yes" is not a valid boolean'),
        ("boolean", "Maybe", '"maybe" is not a valid boolean'),
        ("boolean", 1, '"1" is not a valid boolean'),
        ("string", {"a": 1}, "Value must be a string; got {'a': 1}"),
        ("string", 3.5, "Value must be a string; got 3.5"),
        # Heat's property types take no text for a list or a map.
        ("json", '{"a": 1}', '"{"a": 1}" is not a map'),
        ("json", [1, 2], '"[1, 2]" is not a map'),
        ("comma_delimited_list", "a,b", '"\'a,b\'" is not a list'),
        ("comma_delimited_list", {"a": 1}, "\"{'a': 1}\" is not a list"),
    ],
)
def test_value_not_of_its_type_fails_validation_with_heats_reason(
    build: Build, kind: str, given: Any, message: str
) -> None:
    res = build(Value, {"value": given, "type": kind})

    with pytest.raises(StackValidationFailed) as caught:
        res.validate()

    assert caught.value.message == f"Property error: value: {message}"


def test_other_attributes_are_null(build: Build) -> None:
    assert build(Value, {"value": 1}).get_attribute("other") is None


def test_schema_flags_match_heat() -> None:
    assert Value.support_version == "7.0.0"
    assert Value.properties_schema["value"].describe()["update_allowed"] is True
    assert Value.properties_schema["type"].describe()["constraints"] == [
        {"allowed_values": ["string", "number", "comma_delimited_list", "json", "boolean"]}
    ]
    assert Value.describe() == "A resource which exposes its value property as an attribute."
