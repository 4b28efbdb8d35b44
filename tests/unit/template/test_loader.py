"""engine.template.loader.written_resources: the count a resource limit compares."""

from __future__ import annotations

import pytest

from engine.template.loader import written_resources
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
