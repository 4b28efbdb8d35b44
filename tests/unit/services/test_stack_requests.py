"""engine.services.stack_requests: every field of a stack request body refused, as Heat's
API refuses it, before anything reads it."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import BadRequest
from engine.services import stack_requests
from engine.services.stack_requests import check_body, refuse_converge, tags, timeout_mins


@pytest.mark.parametrize("body, message", [
    ({"template": 5}, "Template not in valid format: the template must be a map or its YAML "
                      "or JSON text."),
    ({"template": ["a"]}, "Template not in valid format"),
    ({"parameters": [1]}, "parameters must be a map"),
    ({"parameters": "a=b"}, "parameters must be a map"),
    ({"files": "x"}, "files must be a map"),
    ({"files": {"a.yaml": 1}}, "files must map each file name to its contents (text)"),
    ({"environment": 5}, "Environment not in valid format"),
    ({"environment": ["parameters"]}, "Environment not in valid format"),
    ({"environment_files": "e.yaml"}, "environment_files must be a list of file names"),
    ({"environment_files": [1]}, "environment_files must be a list of file names"),
    ({"timeout_mins": float("inf")}, "Only integer is acceptable by 'timeout_mins'."),
    ({"disable_rollback": "yes"}, 'Unrecognized value "yes" for "disable_rollback"'),
    ({"disable_rollback": 1}, 'Unrecognized value "1" for "disable_rollback"'),
    ({"converge": [True]}, "Unrecognized value \"[True]\" for \"converge\""),
    ({"tags": 5}, "tags must be a comma-separated string of tags"),
    ({"tags": ["a", 1]}, "tags must be a comma-separated string of tags"),
    ({"clear_parameters": "p"}, "clear_parameters must be a list of parameter names"),
])
def test_a_field_of_the_wrong_type_is_a_400(body: dict[str, Any], message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        check_body(body)

    assert caught.value.message.startswith(message)


def test_a_body_of_the_right_types_passes() -> None:
    check_body({"stack_name": "s", "template": {"heat_template_version": "2018-08-31"},
                "parameters": {"p": [1]}, "files": {"f": "text"}, "environment": "{}",
                "environment_files": ["f"], "timeout_mins": "5", "disable_rollback": "True",
                "tags": "a,b", "converge": False, "clear_parameters": ["p"],
                "unknown_key": object()})  # unknown keys are ignored, as in Heat


@pytest.mark.parametrize("value, expected", [
    (None, None), ("", None), (0, None), ("0", None), (5, 5), ("5", 5),
    (2**31 - 1, 2**31 - 1),
])
def test_timeout_mins(value: Any, expected: int | None) -> None:
    assert timeout_mins(value) == expected


@pytest.mark.parametrize("value", [
    True, 1.5, 5.0, float("inf"), float("nan"), "1.5", " 5", "5 ", "+5", "1_0", "١", "x",
    "Infinity", [5], {"m": 5}, "9" * 5000,
])
def test_timeout_mins_is_the_text_of_an_integer(value: Any) -> None:
    """Heat's ``extract_int``: ``str(int(value)) == str(value)``, so neither a float, nor
    a padded or signed text, nor other digits than ASCII ones."""
    with pytest.raises(BadRequest, match="^Only integer is acceptable by 'timeout_mins'.$"):
        timeout_mins(value)


@pytest.mark.parametrize("value, message", [
    (-1, "Value '-1' is invalid for 'timeout_mins' which only accepts non-negative integer."),
    ("-5", "Value '-5' is invalid for 'timeout_mins' which only accepts non-negative "
           "integer."),
    (2**31, "Value '2147483648' is invalid for 'timeout_mins' which only accepts integers up "
            "to 2147483647."),
    (2**63, "Value '9223372036854775808' is invalid for 'timeout_mins' which only accepts "
            "integers up to 2147483647."),
])
def test_timeout_mins_range(value: Any, message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        timeout_mins(value)

    assert caught.value.message == message


@pytest.mark.parametrize("value, expected", [
    (None, []), ("", []), ([], []), ("a,b", ["a", "b"]), (" a , ,b ", ["a", "b"]),
    (["a", " b"], ["a", "b"]), ("x" * 80, ["x" * 80]),
])
def test_tags(value: Any, expected: list[str]) -> None:
    assert tags(value) == expected


def test_a_tag_over_80_characters_is_refused_in_heats_words() -> None:
    with pytest.raises(BadRequest) as caught:
        tags("a," + "x" * 81)

    assert caught.value.message == f'Invalid tag, "{"x" * 81}" is longer than 80 characters'


def test_converge_is_for_updates_only() -> None:
    refuse_converge({"template": "x"})
    with pytest.raises(BadRequest) as caught:
        refuse_converge({"converge": False})

    assert caught.value.message == ("converge flag only supported in stack update (or update "
                                    "preview) request.")


def test_files_copies_the_map() -> None:
    given = {"files": {"a": "x"}}

    found = stack_requests.files(given)
    found["b"] = "y"

    assert given == {"files": {"a": "x"}}
    assert stack_requests.files({}) == {}
