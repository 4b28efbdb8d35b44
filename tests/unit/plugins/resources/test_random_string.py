"""OS::Heat::RandomString: minimums honoured, length exact, value generated once."""

from __future__ import annotations

import string
from collections import Counter
from typing import Any

import pytest

from engine.errors import StackValidationFailed
from plugins.resources.random_string import RandomString
from tests.unit.plugins.resources.conftest import Build, FakeRuntime

ROUNDS = 300


def generate(build: Build, raw: dict[str, Any] | None = None) -> str:
    res = build(RandomString, raw)
    res.validate()
    assert res.check_create_complete(res.handle_create()) is True
    value = res.get_attribute("value")
    assert isinstance(value, str)
    return value


def test_default_is_32_letters_and_digits(build: Build) -> None:
    value = generate(build)

    assert len(value) == 32
    assert set(value) <= set(string.ascii_letters + string.digits)


def test_defaults_match_heat(build: Build) -> None:
    res = build(RandomString)

    assert res.properties["length"] == 32
    assert res.properties["character_classes"] == [{"class": "lettersdigits", "min": 1}]
    assert res.properties["character_sequences"] is None
    assert res.properties["salt"] is None
    assert not any(p.update_allowed for p in RandomString.properties_schema.values())


def test_class_minimums_are_always_met(build: Build) -> None:
    raw = {
        "length": 12,
        "character_classes": [
            {"class": "uppercase", "min": 3},
            {"class": "digits", "min": 4},
            {"class": "octdigits", "min": 2},
        ],
    }
    for _ in range(ROUNDS):
        value = generate(build, raw)
        assert len(value) == 12
        assert sum(c in string.ascii_uppercase for c in value) >= 3
        assert sum(c in string.digits for c in value) >= 4 + 2
        assert set(value) <= set(string.ascii_uppercase + string.digits)


def test_sequence_minimums_are_always_met(build: Build) -> None:
    raw = {
        "length": 10,
        "character_classes": [{"class": "lowercase", "min": 1}],
        "character_sequences": [{"sequence": "!@#", "min": 4}, {"sequence": "~", "min": 2}],
    }
    for _ in range(ROUNDS):
        value = generate(build, raw)
        counts = Counter(value)
        assert len(value) == 10
        assert counts["!"] + counts["@"] + counts["#"] >= 4
        assert counts["~"] >= 2
        assert sum(c in string.ascii_lowercase for c in value) >= 1
        assert set(value) <= set(string.ascii_lowercase + "!@#~")


def test_minimums_may_fill_the_whole_length(build: Build) -> None:
    raw = {"length": 3, "character_classes": [{"class": "digits", "min": 2}],
           "character_sequences": [{"sequence": "x", "min": 1}]}
    for _ in range(50):
        value = generate(build, raw)
        assert sorted(value)[-1] == "x"
        assert sum(c.isdigit() for c in value) == 2


def test_hexdigits_are_upper_case_as_in_heat(build: Build) -> None:
    value = generate(build, {"length": 512, "character_classes": [{"class": "hexdigits"}]})

    assert set(value) <= set(string.digits + "ABCDEF")


def test_output_is_shuffled(build: Build) -> None:
    # Minimums are drawn first; without the shuffle the digit would always lead.
    raw = {"length": 8, "character_sequences": [{"sequence": "0", "min": 1}],
           "character_classes": [{"class": "letters", "min": 7}]}
    positions = {generate(build, raw).index("0") for _ in range(ROUNDS)}

    assert len(positions) > 1


def test_values_differ_between_resources(build: Build) -> None:
    assert len({generate(build) for _ in range(20)}) == 20


def test_validate_rejects_minimums_above_length(build: Build) -> None:
    res = build(RandomString, {
        "length": 5,
        "character_classes": [{"class": "digits", "min": 3}],
        "character_sequences": [{"sequence": "ab", "min": 3}],
    })

    with pytest.raises(
        StackValidationFailed,
        match="^Length property cannot be smaller than combined character class and "
              "character sequence minimums$",
    ):
        res.validate()


def test_validate_rejects_an_empty_pool(build: Build) -> None:
    with pytest.raises(StackValidationFailed, match="At least one character class"):
        build(RandomString, {"character_classes": []}).validate()


def test_validate_rejects_an_empty_sequence(build: Build) -> None:
    res = build(RandomString, {"character_sequences": [{"sequence": ""}]})

    with pytest.raises(StackValidationFailed, match="character sequence cannot be empty"):
        res.validate()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"length": 0}, r"length: 0 is out of range"),
        ({"length": 513}, r"length: 513 is out of range"),
        ({"character_classes": [{"class": "emoji"}]}, r"class: \"emoji\" is not an allowed"),
        ({"character_classes": [{"min": 0}]},
         r"character_classes\[0\]\.min: 0 is out of range"),
        ({"character_sequences": [{"min": 2}]}, r"Property sequence not assigned"),
    ],
)
def test_schema_rejects_bad_properties(
    build: Build, raw: dict[str, Any], message: str
) -> None:
    with pytest.raises(StackValidationFailed, match=message):
        build(RandomString, raw)


def test_physical_id_is_recorded_and_reference_is_the_value(
    build: Build, runtime: FakeRuntime
) -> None:
    res = build(RandomString, name="pw")
    assert res.get_reference_id() is None
    res.handle_create()

    assert runtime.recorded == [res.physical_id]
    assert res.physical_id is not None
    assert res.physical_id.startswith("teststack-pw-")
    assert res.get_reference_id() == res.data["value"]
    assert res.get_reference_id() != res.physical_id


def test_existing_value_is_kept_on_resume(build: Build) -> None:
    res = build(RandomString, data={"value": "adopted-secret"})
    res.handle_create()
    res.check_create_complete(None)

    assert res.get_attribute("value") == "adopted-secret"
    assert res.get_reference_id() == "adopted-secret"


def test_value_is_saved_with_the_physical_id_and_kept_on_resume(
    build: Build, runtime: FakeRuntime
) -> None:
    first = build(RandomString)
    first.handle_create()
    # What the runtime persisted in the same write as the physical id.
    assert runtime.recorded_data["value"] == first.data["value"]

    # A worker that died before the token was saved calls handle_create again.
    resumed = build(RandomString, physical_id=first.physical_id,
                    data=dict(runtime.recorded_data))
    resumed.handle_create()
    assert resumed.data["value"] == first.data["value"]
    assert resumed.physical_id == first.physical_id
    assert runtime.recorded == [first.physical_id]


def test_physical_name_is_stable_for_one_resource(build: Build) -> None:
    assert build(RandomString).physical_resource_name() == (
        build(RandomString).physical_resource_name())


def test_other_attributes_are_null(build: Build) -> None:
    res = build(RandomString)
    res.handle_create()

    assert res.get_attribute("length") is None


def test_a_restore_takes_the_snapshots_string_back_and_keeps_it(build: Build) -> None:
    res = build(RandomString, {"length": 8})

    assert res.handle_restore({"resource_data": {"value": "kept1234"}}) == res.properties
    res.handle_create()  # the restore replaces it: the new resource keeps that string

    assert res.get_attribute("value") == "kept1234"
    other = build(RandomString)
    other.handle_restore({"resource_data": {}})  # a snapshot that kept none
    assert "value" not in other.data
