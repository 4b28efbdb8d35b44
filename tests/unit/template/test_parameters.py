"""engine.template.parameters: declared schemas, typed values, constraints and hiding."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from engine import budget
from engine.errors import (
    EvaluationTooLong,
    StackValidationFailed,
    UnknownUserParameter,
    UserParameterMissing,
)
from engine.schema import Custom
from engine.template.loader import load
from engine.template.parameters import (
    MASK,
    ParameterSchema,
    given_hidden_values,
    hidden_values,
    masked,
    parse_schemas,
    raw_values,
    redact,
    resolve_values,
)
from engine.template.parse import document, parse_text


def schemas(text: str) -> dict[str, ParameterSchema]:
    """The parameter schemas of a ``parameters:`` section given as YAML."""
    doc = parse_text(text)
    return parse_schemas(doc, doc.data["parameters"])


def one(body: str) -> ParameterSchema:
    """The schema of parameter ``p`` whose body is ``body`` (flow YAML)."""
    return schemas(f"parameters:\n  p: {body}\n")["p"]


def convert(body: str, value: Any) -> Any:
    return one(body).convert(value)


def rejection(body: str, value: Any) -> str:
    with pytest.raises(StackValidationFailed) as caught:
        convert(body, value)
    return caught.value.message


# --- parsing the section -----------------------------------------------------------------


def test_schema_fields() -> None:
    parsed = schemas("parameters:\n"
                     "  flavor:\n"
                     "    type: string\n"
                     "    label: Flavor\n"
                     "    description: What to run on\n"
                     "    default: m1.small\n")

    schema = parsed["flavor"]
    assert (schema.name, schema.type, schema.default, schema.has_default) == (
        "flavor", "string", "m1.small", True)
    assert (schema.label, schema.description, schema.hidden) == ("Flavor", "What to run on",
                                                                 False)
    assert str(schema.location) == "template:2 parameters.flavor"


def test_no_section_is_no_parameters() -> None:
    assert parse_schemas(parse_text("a: 1\n"), None) == {}


def test_section_must_be_a_map() -> None:
    doc = parse_text("parameters: [a]\n")

    with pytest.raises(StackValidationFailed,
                       match=r'^template:1 parameters: "parameters" must be a map$'):
        parse_schemas(doc, doc.data["parameters"])


def test_parameter_must_be_a_map() -> None:
    with pytest.raises(StackValidationFailed, match='Parameter "p" must be a map'):
        one("string")


def test_unknown_key_is_named_with_its_line() -> None:
    with pytest.raises(StackValidationFailed) as caught:
        schemas("parameters:\n  p:\n    type: string\n    defualt: x\n")

    assert str(caught.value) == (
        'template:4 parameters.p.defualt: Invalid key "defualt" for parameter (p)'
    )


@pytest.mark.parametrize("constraints", ["true", "5", "{length: {min: 1}}", "'x'"])
def test_constraints_must_be_a_list_as_heat_says(constraints: str) -> None:
    with pytest.raises(StackValidationFailed) as caught:
        schemas(f"parameters:\n  p:\n    type: string\n    constraints: {constraints}\n")

    assert str(caught.value) == ("template:4 parameters.p.constraints: Invalid parameter "
                                 "constraints for parameter p, expected a list")


@pytest.mark.parametrize("body", ["{type: integer}", "{default: 1}"])
def test_invalid_type(body: str) -> None:
    with pytest.raises(StackValidationFailed,
                       match=r"Invalid type \(.*\) for parameter \(p\); must be one of string, "
                             "number, boolean, json, comma_delimited_list"):
        one(body)


def test_default_is_checked_when_the_template_is_parsed() -> None:
    with pytest.raises(StackValidationFailed) as caught:
        schemas("parameters:\n  count:\n    type: number\n    default: many\n")

    assert str(caught.value) == (
        "template:2 parameters.count: Parameter 'count' is invalid: Value 'many' is not a number"
    )


# --- type conversion ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "typed"),
    # Heat's StringParam gives str(value): a boolean is True/False.
    [("abc", "abc"), (3, "3"), (2.5, "2.5"), (True, "True"), (False, "False"), ("", ""),
     (" padded ", " padded ")],
)
def test_string(value: Any, typed: str) -> None:
    assert convert("{type: string}", value) == typed


@pytest.mark.parametrize("value", [{"a": 1}, ["a"]])
def test_string_refuses_maps_and_lists(value: Any) -> None:
    assert rejection("{type: string}", value).endswith("is not a string")


@pytest.mark.parametrize(
    ("value", "typed"),
    # Heat's str_to_num: int() if it can, else float(); Python's int() and float()
    # read surrounding spaces and underscores between digits.
    [(3, 3), ("3", 3), ("-7", -7), (2.5, 2.5), ("2.5", 2.5), ("1e3", 1000.0), (" 12 ", 12),
     ("1_000", 1000), ("1.0", 1.0)],
)
def test_number(value: Any, typed: float) -> None:
    result = convert("{type: number}", value)

    assert result == typed
    assert type(result) is type(typed)


@pytest.mark.parametrize("value", ["many", True, "", [1], "0x10"])
def test_number_refuses(value: Any) -> None:
    assert rejection("{type: number}", value) == (
        f"Parameter 'p' is invalid: Value '{value}' is not a number"
    )


@pytest.mark.parametrize("value", ["nan", "inf", "-Infinity", "1" * 5000])
def test_number_refuses_what_is_not_finite(value: str) -> None:
    # Heat would take these and then fail to store or compare them; Kiln refuses.
    assert rejection("{type: number}", value).endswith("is not a finite number")


@pytest.mark.parametrize(
    ("value", "typed"),
    [(True, True), ("true", True), ("Yes", True), ("on", True), ("1", True), (1, True),
     (False, False), ("false", False), ("no", False), ("OFF", False), ("0", False),
     (0, False)],
)
def test_boolean(value: Any, typed: bool) -> None:
    assert convert("{type: boolean}", value) is typed


def test_boolean_refuses_other_text_in_heats_words() -> None:
    assert rejection("{type: boolean}", "maybe") == (
        "Parameter 'p' is invalid: Unrecognized value 'maybe', acceptable values are: "
        "'0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'"
    )


@pytest.mark.parametrize(
    ("value", "typed"),
    # Heat's JsonParam: any JSON value; empty text is given back as it is.
    [('{"a": [1, 2]}', {"a": [1, 2]}), ("[1, 2]", [1, 2]), ("", ""), ({"k": "v"}, {"k": "v"}),
     ([1], [1]), ("3", 3), (3, 3), ("true", True), ('"text"', "text")],
)
def test_json(value: Any, typed: Any) -> None:
    result = convert("{type: json}", value)

    assert result == typed
    assert type(result) is type(typed)


def test_json_refuses_invalid_text_in_heats_words() -> None:
    assert rejection("{type: json}", "{nope") == (
        "Parameter 'p' is invalid: Value must be valid JSON: Expecting property name "
        "enclosed in double quotes: line 1 column 2 (char 1)"
    )


def nest(depth: int) -> str:
    """JSON text of ``depth`` nested lists and maps, a number at the bottom."""
    return '[{"k": ' * (depth // 2) + "[" * (depth % 2) + "1" + "]" * (depth % 2) \
        + "}]" * (depth // 2)


def test_json_as_deep_as_a_template_is_read() -> None:
    value = convert("{type: json}", nest(64))

    for _ in range(32):
        value = value[0]["k"]
    assert value == 1


@pytest.mark.parametrize("depth", [65, 500, 990, 100_000])
def test_json_deeper_than_a_template_is_invalid_json(depth: int) -> None:
    # 500: walked recursively later (the lifecycle view), a stack that could not be
    # deleted; 990 and more: the decoder's own RecursionError, a 500 at validate.
    assert rejection("{type: json}", nest(depth)) == (
        "Parameter 'p' is invalid: Value must be valid JSON: nested deeper than 64 levels")


@pytest.mark.parametrize("body", ["{type: json, default: '%s'}", "{type: json}"])
def test_deep_json_is_refused_as_a_default_and_as_a_given_value(body: str) -> None:
    deep = nest(300)
    with pytest.raises(StackValidationFailed, match="nested deeper than 64 levels"):
        if "default" in body:
            one(body % deep)
        else:
            resolve_values({"p": one(body)}, {}, defaults={"p": deep})


@pytest.mark.parametrize(("text", "reason"), [
    ("[NaN]", "NaN is not a JSON number"), ('{"a": -Infinity}', "-Infinity is not a JSON number"),
    ("1e999", "1e999 is out of range for a number"),
    ('["a\\u0000"]', "a NUL character or an unpaired surrogate cannot be stored"),
    ('{"\\ud800": 1}', "a NUL character or an unpaired surrogate cannot be stored"),
])
def test_json_no_database_can_hold_is_invalid(text: str, reason: str) -> None:
    assert rejection("{type: json}", text) == (
        f"Parameter 'p' is invalid: Value must be valid JSON: {reason}")


def test_length_of_a_json_value_without_one_is_refused() -> None:
    body = "{type: json, constraints: [{length: {max: 2}}]}"

    assert convert(body, "[1, 2]") == [1, 2]
    assert rejection(body, "5") == "Parameter 'p' is invalid: Value '5' has no length"


@pytest.mark.parametrize(
    ("value", "typed"),
    # Heat splits on commas and keeps each item as written.
    [("a,b, c", ["a", "b", " c"]), ("single", ["single"]), ("", []), (["x", 2], ["x", "2"]),
     (" a , b ", [" a ", " b "]), ("a,,b", ["a", "", "b"]), ([True, 1.5], ["True", "1.5"])],
)
def test_comma_delimited_list(value: Any, typed: list[str]) -> None:
    assert convert("{type: comma_delimited_list}", value) == typed


def test_comma_delimited_list_refuses_other_values() -> None:
    assert rejection("{type: comma_delimited_list}", 3) == (
        "Parameter 'p' is invalid: Value '3' is not a comma-delimited list"
    )


# --- constraints -------------------------------------------------------------------------


def test_length_of_a_string() -> None:
    body = "{type: string, constraints: [{length: {min: 2, max: 4}}]}"

    assert convert(body, "abcd") == "abcd"
    assert rejection(body, "a") == (
        "Parameter 'p' is invalid: length (1) is out of range (min: 2, max: 4)."
    )
    assert rejection(body, "abcde").endswith("length (5) is out of range (min: 2, max: 4).")


def test_length_of_a_list_counts_items() -> None:
    body = "{type: comma_delimited_list, constraints: [{length: {max: 2}}]}"

    assert convert(body, "a,b") == ["a", "b"]
    assert rejection(body, "a,b,c").endswith("length (3) is out of range (min: None, max: 2).")


def test_range() -> None:
    body = "{type: number, constraints: [{range: {min: 1, max: 10}}]}"

    assert convert(body, "10") == 10
    assert rejection(body, 0) == (
        "Parameter 'p' is invalid: 0 is out of range (min: 1, max: 10)."
    )
    assert rejection(body, 10.5).endswith("10.5 is out of range (min: 1, max: 10).")


def test_allowed_values() -> None:
    body = "{type: string, constraints: [{allowed_values: [m1.small, m1.large]}]}"

    assert convert(body, "m1.large") == "m1.large"
    assert rejection(body, "m1.huge") == (
        "Parameter 'p' is invalid: \"m1.huge\" is not an allowed value [\"m1.small\", "
        "\"m1.large\"]"
    )


def test_allowed_values_of_a_number_compare_typed_values() -> None:
    body = "{type: number, constraints: [{allowed_values: [1, 2]}]}"

    assert convert(body, "2") == 2
    assert rejection(body, "3").endswith('"3" is not an allowed value [1, 2]')
    assert rejection(body, 3).endswith("3 is not an allowed value [1, 2]")


@pytest.mark.parametrize(("kind", "allowed", "value", "typed"), [
    # Heat reads each allowed value as the parameter's type before comparing.
    ("number", '["1", "2.5"]', "2.5", 2.5),
    ("number", '["1", "2.5"]', 1, 1),
    ("string", "[1, 2]", "2", "2"),
    ("string", "[true]", "True", "True"),
    ("boolean", '["yes"]', "on", True),
    ("boolean", "[false]", "no", False),
])
def test_allowed_values_are_read_as_the_parameters_type(
        kind: str, allowed: str, value: Any, typed: Any) -> None:
    body = f"{{type: {kind}, constraints: [{{allowed_values: {allowed}}}]}}"

    assert convert(body, value) == typed


def test_an_allowed_value_not_of_the_type_refuses_every_value() -> None:
    body = "{type: number, constraints: [{allowed_values: [1, many]}]}"

    assert rejection(body, 1) == (
        "Parameter 'p' is invalid: Value \"many\" is invalid for data type \"number\".")


def test_allowed_values_of_a_list_check_every_item() -> None:
    body = "{type: comma_delimited_list, constraints: [{allowed_values: [a, b, c]}]}"

    assert convert(body, "a,c") == ["a", "c"]
    assert rejection(body, "a,d") == (
        "Parameter 'p' is invalid: \"a,d\" is not an allowed value [\"a\", \"b\", \"c\"]"
    )
    # The items are compared as written: " c" is not "c".
    assert rejection(body, "a, c").endswith("is not an allowed value [\"a\", \"b\", \"c\"]")


def test_allowed_pattern_must_match_the_whole_value() -> None:
    body = "{type: string, constraints: [{allowed_pattern: '[a-z]+'}]}"

    assert convert(body, "abc") == "abc"
    assert rejection(body, "abc1") == (
        "Parameter 'p' is invalid: \"abc1\" does not match pattern \"[a-z]+\""
    )


def test_constraint_description_replaces_the_reason() -> None:
    body = ("{type: string, constraints: [{allowed_pattern: '[A-Z].*', "
            "description: Must start with a capital}]}")

    assert rejection(body, "lower") == "Parameter 'p' is invalid: Must start with a capital"


def test_every_constraint_is_checked() -> None:
    body = "{type: string, constraints: [{length: {min: 1}}, {allowed_values: [a]}]}"

    assert rejection(body, "b").endswith('"b" is not an allowed value ["a"]')

def test_modulo_constraint() -> None:
    body = "{type: number, constraints: [{modulo: {step: 2, offset: 1}}]}"

    assert one(body).convert("3") == 3
    assert rejection(body, "4") == (
        "Parameter 'p' is invalid: 4 is not a multiple of 2 with an offset of 1")


@pytest.mark.parametrize("arg", ["{step: 0, offset: 0}", "{step: 2, offset: 2}", "{step: 2}",
                                 "{step: a, offset: 1}"])
def test_modulo_needs_a_step_larger_than_its_offset(arg: str) -> None:
    with pytest.raises(StackValidationFailed, match='Invalid "modulo" constraint'):
        one(f"{{type: number, constraints: [{{modulo: {arg}}}]}}")


@pytest.mark.parametrize(
    "constraint",
    ["{length: {min: 1}, range: {min: 1}}", "{description: only words}", "[length]"],
)
def test_a_constraint_has_exactly_one_kind(constraint: str) -> None:
    with pytest.raises(StackValidationFailed, match="A parameter constraint must"):
        one(f"{{type: string, constraints: [{constraint}]}}")


def test_malformed_constraint_argument() -> None:
    with pytest.raises(StackValidationFailed, match='Invalid "length" constraint'):
        one("{type: string, constraints: [{length: 3}]}")


@pytest.mark.parametrize(
    ("kind", "constraint"),
    [
        ("string", "{range: {min: 1}}"),
        ("number", "{length: {min: 1}}"),
        ("number", "{allowed_pattern: '[0-9]+'}"),
        ("boolean", "{length: {max: 4}}"),
        ("json", "{allowed_values: [a]}"),
    ],
)
def test_a_constraint_must_suit_the_type(kind: str, constraint: str) -> None:
    name = constraint[1:].split(":")[0]

    with pytest.raises(StackValidationFailed) as caught:
        one(f"{{type: {kind}, default: '1', constraints: [{constraint}]}}")

    assert caught.value.message == f'"{name}" constraint invalid for type {kind}'


@pytest.mark.parametrize(
    "constraint", ["{length: {min: a}}", "{range: {max: '10'}}", "{range: {min: true}}",
                   "{length: {min: 1.5}}"],
)
def test_bounds_must_be_numbers(constraint: str) -> None:
    kind = "number" if "range" in constraint else "string"

    with pytest.raises(StackValidationFailed, match=r'^template:2 parameters\.p\.constraints\[0\]: '
                                                    r'Invalid "(length|range)" constraint'):
        one(f"{{type: {kind}, constraints: [{constraint}]}}")


def test_allowed_values_must_be_a_list() -> None:
    with pytest.raises(StackValidationFailed, match='Invalid "allowed_values" constraint'):
        one("{type: string, constraints: [{allowed_values: abc}]}")


def test_allowed_pattern_must_be_a_valid_regex() -> None:
    with pytest.raises(StackValidationFailed) as caught:
        one("{type: string, constraints: [{allowed_pattern: '[a-'}]}")

    assert str(caught.value).startswith(
        "template:2 parameters.p.constraints[0]: Invalid \"allowed_pattern\" constraint: "
    )


# --- values for a stack ------------------------------------------------------------------

DECLARED = """\
parameters:
  name: {type: string}
  count: {type: number, default: 1}
  optional: {type: string, default: null}
"""


def test_given_values_win_over_defaults() -> None:
    values = resolve_values(schemas(DECLARED), {"name": "web", "count": "3", "optional": "x"})

    assert values == {"name": "web", "count": 3, "optional": "x"}


def test_defaults_fill_what_is_not_given() -> None:
    values = resolve_values(schemas(DECLARED), {"name": "web", "optional": ""})

    assert values == {"name": "web", "count": 1, "optional": ""}


def test_a_value_is_given_else_an_environment_default_else_the_templates() -> None:
    # Unconverted, as stored; a null is not given, and one with no value is left out.
    declared = schemas(DECLARED)

    assert raw_values(declared, {"name": None, "count": "3"},
                      {"name": "env-web", "count": "9", "optional": None}) == {
        "name": "env-web", "count": "3"}
    assert raw_values(declared, {}) == {"count": 1}
    assert resolve_values(declared, {"count": "3"},
                          defaults={"name": "env-web", "optional": "o"}) == {
        "name": "env-web", "count": 3, "optional": "o"}


def test_missing_parameter() -> None:
    with pytest.raises(UserParameterMissing) as caught:
        resolve_values(schemas(DECLARED), {"optional": "x"})

    assert caught.value.message == "The Parameter (name) was not provided."
    assert str(caught.value.location) == "template:2 parameters.name"


def test_a_null_default_is_no_default() -> None:
    with pytest.raises(UserParameterMissing, match=r"The Parameter \(optional\) was not "):
        resolve_values(schemas(DECLARED), {"name": "web"})


def test_unknown_parameter() -> None:
    with pytest.raises(UnknownUserParameter) as caught:
        resolve_values(schemas(DECLARED), {"name": "a", "optional": "b", "bogus": 1})

    assert str(caught.value) == "The Parameter (bogus) was not defined in template."


def test_given_values_are_checked() -> None:
    with pytest.raises(StackValidationFailed, match="Value 'lots' is not a number"):
        resolve_values(schemas(DECLARED), {"name": "a", "optional": "b", "count": "lots"})


# --- hidden parameters -------------------------------------------------------------------

HIDDEN = """\
parameters:
  user: {type: string}
  password:
    type: string
    hidden: true
    constraints: [{length: {min: 8}}]
  port: {type: number, hidden: true, default: 5432}
"""


def test_masked_replaces_hidden_values_only() -> None:
    declared = schemas(HIDDEN)
    values = resolve_values(declared, {"user": "admin", "password": "s3cret-pw"})

    assert masked(declared, values) == {"user": "admin", "password": MASK, "port": MASK}
    assert values["password"] == "s3cret-pw"


def test_masked_leaves_undeclared_keys() -> None:
    assert masked(schemas(HIDDEN), {"OS::stack_name": "s"}) == {"OS::stack_name": "s"}


def test_a_rejected_hidden_value_is_not_shown() -> None:
    declared = schemas(HIDDEN)

    with pytest.raises(StackValidationFailed) as caught:
        declared["port"].convert("pw-as-port")

    assert "pw-as-port" not in str(caught.value)
    assert caught.value.message == "Parameter 'port' is invalid: Value '******' is not a number"


def test_a_hidden_value_failing_a_constraint_is_not_shown() -> None:
    declared = schemas(HIDDEN)

    with pytest.raises(StackValidationFailed) as caught:
        declared["password"].convert("short")

    assert "short" not in str(caught.value)
    assert caught.value.message == (
        "Parameter 'password' is invalid: the value does not satisfy its constraints"
    )


def test_hidden_values_longest_first() -> None:
    declared = schemas(HIDDEN)
    values = {"user": "admin", "password": "s3cret-pw", "port": 5432}

    assert hidden_values(declared, values) == ("s3cret-pw", "5432")


def test_hidden_values_skip_empty_text() -> None:
    declared = schemas("parameters:\n  p: {type: string, hidden: true}\n")

    assert hidden_values(declared, {"p": ""}) == ()


STRUCTURED = """\
parameters:
  conf: {type: json, hidden: true}
  pins: {type: comma_delimited_list, hidden: true}
"""


def test_hidden_values_hold_every_scalar_leaf_of_a_structured_value() -> None:
    declared = schemas(STRUCTURED)
    values = resolve_values(declared, {
        "conf": '{"k": "s3cr3tvalue", "n": [12345678, "ab", 1.5], "b": true, "z": null}',
        "pins": "aaaa-pin1,bbbb-pin2"})

    found = hidden_values(declared, values)

    # The whole value's text stays a secret too, and a boolean or null is no secret.
    assert set(found) == {"s3cr3tvalue", "12345678", "ab", "1.5", "aaaa-pin1",
                          "bbbb-pin2", str(values["conf"]), str(values["pins"])}
    assert list(found) == sorted(found, key=len, reverse=True)


def test_the_hidden_values_given_hold_the_leaves_of_what_was_given_as_text() -> None:
    section = {"conf": {"type": "json", "hidden": True},
               "pins": {"type": "comma_delimited_list", "hidden": True,
                        "default": "aaaa-pin1,bbbb-pin2"},
               "unset": {"type": "string", "hidden": True}}
    declared = parse_schemas(document({"parameters": section}), section)

    found = given_hidden_values(declared, {"conf": '{"k": "s3cr3tvalue"}'})

    # Stored as the tenant gave them (text), read as get_param reads them; no "None" for
    # the parameter without a value.
    assert set(found) == {'{"k": "s3cr3tvalue"}', str({"k": "s3cr3tvalue"}), "s3cr3tvalue",
                          "aaaa-pin1,bbbb-pin2", str(["aaaa-pin1", "bbbb-pin2"]),
                          "aaaa-pin1", "bbbb-pin2"}


def test_redact_masks_the_leaves_of_a_hidden_structured_value() -> None:
    declared = schemas(STRUCTURED)
    secrets = hidden_values(declared, resolve_values(declared, {
        "conf": {"k": "s3cr3tvalue", "n": 12345678}, "pins": ["aaaa-pin1", "bbbb-pin2"]}))

    assert redact({"p": {"k": "s3cr3tvalue", "n": 12345678},
                   "q": ["aaaa-pin1", "bbbb-pin2"],
                   "r": 'conf={"k": "s3cr3tvalue"} pins=aaaa-pin1,bbbb-pin2'}, secrets) == {
        "p": {"k": MASK, "n": MASK}, "q": [MASK, MASK],
        "r": f'conf={{"k": "{MASK}"}} pins={MASK},{MASK}'}


def test_a_short_leaf_is_masked_only_where_it_stands_alone() -> None:
    # A json value holds many short values ("ab", 12): masked inside every word, they
    # would leave nothing readable and show where they are not.
    declared = schemas(STRUCTURED)
    secrets = hidden_values(declared, {"conf": {"k": "ab", "n": 12}})
    value = {"alone": "ab", "quoted": '{"k": "ab"}', "words": "lab grab ab-c x-ab abc",
             "number": 12, "other": 123}

    assert redact(value, secrets) == {
        "alone": MASK, "quoted": f'{{"k": "{MASK}"}}', "words": "lab grab ab-c x-ab abc",
        "number": MASK, "other": 123}


def test_a_short_whole_hidden_value_is_masked_everywhere() -> None:
    declared = schemas(STRUCTURED + "  pw: {type: string, hidden: true}\n")
    secrets = hidden_values(declared, {"pw": "ab", "conf": ["ab"]})

    assert redact("user-ab lab", secrets) == f"user-{MASK} l{MASK}"


def test_redact_masks_embedded_secrets_anywhere() -> None:
    value = {"url": "postgres://admin:s3cret-pw@db:5432/x", "list": ["s3cret-pw", 5432],
             "nested": {"t": ("the s3cret-pw",)}}

    assert redact(value, ("s3cret-pw", "5432")) == {
        "url": f"postgres://admin:{MASK}@db:{MASK}/x",
        "list": [MASK, MASK],  # a hidden number stays a number until masked
        "nested": {"t": [f"the {MASK}"]},
    }


def test_redact_without_secrets_returns_the_value_itself() -> None:
    value = {"a": ["b"]}

    assert redact(value, ()) is value


def test_a_custom_constraint_is_parsed_unbound() -> None:
    schema = one("{type: string, constraints: [{custom_constraint: ip_addr}]}")

    (constraint, _), = schema.constraints
    assert isinstance(constraint, Custom) and constraint.name == "ip_addr"
    assert constraint.checker is None
    assert constraint.describe() == {"custom_constraint": "ip_addr"}


# --- allowed_pattern (HOT) and AllowedPattern (CFN) ----------------------------------------
# Heat's matching rule, Python's ``re`` syntax, and a time budget, so that a pattern that
# backtracks for ever is a 400 at its line instead of a request that never ends.

BOMB, BOMB_INPUT = r"(a|aa)+$", "a" * 40 + "b"

HOT = f"""heat_template_version: 2021-04-16
parameters:
  name:
    type: string
    constraints:
      - allowed_pattern: "{BOMB}"
        description: letters only
"""

CFN = f"""AWSTemplateFormatVersion: 2010-09-09
Parameters:
  Name:
    Type: String
    AllowedPattern: "{BOMB}"
"""


@pytest.fixture
def short() -> Iterator[None]:
    with budget.evaluation(dataclasses.replace(budget.DEFAULT, evaluation_timeout_seconds=0.05)):
        yield


@pytest.mark.timeout(60)
def test_a_backtracking_hot_pattern_is_refused_at_the_constraints_line(short: None) -> None:
    template = load(document(HOT))

    with pytest.raises(EvaluationTooLong) as raised:
        resolve_values(template.parameters, {"name": BOMB_INPUT})

    # The constraint's line, and not its description: the value may well be fine.
    assert str(raised.value).startswith(
        f'template:6 parameters.name.constraints[0]: Matching the pattern "{BOMB}" took '
        "too long")


@pytest.mark.timeout(60)
def test_a_backtracking_cfn_pattern_is_refused_at_its_line(short: None) -> None:
    template = load(document(CFN))

    with pytest.raises(EvaluationTooLong) as raised:
        resolve_values(template.parameters, {"Name": BOMB_INPUT})

    assert str(raised.value).startswith("template:5 Parameters.Name.AllowedPattern: ")


@pytest.mark.timeout(60)
def test_a_default_is_checked_with_the_same_budget_when_the_template_is_read(
        short: None) -> None:
    with pytest.raises(EvaluationTooLong):
        load(document(HOT.replace("    type: string\n",
                                  f"    type: string\n    default: {BOMB_INPUT}\n")))


def test_the_match_is_heats_first_match_reaching_the_end() -> None:
    template = load(document(HOT.replace(BOMB, "a|ab")))

    assert resolve_values(template.parameters, {"name": "a"}) == {"name": "a"}
    with pytest.raises(StackValidationFailed, match="Parameter 'name' is invalid: letters only"):
        resolve_values(template.parameters, {"name": "ab"})


def test_a_pattern_too_deep_to_compile_is_an_invalid_constraint() -> None:
    deep = "(" * 2000 + ")" * 2000

    with pytest.raises(StackValidationFailed,
                       match='Invalid "allowed_pattern" constraint: the pattern is too '
                             "complex"):
        load(document(HOT.replace(BOMB, deep)))
    with pytest.raises(StackValidationFailed, match="Invalid AllowedPattern: the pattern"):
        load(document(CFN.replace(BOMB, deep)))
