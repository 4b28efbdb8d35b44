"""engine.template.functions: parsing calls into nodes, and evaluating them in a Scope."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

import pytest

from engine.errors import InvalidTemplateReference, StackValidationFailed
from engine.resources.base import select_attribute
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
from engine.template.parse import from_data, parse_text
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

    def attribute(self, resource: str, attribute: str, path: Sequence[Any] = ()) -> Any:
        if resource in self.pending:
            raise Deferred(resource)
        return select_attribute(self.attrs[(resource, attribute)], path)

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


# --- odd values at run time ----------------------------------------------------------------

# Values a parameter or an attribute may carry into a function at run time: every JSON
# kind, empty ones, a map whose keys do not sort together, a huge integer.
ODD = [None, True, 0, 1.5, 2**70, "", "a,b", "%x%", "sha256", [], [1, "a"], [[1]],
       [{"a": 1}], {}, {"a": [1]}, {1: 2, "a": 1}]

# Each function with two of its arguments taken from ODD.
CALLS = {
    "str_replace": lambda a, b: {"template": a, "params": b},
    "str_replace_vstrict": lambda a, b: {"template": "%x%", "params": {"%x%": a, "b": b}},
    "str_split": lambda a, b: [a, b, 0],
    "list_join": lambda a, b: [a, b, [a, b]],
    "list_concat_unique": lambda a, b: [a, b],
    "repeat": lambda a, b: {"for_each": {"%x%": a, "%y%": b}, "template": {"k": "%x%"}},
    "digest": lambda a, b: [a, b],
    "map_merge": lambda a, b: [a, b],
    "map_replace": lambda a, b: [{"a": 1, "b": [1]}, {"keys": a, "values": b}],
    "make_url": lambda a, b: {"host": a, "port": b, "query": a},
    "filter": lambda a, b: [a, b],
    "contains": lambda a, b: [a, b],
    "yaql": lambda a, b: {"expression": "$.data.a + $.data.b", "data": {"a": a, "b": b}},
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_odd_values_at_run_time_are_the_functions_own_refusal(name: str) -> None:
    """Whatever a parameter or attribute brings, a function answers or refuses with a
    StackValidationFailed at its location (a 400 at create, a failed resource or an
    output error at run time), never a bare Python error."""
    version = find_hot_version("wallaby")
    assert version is not None
    for a, b in itertools.product(ODD, ODD):
        try:
            value = parse_value(ParseContext(from_data({"value": None}), version),
                                {name: CALLS[name](a, b)}, ("value",))
            json.dumps(resolve(value, FakeScope()))
        except StackValidationFailed as exc:
            assert exc.location is not None and exc.location.path.startswith("value"), exc


def test_a_digest_algorithm_hashlib_does_not_know_is_refused() -> None:
    with pytest.raises(StackValidationFailed) as caught:
        evaluate("value: {digest: [crc32, abc]}\n", FakeScope())

    assert caught.value.message.startswith("Algorithm must be one of ")
    assert str(caught.value.location) == "template:1 value.digest"
