"""engine.schema: the Heat wire form of property, attribute and support-status schemas."""

from __future__ import annotations

from engine.schema import (
    DEPRECATED,
    INTEGER,
    LIST,
    MAP,
    STRING,
    AllowedPattern,
    Attribute,
    Length,
    Property,
    SupportStatus,
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
