"""engine.template.rendering: a stored template as YAML text, in its own order, hidden
parameters' defaults masked, and the line of each resource, parameter and output in that
text."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from engine.template.parse import parse_text
from engine.template.rendering import Renderings, render

HOT = """\
heat_template_version: 2018-08-31
description: |
  Two lines
  of description
parameters:
  secret: {type: string, hidden: true, default: s3cret}
  plain: {type: string, default: visible}
  required: {type: string, hidden: true}
resources:
  zeta: {type: OS::Heat::None, depends_on: [alpha]}
  alpha:
    type: OS::Heat::Value
    properties:
      value: LONG
  "needs: quoting": {type: OS::Heat::None}
outputs:
  out: {value: {get_attr: [alpha, value]}}
""".replace("LONG", "folded over lines, being longer than a rendered line " * 3)


def stored(text: str) -> Any:
    return parse_text(text).data


def test_the_text_reads_back_as_the_template_in_its_order() -> None:
    template = stored(HOT)
    rendered = render(template)

    secret = {**template["parameters"]["secret"], "default": "******"}
    assert yaml.safe_load(rendered.text) == {
        **template, "parameters": {**template["parameters"], "secret": secret}}
    assert list(yaml.safe_load(rendered.text)["resources"]) == ["zeta", "alpha",
                                                                "needs: quoting"]


def test_each_entry_has_the_line_of_its_key() -> None:
    rendered = render(stored(HOT))
    lines = rendered.text.splitlines()

    assert set(rendered.lines["resources"]) == {"zeta", "alpha", "needs: quoting"}
    assert set(rendered.lines["parameters"]) == {"secret", "plain", "required"}
    assert set(rendered.lines["outputs"]) == {"out"}
    for entries in rendered.lines.values():
        for name, line in entries.items():
            assert yaml.safe_load(lines[line - 1].strip() + " null") == {name: None}
    assert rendered.lines["resources"]["zeta"] < rendered.lines["resources"]["alpha"]


def test_hidden_defaults_are_masked_and_nothing_else_changes() -> None:
    template = stored(HOT)
    rendered = render(template)

    assert "s3cret" not in rendered.text
    shown = yaml.safe_load(rendered.text)
    assert shown["parameters"] == {
        "secret": {"type": "string", "hidden": True, "default": "******"},
        "plain": {"type": "string", "default": "visible"},
        "required": {"type": "string", "hidden": True}}  # no default to mask: none added
    assert template["parameters"]["secret"]["default"] == "s3cret"  # not changed in place


@pytest.mark.parametrize("version", ["AWSTemplateFormatVersion: '2010-09-09'",
                                     "HeatTemplateFormatVersion: '2012-12-12'"])
def test_noecho_defaults_are_masked_as_the_template_declares(version: str) -> None:
    # Which parameters hide is the template's own, read by the one reader of a stored
    # template's parameters (engine.template.stored_parameters), whatever the format.
    rendered = render(stored(f"{version}\n"
                             "Parameters: {Key: {Type: String, NoEcho: true, Default: s3cret},\n"
                             "             Plain: {Type: String, Default: visible}}\n"))

    assert "s3cret" not in rendered.text
    shown = yaml.safe_load(rendered.text)["Parameters"]
    assert (shown["Key"]["Default"], shown["Plain"]["Default"]) == ("******", "visible")


def test_a_cfn_template_keeps_its_names_and_its_lines_are_under_hots() -> None:
    template = stored("AWSTemplateFormatVersion: '2010-09-09'\n"
                      "Parameters: {Key: {Type: String, NoEcho: 'true', Default: k}}\n"
                      "Resources: {R: {Type: 'OS::Heat::None'}}\n")
    rendered = render(template)

    assert yaml.safe_load(rendered.text)["Parameters"]["Key"]["Default"] == "******"
    lines = rendered.text.splitlines()
    assert rendered.lines == {"resources": {"R": lines.index("  R:") + 1},
                              "parameters": {"Key": lines.index("  Key:") + 1},
                              "outputs": {}}


def test_an_empty_template_is_empty_text() -> None:
    assert render({}).text == ""
    assert render({}).lines == {"resources": {}, "parameters": {}, "outputs": {}}


@pytest.mark.parametrize("mark", ["\u2028", "\u2029", "\x85"],
                         ids=["line-separator", "paragraph-separator", "next-line"])
def test_lines_are_the_texts_newline_lines_after_a_unicode_line_break(mark: str) -> None:
    # YAML counts a line at each of these, a client splitting on "\n" does not: the
    # text holds them escaped, so both count the same lines.
    template = {"heat_template_version": "2018-08-31", "description": f"one{mark}two",
                "parameters": {f"p{mark}q": {"type": "string", "default": f"a{mark}b"}},
                "resources": {"after": {"type": "OS::Heat::None"}},
                "outputs": {"out": {"value": f"x{mark}y"}}}
    rendered = render(template)
    lines = rendered.text.split("\n")

    assert mark not in rendered.text
    assert yaml.safe_load(rendered.text) == template
    assert lines[rendered.lines["resources"]["after"] - 1] == "  after:"
    assert lines[rendered.lines["outputs"]["out"] - 1] == "  out:"
    assert f"p{mark}q" in yaml.safe_load(lines[rendered.lines["parameters"][f"p{mark}q"] - 1]
                                         .strip().removeprefix("? ") + ": null")


def test_renderings_render_a_template_once_while_it_is_cached() -> None:
    renderings = Renderings(size=1)
    template = stored(HOT)

    first = renderings.render(template)

    assert first == render(template)
    assert renderings.render(stored(HOT)) is first  # an equal template: its digest
    assert renderings.render({**template, "description": "other"}) is not first
    assert renderings.render(template) is not first  # pushed out: at most size kept
