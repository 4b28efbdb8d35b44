"""engine.template.functions: parsing calls into nodes, and evaluating them in a Scope."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import InvalidTemplateReference, StackValidationFailed
from engine.template.functions import (
    Deferred,
    GetAttr,
    GetParam,
    GetResource,
    ListJoin,
    StrReplace,
    invalid_reference,
    iter_references,
    parse_value,
    resolve,
    resource_dependencies,
)
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
        self.attributes = attributes or {}
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
        return self.attributes[(resource, attribute)]


def parse(text: str, version: str = "2018-08-31") -> Any:
    """The value in ``text`` (YAML) with its calls parsed, paths starting at ``value``."""
    doc = parse_text(text)
    hot = find_hot_version(version)
    assert hot is not None
    return parse_value(doc, doc.data["value"], ("value",), hot)


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


def test_unimplemented_function_is_refused_with_its_location() -> None:
    text = ("value:\n"
            "  repeat:\n"
            "    for_each: {'%x%': [a, b]}\n"
            "    template: '%x%'\n")

    with pytest.raises(StackValidationFailed) as caught:
        parse(text, "2015-04-30")

    assert str(caught.value) == (
        'template:2 value.repeat: The function "repeat" is not supported by Kiln yet.'
    )


def test_a_function_the_version_does_not_know_is_data() -> None:
    value = parse("value: {repeat: {for_each: {x: [1]}, template: x}}\n", "2014-10-16")

    assert value == {"repeat": {"for_each": {"x": [1]}, "template": "x"}}


def test_cfn_function_in_an_old_version_is_refused() -> None:
    with pytest.raises(StackValidationFailed,
                       match='The function "Fn::Select" is not supported by Kiln yet.'):
        parse("value: {Fn::Select: [0, [a]]}\n", "2014-10-16")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("value: {get_param: []}\n",
         'Arguments to "get_param" must be a parameter name or a list starting with one'),
        ("value: {get_param: {get_param: x}}\n",
         'Arguments to "get_param" must be a parameter name or a list starting with one'),
        ("value: {get_resource: [a]}\n", 'Argument to "get_resource" must be a resource name'),
        ("value: {get_attr: [server]}\n",
         'Arguments to "get_attr" must be of the form [resource_name, attribute, (path), ...]'),
        ("value: {get_attr: server.name}\n",
         'Arguments to "get_attr" must be of the form [resource_name, attribute, (path), ...]'),
        ("value: {str_replace: {template: x}}\n",
         'Arguments to "str_replace" must be a map with the keys "template" and "params"'),
        ("value: {list_join: [',']}\n",
         'Arguments to "list_join" must be of the form [delimiter, list, ...]'),
    ],
)
def test_malformed_arguments(text: str, message: str) -> None:
    with pytest.raises(StackValidationFailed) as caught:
        parse(text)

    assert caught.value.message == message
    assert caught.value.location is not None
    assert caught.value.location.line == 1


# --- references --------------------------------------------------------------------------


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


def test_get_param_with_a_path_that_does_not_exist() -> None:
    scope = FakeScope({"conf": {"nets": []}})

    with pytest.raises(StackValidationFailed) as caught:
        evaluate("value: {get_param: [conf, nets, 3]}\n", scope)

    assert str(caught.value) == 'template:1 value.get_param: path component "3" not found'


def test_get_param_path_cannot_index_a_string() -> None:
    with pytest.raises(StackValidationFailed, match='path component "0" not found'):
        evaluate("value: {get_param: [s, 0]}\n", FakeScope({"s": "text"}))


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


def str_replace(template: str, params: dict[str, Any]) -> Any:
    return resolve(parse_value_for(template, params), FakeScope())


def parse_value_for(template: str, params: dict[str, Any]) -> Any:
    doc = parse_text("value: x\n")
    hot = find_hot_version("rocky")
    assert hot is not None
    return parse_value(doc, {"str_replace": {"template": template, "params": params}},
                       ("value",), hot)


def test_str_replace() -> None:
    assert str_replace("Hello $name!", {"$name": "world"}) == "Hello world!"


def test_str_replace_replaces_longest_keys_first() -> None:
    assert str_replace("$var and $var_long", {"$var": "S", "$var_long": "L"}) == "S and L"


def test_str_replace_encodes_maps_and_lists_as_json() -> None:
    result = str_replace("m=M l=L", {"M": {"a": 1}, "L": ["x", 2]})

    assert result == 'm={"a": 1} l=["x", 2]'


def test_str_replace_text_of_scalars() -> None:
    assert str_replace("a b c d", {"a": 3, "b": 2.5, "c": True, "d": None}) == "3 2.5 true "


def test_str_replace_does_not_substitute_inside_replaced_values() -> None:
    # Heat splits on each key and joins with its value, so a value that happens to contain
    # another key (a password with "$host" in it, say) is never rewritten.
    assert str_replace("$a $b", {"$a": "x$b", "$b": "y"}) == "x$b y"
    assert str_replace("$user@$host", {"$user": "me$host", "$host": "db"}) == "me$host@db"


def test_str_replace_refuses_an_empty_placeholder() -> None:
    with pytest.raises(StackValidationFailed,
                       match='"str_replace" param placeholders must not be empty'):
        str_replace("abc", {"": "x"})


def test_str_replace_with_evaluated_arguments() -> None:
    scope = FakeScope({"greeting": "Hi %who%", "who": "there"})
    text = ("value:\n"
            "  str_replace:\n"
            "    template: {get_param: greeting}\n"
            "    params: {'%who%': {get_param: who}}\n")

    assert evaluate(text, scope) == "Hi there"


def test_str_replace_template_must_be_a_string() -> None:
    with pytest.raises(StackValidationFailed) as caught:
        evaluate("value: {str_replace: {template: [a], params: {}}}\n", FakeScope())

    assert str(caught.value) == (
        'template:1 value.str_replace: "str_replace" template must be a string'
    )


def test_str_replace_params_must_be_a_map() -> None:
    with pytest.raises(StackValidationFailed, match='"str_replace" params must be a map'):
        evaluate("value: {str_replace: {template: a, params: [a]}}\n", FakeScope())


# --- list_join ---------------------------------------------------------------------------


def test_list_join() -> None:
    assert evaluate("value: {list_join: [', ', [a, b, c]]}\n", FakeScope()) == "a, b, c"


def test_list_join_joins_several_lists() -> None:
    scope = FakeScope({"more": ["c", "d"]})

    assert evaluate("value: {list_join: ['-', [a, b], {get_param: more}]}\n", scope) == (
        "a-b-c-d"
    )


def test_list_join_encodes_items() -> None:
    text = "value: {list_join: [' ', [1, true, null, {k: v}, [x]]]}\n"

    assert evaluate(text, FakeScope()) == '1 true  {"k": "v"} ["x"]'


def test_list_join_of_an_empty_list() -> None:
    assert evaluate("value: {list_join: [',', []]}\n", FakeScope()) == ""


def test_list_join_delimiter_must_be_a_string() -> None:
    with pytest.raises(StackValidationFailed, match='"list_join" delimiter must be a string'):
        evaluate("value: {list_join: [[x], [a]]}\n", FakeScope())


def test_list_join_must_join_lists() -> None:
    with pytest.raises(StackValidationFailed) as caught:
        evaluate("value: {list_join: [',', {a: b}]}\n", FakeScope())

    assert str(caught.value) == 'template:1 value.list_join: "list_join" must join lists'


def test_resolve_walks_containers() -> None:
    value = parse("value: {name: {get_param: n}, ids: [{get_resource: r}, 7]}\n")

    assert resolve(value, FakeScope({"n": "x"}, {"r": "id-1"})) == {"name": "x",
                                                                    "ids": ["id-1", 7]}


def test_nodes_are_frozen_values() -> None:
    first = parse("value: {list_join: [',', [a]]}\n")
    second = parse("value: {list_join: [',', [a]]}\n")

    assert isinstance(first, ListJoin)
    assert first == second
