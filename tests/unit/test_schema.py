"""engine.schema: the Heat wire form of property, attribute and support-status schemas,
JSON text read with the bounds of a template, and Heat's boolean and tag rules."""

from __future__ import annotations

import pytest

from engine.errors import BadRequest, StackValidationFailed
from engine.schema import (
    DEPRECATED,
    INTEGER,
    LIST,
    MAP,
    MAX_DEPTH,
    STRING,
    AllowedPattern,
    Attribute,
    Length,
    Property,
    SupportStatus,
    check_tags,
    extract_bool,
    load_json,
    nested_deeper,
    to_number,
)


def test_property_keys_come_in_heats_order_and_unset_ones_are_left_out() -> None:
    described = Property(STRING, "A name.", default="x", required=False, update_allowed=True,
                         constraints=(Length(1, 8), AllowedPattern("[a-z]+"))).describe()

    assert list(described.items()) == [
        ("type", "string"),
        ("description", "A name."),
        ("default", "x"),
        ("required", False),
        ("constraints", [{"length": {"min": 1, "max": 8}},
                         {"allowed_pattern": "[a-z]+"}]),
        ("update_allowed", True),
        ("immutable", False),
    ]
    assert Property(INTEGER).describe() == {"type": "integer", "required": False,
                                            "update_allowed": False, "immutable": False}


def test_falsy_defaults_are_shown() -> None:
    assert Property(INTEGER, default=0).describe()["default"] == 0
    assert Property(STRING, default="").describe()["default"] == ""


def test_list_item_schema_is_keyed_star() -> None:
    described = Property(LIST, "Names.", schema=Property(STRING, required=True)).describe()

    assert described["schema"] == {"*": {"type": "string", "required": True,
                                         "update_allowed": False, "immutable": False}}


def test_map_schema_is_keyed_by_field() -> None:
    described = Property(MAP, schema={"a": Property(INTEGER, "A.")}).describe()

    assert described["schema"] == {"a": {"type": "integer", "description": "A.",
                                         "required": False, "update_allowed": False,
                                         "immutable": False}}


def test_a_list_of_fields_is_described_as_a_list_of_maps() -> None:
    """Kiln lets a list name its items' fields directly; Heat's form is a list whose item
    is a map with those fields."""
    described = Property(LIST, schema={"a": Property(INTEGER)}).describe()

    assert list(described["schema"]) == ["*"]
    assert list(described["schema"]["*"].items()) == [
        ("type", "map"),
        ("schema", {"a": Property(INTEGER).describe()}),
        ("required", False),
        ("update_allowed", False),
        ("immutable", False),
    ]


def test_attribute_shows_only_what_is_set() -> None:
    assert Attribute("The value.", type=STRING).describe() == {"description": "The value.",
                                                               "type": "string"}
    assert Attribute("Only words.").describe() == {"description": "Only words."}
    assert Attribute().describe() == {}


def test_support_status_wire_form() -> None:
    assert SupportStatus().describe() == {"status": "SUPPORTED", "message": None,
                                          "version": None, "previous_status": None}
    deprecated = SupportStatus(DEPRECATED, "9.0.0", "Use OS::Heat::Value.",
                               previous_status=SupportStatus(version="5.0.0"))
    assert deprecated.describe() == {
        "status": "DEPRECATED", "message": "Use OS::Heat::Value.", "version": "9.0.0",
        "previous_status": {"status": "SUPPORTED", "message": None, "version": "5.0.0",
                            "previous_status": None}}


# --- JSON text -------------------------------------------------------------------------


def brackets(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_json_text_as_deep_as_a_template_is_read() -> None:
    value = load_json(brackets(MAX_DEPTH + 1))  # the innermost list is MAX_DEPTH down

    assert not nested_deeper(value, MAX_DEPTH)
    assert nested_deeper(value, MAX_DEPTH - 1)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 2, 600, 100_000])
def test_json_text_deeper_than_a_template_is_refused(depth: int) -> None:
    # 100,000: past the decoder's own recursion (a RecursionError, not a ValueError).
    with pytest.raises(ValueError, match="^nested deeper than 64 levels$"):
        load_json(brackets(depth))


def test_keys_and_values_are_checked_at_any_depth() -> None:
    with pytest.raises(ValueError, match="unpaired surrogate"):
        load_json('{"a": [{"\\udc00": 1}]}')
    with pytest.raises(ValueError, match="NUL"):
        load_json('{"a": [{"b": "\\u0000"}]}')


def test_nested_deeper_walks_any_depth_without_recursion() -> None:
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]

    assert nested_deeper(deep, 99_999)
    assert not nested_deeper(deep, 100_000)
    assert not nested_deeper({"a": ("b", {"c": 1})}, 3)
    assert nested_deeper({"a": ("b", {"c": 1})}, 2)


def test_a_map_property_given_deep_json_text_is_not_a_map() -> None:
    prop = Property(MAP)

    assert prop.coerce('{"a": {"b": 1}}', "p") == {"a": {"b": 1}}
    with pytest.raises(StackValidationFailed, match="^Property error: p: Value .* is not a map$"):
        prop.coerce('{"a": ' * 2000 + "1" + "}" * 2000, "p")


@pytest.mark.parametrize("value", ["1e400", "-1e400", "nan", "inf", float("inf"), float("nan")])
def test_a_number_no_column_or_json_holds_is_not_a_number(value: object) -> None:
    # Accepted, such a value failed only when the resource was stored (an internal error).
    def refused(kind: str) -> ValueError:
        return ValueError(kind)

    with pytest.raises(ValueError, match="a finite number"):
        to_number(value, on_error=refused)
    with pytest.raises(ValueError, match="an integer"):
        to_number(value, integer=True, on_error=refused)


def test_numbers_read_as_before() -> None:
    def refused(kind: str) -> ValueError:
        return ValueError(kind)

    assert to_number("1e3", on_error=refused) == 1000.0
    assert to_number("7", integer=True, on_error=refused) == 7
    assert to_number(2.5, on_error=refused) == 2.5


@pytest.mark.parametrize(("value", "expected"), [
    ("true", True), ("FALSE", False), ("True", True), (True, True), (False, False),
    ("false", False), ("TRUE", True), ("False", False)])
def test_extract_bool_reads_true_and_false_in_any_case(value: object, expected: bool) -> None:
    assert extract_bool(value, "flag") is expected


@pytest.mark.parametrize("value", ["yes", "1", 1, 0, None, "", " true", [], {"a": 1}])
def test_extract_bool_refuses_anything_else_naming_the_field(value: object) -> None:
    with pytest.raises(BadRequest) as caught:
        extract_bool(value, "show_deleted")
    assert caught.value.message == (f'Unrecognized value "{value}" for "show_deleted", '
                                    "acceptable values are: true, false.")


def test_check_tags_takes_80_characters_and_refuses_81() -> None:
    check_tags(["x" * 80, ""])
    with pytest.raises(BadRequest) as caught:
        check_tags(["ok", "x" * 81])
    assert caught.value.message == f'Invalid tag, "{"x" * 81}" is longer than 80 characters'
