"""engine.template.functions: parsing calls into nodes, and evaluating them in a Scope."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import InvalidTemplateReference
from engine.template.functions import (
    Deferred,
    GetAttr,
    GetParam,
    GetResource,
    ParseContext,
    invalid_reference,
    iter_references,
    parse_value,
    resolve,
    resource_dependencies,
)
from engine.template.functions.strings import ListJoin, StrReplace
from engine.template.parse import parse_text
from engine.template.versions import find_hot_version


class FakeScope:
    """Answers from dictionaries; a resource listed in ``pending`` does not exist yet."""

    def __init__(self, params: dict[str, Any] | None = None,
                 ids: dict[str, Any] | None = None,
                 attributes: dict[tuple[str, str], Any] | None = None,
                 pending: frozenset[str] = frozenset()) -> None:
        self.params = params or {}
        self.ids = ids or {}
        self.attrs = attributes or {}
        self.pending = pending

    def param(self, name: str) -> Any:
        return self.params[name]

    def reference_id(self, resource: str) -> Any:
        if resource in self.pending:
            raise Deferred(resource)
        return self.ids[resource]

    def attribute(self, resource: str, attribute: str) -> Any:
        if resource in self.pending:
            raise Deferred(resource)
        return self.attrs[(resource, attribute)]

    def attributes(self, resource: str) -> Any:
        raise Deferred(resource)


def parse(text: str, version: str = "2018-08-31") -> Any:
    """The value in ``text`` (YAML) with its calls parsed, paths starting at ``value``."""
    doc = parse_text(text)
    hot = find_hot_version(version)
    assert hot is not None
    return parse_value(ParseContext(doc, hot), doc.data["value"], ("value",))


def evaluate(text: str, scope: FakeScope) -> Any:
    return resolve(parse(text), scope)


# --- parsing -----------------------------------------------------------------------------


def test_plain_data_is_left_alone() -> None:
    assert parse("value: {a: [1, {b: two}], c: null}\n") == {"a": [1, {"b": "two"}], "c": None}


def test_calls_become_nodes_with_their_location() -> None:
    value = parse("value:\n"
                  "  name: {get_param: stack_name}\n"
                  "  ids:\n"
                  "    - {get_resource: server}\n")

    assert isinstance(value["name"], GetParam)
    assert value["name"].name == "stack_name"
    assert str(value["name"].location) == "template:2 value.name.get_param"
    assert isinstance(value["ids"][0], GetResource)
    assert str(value["ids"][0].location) == "template:4 value.ids[0].get_resource"


def test_get_attr_parses_a_path() -> None:
    value = parse("value: {get_attr: [server, networks, private, 0]}\n")

    assert isinstance(value, GetAttr)
    assert (value.resource, value.attribute, value.path) == ("server", "networks",
                                                             ("private", 0))


def test_nested_calls_are_parsed() -> None:
    value = parse("value:\n"
                  "  str_replace:\n"
                  "    template: $who\n"
                  "    params: {$who: {get_param: name}}\n")

    assert isinstance(value, StrReplace)
    assert isinstance(value.params["$who"], GetParam)
    assert str(value.params["$who"].location) == (
        "template:4 value.str_replace.params.$who.get_param"
    )


def test_a_map_with_more_keys_is_not_a_call() -> None:
    value = parse("value: {get_param: a, other: b}\n")

    assert value == {"get_param": "a", "other": "b"}


def test_a_function_the_version_does_not_know_is_data() -> None:
    value = parse("value: {repeat: {for_each: {x: [1]}, template: x}}\n", "2014-10-16")

    assert value == {"repeat": {"for_each": {"x": [1]}, "template": "x"}}


def test_references_are_found_everywhere() -> None:
    value = parse("value:\n"
                  "  a: {get_param: p}\n"
                  "  b: [{get_resource: r1}]\n"
                  "  c: {get_attr: [r2, out, {get_param: key}]}\n"
                  "  d: {list_join: [',', [{get_resource: r3}]]}\n")

    found = {(r.kind, r.name, r.attribute) for r in iter_references(value)}

    assert found == {("param", "p", None), ("resource", "r1", None),
                     ("resource", "r2", "out"), ("param", "key", None),
                     ("resource", "r3", None)}
    assert resource_dependencies(value) == frozenset({"r1", "r2", "r3"})


def test_plain_data_has_no_references() -> None:
    assert resource_dependencies({"a": [1, "get_resource"]}) == frozenset()


def test_invalid_reference_message() -> None:
    (ref,) = iter_references(parse("value: {get_resource: nope}\n"))

    exc = invalid_reference(ref, "resources.a")

    assert isinstance(exc, InvalidTemplateReference)
    assert str(exc) == ('template:1 value.get_resource: The specified reference "nope" '
                        "(in resources.a) is incorrect.")


# --- get_param, get_resource, get_attr ---------------------------------------------------


def test_get_param() -> None:
    assert evaluate("value: {get_param: flavor}\n", FakeScope({"flavor": "m1.small"})) == (
        "m1.small"
    )


def test_get_param_with_a_path_into_maps_and_lists() -> None:
    scope = FakeScope({"conf": {"nets": [{"name": "a"}, {"name": "b"}]}})

    assert evaluate("value: {get_param: [conf, nets, 1, name]}\n", scope) == "b"
    assert evaluate("value: {get_param: [conf, nets, '0', name]}\n", scope) == "a"


def test_get_resource() -> None:
    assert evaluate("value: {get_resource: server}\n", FakeScope(ids={"server": "uuid-1"})) == (
        "uuid-1"
    )


def test_get_attr_with_a_path() -> None:
    scope = FakeScope(attributes={("server", "networks"): {"private": ["10.0.0.5"]}})

    assert evaluate("value: {get_attr: [server, networks, private, 0]}\n", scope) == "10.0.0.5"


def test_a_resource_that_does_not_exist_yet_defers() -> None:
    scope = FakeScope(pending=frozenset({"server"}))

    with pytest.raises(Deferred):
        evaluate("value: {a: [{get_attr: [server, name]}]}\n", scope)


# --- str_replace -------------------------------------------------------------------------


def test_resolve_walks_containers() -> None:
    value = parse("value: {name: {get_param: n}, ids: [{get_resource: r}, 7]}\n")

    assert resolve(value, FakeScope({"n": "x"}, {"r": "id-1"})) == {"name": "x",
                                                                    "ids": ["id-1", 7]}


def test_nodes_are_frozen_values() -> None:
    first = parse("value: {list_join: [',', [a]]}\n")
    second = parse("value: {list_join: [',', [a]]}\n")

    assert isinstance(first, ListJoin)
    assert first == second
