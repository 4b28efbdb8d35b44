"""engine.template.parse: YAML/JSON text to plain data, with the line of every path."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.errors import RequestLimitExceeded, StackValidationFailed
from engine.template.parse import SourceDocument, document, from_data, parse_text, render_path

TEMPLATE = """\
heat_template_version: 2018-08-31
description: two resources
resources:
  a:
    type: OS::Heat::None
  b:
    type: OS::Nope
    properties:
      items:
        - first
        - {second: 2}
"""


def test_data_is_plain() -> None:
    doc = parse_text(TEMPLATE)

    assert doc.data == {
        "heat_template_version": "2018-08-31",
        "description": "two resources",
        "resources": {
            "a": {"type": "OS::Heat::None"},
            "b": {"type": "OS::Nope", "properties": {"items": ["first", {"second": 2}]}},
        },
    }


def test_lines_of_keys_and_list_items() -> None:
    lines = parse_text(TEMPLATE).lines

    assert lines[()] == 1
    assert lines[("heat_template_version",)] == 1
    assert lines[("resources", "b")] == 6
    assert lines[("resources", "b", "type")] == 7
    assert lines[("resources", "b", "properties", "items", 0)] == 10
    assert lines[("resources", "b", "properties", "items", 1, "second")] == 11


def test_location_renders_the_path_and_line() -> None:
    loc = parse_text(TEMPLATE).location(("resources", "b", "type"))

    assert str(loc) == "template:7 resources.b.type"


def test_location_of_an_unrecorded_path_uses_the_nearest_ancestor_line() -> None:
    loc = parse_text(TEMPLATE).location(("resources", "b", "properties", "size"))

    assert loc.line == 8
    assert loc.path == "resources.b.properties.size"


def test_location_carries_the_file_name() -> None:
    loc = parse_text(TEMPLATE, file="stack.yaml").location(("resources", "a"))

    assert str(loc) == "stack.yaml:4 resources.a"


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ((), ""),
        (("resources",), "resources"),
        (("resources", "b", "properties", "items", 1, "second"),
         "resources.b.properties.items[1].second"),
        ((0, "x"), "[0].x"),
    ],
)
def test_render_path(path: tuple[str | int, ...], text: str) -> None:
    assert render_path(path) == text


def test_dates_stay_strings() -> None:
    data = parse_text("heat_template_version: 2018-08-31\n"
                      "stamp: 2001-12-14t21:59:43.10-05:00\n").data

    assert data["heat_template_version"] == "2018-08-31"
    assert data["stamp"] == "2001-12-14t21:59:43.10-05:00"


def test_other_scalars_keep_their_yaml_types() -> None:
    data = parse_text("i: 3\nf: 2.5\nb: true\nn: null\ns: '3'\n").data

    assert data == {"i": 3, "f": 2.5, "b": True, "n": None, "s": "3"}


def test_json_text_parses_with_lines() -> None:
    doc = parse_text('{"heat_template_version": "2018-08-31",\n'
                     ' "resources": {\n'
                     '   "a": {"type": "T"}}}')

    assert doc.data["resources"] == {"a": {"type": "T"}}
    assert doc.lines[("resources", "a", "type")] == 3


def test_empty_text_is_no_data() -> None:
    doc = parse_text("")

    assert doc.data is None
    assert doc.lines == {}


def test_duplicate_key_names_its_line_and_path() -> None:
    text = "resources:\n  a:\n    type: X\n    type: Y\n"

    with pytest.raises(StackValidationFailed) as caught:
        parse_text(text)

    assert str(caught.value) == (
        'template:4 resources.a.type: Error parsing template: duplicate key "type"'
    )


def test_duplicate_top_level_key() -> None:
    with pytest.raises(StackValidationFailed,
                       match=r'^template:3 resources: .*duplicate key "resources"$'):
        parse_text("resources: {}\noutputs: {}\nresources: {}\n")


def test_the_same_key_in_different_maps_is_fine() -> None:
    doc = parse_text("a: {type: X}\nb: {type: Y}\n")

    assert doc.data == {"a": {"type": "X"}, "b": {"type": "Y"}}


def test_syntax_error_names_the_line() -> None:
    with pytest.raises(StackValidationFailed) as caught:
        parse_text("a: 1\nb: [1, 2\nc: 3\n")

    assert str(caught.value).startswith("template:3: Error parsing template: ")
    assert caught.value.location is not None
    assert caught.value.location.line == 3


def test_bad_indentation_names_the_line() -> None:
    with pytest.raises(StackValidationFailed, match=r"^template:3: Error parsing template: "):
        parse_text("a:\n  b: 1\n c: 2\n")


def test_a_tab_names_the_line() -> None:
    with pytest.raises(StackValidationFailed,
                       match=r"^template:2: Error parsing template: .*tab"):
        parse_text("a: 1\n\tb: 2\n")


def test_more_than_one_document_is_refused() -> None:
    with pytest.raises(StackValidationFailed,
                       match="template:3: .*expected a single document"):
        parse_text("---\na: 1\n---\nb: 2\n")


def test_list_and_map_keys_are_refused() -> None:
    with pytest.raises(StackValidationFailed,
                       match=r"^template:1: Error parsing template: mapping keys must be scalars$"):
        parse_text("? [x]\n: 1\n")


def test_python_tags_are_refused() -> None:
    with pytest.raises(StackValidationFailed, match="could not determine a constructor"):
        parse_text("a: !!python/name:os.system\n")


def test_syntax_error_names_the_file() -> None:
    with pytest.raises(StackValidationFailed, match=r"^env\.yaml:2: Error parsing template"):
        parse_text("a: 1\n\tb: 2\n", file="env.yaml")


def test_document_parses_text() -> None:
    doc = document("a: 1\n")

    assert doc.data == {"a": 1}
    assert doc.lines[("a",)] == 1


def test_document_keeps_parsed_data_without_lines() -> None:
    data = {"heat_template_version": "2018-08-31"}

    doc = document(data, file="body")

    assert doc == SourceDocument(data=data, lines={}, file="body")
    assert str(doc.location(("heat_template_version",))) == "heat_template_version"


def test_a_yaml_alias_bomb_is_refused_quickly() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 10):
        previous = f"*a{level - 1}"
        lines.append(f"a{level}: &a{level} [{', '.join([previous] * 10)}]")
    text = "heat_template_version: rocky\n" + "\n".join(lines) + "\n"

    with pytest.raises(RequestLimitExceeded) as caught:
        parse_text(text)

    assert caught.value.message == ("Request limit exceeded: Template expands to more than "
                                    "200000 values (YAML aliases included); refused.")


def test_anchors_and_merge_keys_within_the_limit_work() -> None:
    doc = parse_text("base: &base {type: OS::Heat::None}\nr: {<<: *base, a: 1}\n")

    assert doc.data["r"] == {"type": "OS::Heat::None", "a": 1}


@pytest.mark.parametrize("as_text", [True, False])
def test_deep_nesting_is_refused(as_text: bool) -> None:
    deep: Any = "x"
    for _ in range(200):
        deep = [deep]

    with pytest.raises(RequestLimitExceeded) as caught:
        if as_text:
            parse_text(json.dumps({"value": deep}))
        else:
            from_data({"value": deep})

    assert caught.value.message == ("Request limit exceeded: Template nesting is deeper "
                                    "than 64 levels; refused.")


# --- what Heat's loader builds, as it reaches Heat's engine through JSON ---------------


def value_of(line: str) -> Any:
    return parse_text(f"a: 1\nvalue: {line}\n").data["value"]


@pytest.mark.parametrize("line, expected", [
    ("!!binary aGVsbG8gd29ybGQ=", "hello world"),  # Heat: bytes, decoded as UTF-8 by JSON
    ("!!set {b, a, 1}", ["b", "a", 1]),  # Heat: a set, a list through JSON; here in order
    ("!!omap [b: 1, a: {c: 2}]", [["b", 1], ["a", {"c": 2}]]),
    ("!!pairs [a: 1, a: 2]", [["a", 1], ["a", 2]]),
    ("!!timestamp 2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
    ("{1: a, true: b, 1.5: c, -2: d}", {"1": "a", "true": "b", "1.5": "c", "-2": "d"}),
    # heatclient sends a null key as json.dumps writes it.
    ("{null: a}", {"null": "a"}),
    ("0x" + "f" * 100, int("f" * 100, 16)),
    ("9" * 4300, int("9" * 4300)),
    # Python's count of digits leaves out the sign and underscores, and so does Kiln's.
    ("-" + "9" * 4300, -int("9" * 4300)),
    ("1_" * 4299 + "1", int("1" * 4300)),
    ("0b" + "1" * 4400, 2**4400 - 1),  # 1,325 decimal digits: converted in linear time
    ("1.5e+300", 1.5e300),
])
def test_yaml_builds_only_what_json_holds(line: str, expected: Any) -> None:
    value = value_of(line)

    assert value == expected
    assert json.loads(json.dumps(value, allow_nan=False)) == expected


@pytest.mark.parametrize("line, problem", [
    ("!!binary //79", "the !!binary value is not UTF-8 text"),
    ("!!binary AGE=", "a NUL character cannot be stored"),
    ('"a\\0b"', "a NUL character cannot be stored"),
    ('{"\\0": 1}', "a NUL character cannot be stored"),
    (".inf", ".inf is not a finite number; JSON has no infinity or NaN"),
    ("-.Inf", "-.Inf is not a finite number; JSON has no infinity or NaN"),
    (".NaN", ".NaN is not a finite number; JSON has no infinity or NaN"),
    ("1.0e+999", "1.0e+999 is not a finite number; JSON has no infinity or NaN"),
    ("9" * 4301, "an integer of more than 4300 digits"),
    ("0x" + "f" * 3600, "an integer of more than 4300 digits"),  # 4335 decimal digits
    ("0b" + "1" * 14400, "an integer of more than 4300 digits"),  # 4335 decimal digits
    ("1" + ":59" * 2200, "an integer of more than 4300 digits"),
    ("-" + "9" * 4301, "an integer of more than 4300 digits"),
    # What a tag cannot read: PyYAML's constructors raise plain Python errors on these
    # (KeyError, IndexError, ValueError), a 500 once.
    ("!!bool maybe", '"maybe" is not a valid !!bool value'),
    ('!!int ""', '"" is not a valid !!int value'),
    ("!!int _", '"_" is not a valid !!int value'),
    ("!!int +", '"+" is not a valid !!int value'),
    ("!!int 0b2", '"0b2" is not a valid !!int value'),
    ("!!int 0x", '"0x" is not a valid !!int value'),
    ("!!int 09", '"09" is not a valid !!int value'),
    ("!!int 1:x", '"1:x" is not a valid !!int value'),
    ("!!float abc", '"abc" is not a valid !!float value'),
    ('!!float ""', '"" is not a valid !!float value'),
    ("!!float 1e", '"1e" is not a valid !!float value'),
    ("!!float 1:x", '"1:x" is not a valid !!float value'),
    ('!!int "\\0"', '"\\u0000" is not a valid !!int value'),
    ("!!int " + "x" * 100, '"' + "x" * 40 + '..." is not a valid !!int value'),
    # Plain scalars YAML 1.1 resolves as integers with no digits.
    ("0x_", '"0x_" is not a valid !!int value'),
    ("-0b_", '"-0b_" is not a valid !!int value'),
])
def test_what_json_cannot_hold_is_refused_at_its_line(line: str, problem: str) -> None:
    with pytest.raises(StackValidationFailed) as caught:
        parse_text(f"a: 1\nvalue: {line}\n")

    assert str(caught.value) == f"template:2: Error parsing template: {problem}"


def test_keys_equal_as_json_text_are_duplicates() -> None:
    with pytest.raises(StackValidationFailed) as caught:
        parse_text("m:\n  1: a\n  '1': b\n")

    assert str(caught.value) == 'template:3 m.1: Error parsing template: duplicate key "1"'


def test_paths_use_the_json_text_of_keys() -> None:
    doc = parse_text("m:\n  true:\n    - x\n")

    assert doc.data == {"m": {"true": ["x"]}}
    assert doc.location(("m", "true", 0)).line == 3
