"""engine.template.loader: the count a resource limit compares, and what no column holds."""

from __future__ import annotations

import pytest

from engine.errors import StackValidationFailed
from engine.template.loader import load, written_resources
from engine.template.parse import from_data, parse_text


@pytest.mark.parametrize("text, count", [
    ("heat_template_version: 2018-08-31\nresources: {a: {type: x}, b: {type: y}}\n", 2),
    ("AWSTemplateFormatVersion: 2010-09-09\nResources: {a: {Type: x}}\n"
     "resources: {b: 1, c: 2}\n", 1),
    ("HeatTemplateFormatVersion: 2012-12-12\nResources: {a: 1, b: 2, c: 3}\n", 3),
    # Resources a condition leaves out count, as Heat counts the section as written.
    ("heat_template_version: 2018-08-31\nconditions: {never: false}\n"
     "resources: {a: {type: x, condition: never}}\n", 1),
    ("heat_template_version: 2018-08-31\nresources: [a, b]\n", 0),
    ("heat_template_version: 2018-08-31\n", 0),
    ("- a\n- b\n", 0),
    ("", 0),
])
def test_written_resources(text: str, count: int) -> None:
    assert written_resources(parse_text(text)) == count


def test_written_resources_of_an_object() -> None:
    doc = from_data({"heat_template_version": "2018-08-31",
                     "resources": {f"r{i}": {} for i in range(7)}})

    assert written_resources(doc) == 7


@pytest.mark.parametrize("resource, what", [
    ("  " + "r" * 256 + ": {type: OS::Heat::None}", "name"),
    ("  r: {type: " + "T" * 256 + "}", "type"),
])
def test_names_longer_than_their_columns_are_refused(resource: str, what: str) -> None:
    text = f"heat_template_version: 2018-08-31\nresources:\n{resource}\n"

    with pytest.raises(StackValidationFailed) as caught:
        load(parse_text(text))

    assert caught.value.message == f"The resource {what} is longer than 255 characters."
    assert caught.value.location is not None and caught.value.location.line == 3


def test_names_as_long_as_their_columns_load() -> None:
    text = f"heat_template_version: 2018-08-31\nresources:\n  {'r' * 255}: {{type: x}}\n"

    assert list(load(parse_text(text)).resources) == ["r" * 255]
