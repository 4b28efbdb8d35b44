"""Broken HOT templates for the property tests: a well-formed one
(``tests.strategies.templates``) with one or two things wrong: odd values anywhere, odd
arguments (every type, every arity), unknown references, functions renamed or wrapped
around anything, keys dropped, other versions, cycles, a json parameter with odd JSON text
(too deep, NaN, NUL), and odd YAML (tags, values their tag cannot read, null keys, a
recursive alias, a huge integer) when the template goes as text.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

from engine.template.versions import HOT_VERSIONS
from tests.strategies.templates import Case, Draw, oddity_marker, well_formed

# JSON text a json parameter (or Fn::Select, or a map property) reads: deeper than a
# template may be (a stack that could not be deleted, once), deeper than the decoder's
# recursion (a 500), and what no database holds.
ODD_JSON_TEXT: tuple[str, ...] = (
    '{"a": ' * 65 + "1" + "}" * 65, "[" * 600 + "]" * 600, "[" * 5000 + "]" * 5000,
    "[NaN]", '{"a": Infinity}', "[1e999]", '["\\u0000"]', '{"\\ud800": 1}',
)
# Odd values a mutation puts anywhere: edges of numbers, of text and of structure.
ODD_VALUES: tuple[Any, ...] = (
    None, "", " ", True, False, 0, -1, 2**31, 2**63, -(2**63) - 1, 2**64, 10**30, 1e308,
    -0.0, 0.1, float("inf"), float("-inf"), float("nan"), "\u0000", "☃" * 3, "x" * 5000,
    "%index%", "$a", "{get_param: x}", [], {}, [[[[]]]], [None], {"": ""}, {"a": None},
    {"get_param": []}, {"get_resource": {}}, {"no_such_function": 1}, ["a", 1, None, {}],
    *ODD_JSON_TEXT,
)
# Argument shapes for a function: every type, every arity up to four.
ODD_ARGUMENTS: tuple[Any, ...] = (
    None, "", "text", 0, -1, 1.5, True, [], ["a"], ["a", "b"], ["a", "b", "c"],
    ["a", "b", "c", "d"], [[], []], [{}, {}], [None, None], [1, "a"], ["a", -1],
    ["a", 10**6], {}, {"a": 1}, {"template": 1, "params": []}, {"for_each": [], "template": 1},
    {"expression": 1}, {"expression": "$.data.", "data": 1}, {"keys": [], "values": 1},
)
# Odd YAML put in place of a value when a template is sent as text: tags Heat's loader
# refuses or turns into non-JSON values, scalars their tag cannot read (PyYAML raises plain
# Python errors on them: a 500 once), odd keys, and a recursive alias.
YAML_ODDITIES: dict[str, str] = {
    "yaml_bad_bool": "!!bool maybe",
    "yaml_empty_int": '!!int ""',
    "yaml_underscore_int": "!!int _",
    "yaml_bad_binary_int": "!!int 0b2",
    "yaml_bad_base60_int": "!!int 1:x",
    "yaml_bad_float": "!!float abc",
    "yaml_empty_float": '!!float ""',
    "yaml_plain_empty_hex": "0x_",
    "yaml_bad_base64": "!!binary '!'",
    "yaml_null_key": "{null: a}",
    "yaml_null_keys": "{null: a, ~: b}",
    "yaml_binary": "!!binary aGVsbG8=",
    "yaml_set": "!!set {a, b}",
    "yaml_omap": "!!omap [{a: 1}, {b: 2}]",
    "yaml_timestamp": "!!timestamp 2001-12-14t21:59:43.10-05:00",
    "yaml_python": "!!python/name:os.system",
    "yaml_float_tag": "!!float 1e400",
    "yaml_int_tag": "!!int 0x7fffffffffffffffffff",
    "yaml_self_alias": "&loop [*loop]",
    # Past Python's 4,300 digits of int <-> text conversion.
    "yaml_huge_int": "1" + "0" * 4400,
}
MUTATIONS = ("odd_value", "odd_arguments", "unknown_reference", "rename_function",
             "wrap_in_function", "drop_key", "other_version", "cycle", "yaml_oddity",
             "json_text")


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path in ``value`` (its root included)."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def _set(root: Any, path: tuple[Any, ...], new: Any) -> None:
    _get(root, path[:-1])[path[-1]] = new


_ALL_FUNCTIONS = sorted(set().union(*(v.functions for v in HOT_VERSIONS),
                                    *(v.condition_functions for v in HOT_VERSIONS)))
_REFERENCES = ("get_param", "get_resource", "get_attr", "Ref")


def _calls(template: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Paths of the function calls in ``template``: maps of one key naming a function."""
    return [p for p in _paths(template) if p and isinstance(_get(template, p), dict)
            and len(_get(template, p)) == 1 and next(iter(_get(template, p))) in _ALL_FUNCTIONS]


def _mutate(draw: Draw, case: Case, kind: str, exclude: frozenset[str]) -> Case:
    template = copy.deepcopy(case.template)
    given = dict(case.parameters)
    paths = [p for p in _paths(template) if p]
    calls = _calls(template)
    oddities = case.yaml_oddities
    if kind in ("odd_arguments", "rename_function", "unknown_reference") and not calls:
        kind = "odd_value"
    if kind == "odd_value":
        _set(template, draw(st.sampled_from(paths)), draw(st.sampled_from(ODD_VALUES)))
    elif kind == "odd_arguments":
        call = _get(template, draw(st.sampled_from(calls)))
        name = next(iter(call))
        call[name] = draw(st.sampled_from(ODD_ARGUMENTS))
    elif kind == "rename_function":
        path = draw(st.sampled_from(calls))
        call = _get(template, path)
        (name, args), = call.items()
        _set(template, path, {draw(st.sampled_from(_ALL_FUNCTIONS)): args})
    elif kind == "unknown_reference":
        refs = [p for p in calls if next(iter(_get(template, p))) in _REFERENCES]
        if refs:
            call = _get(template, draw(st.sampled_from(refs)))
            name = next(iter(call))
            args = call[name]
            call[name] = (["nothing", *args[1:]] if isinstance(args, list) and args
                          else "nothing")
        else:
            _set(template, draw(st.sampled_from(paths)), {"get_resource": "nothing"})
    elif kind == "wrap_in_function":
        path = draw(st.sampled_from(paths))
        _set(template, path, {draw(st.sampled_from(_ALL_FUNCTIONS)): _get(template, path)})
    elif kind == "drop_key":
        holders = [p for p in paths if isinstance(_get(template, p), dict)
                   and _get(template, p)] + [()]
        holder = _get(template, draw(st.sampled_from(holders)))
        del holder[draw(st.sampled_from(sorted(holder, key=str)))]
    elif kind == "other_version":
        template["heat_template_version"] = draw(st.sampled_from(
            [v.date for v in HOT_VERSIONS] + ["2099-01-01", "2018-8-31", "", None]
            + [20180831, 1.0, ["2018-08-31"]]))
    elif kind == "cycle":
        resources = template.get("resources")
        if isinstance(resources, dict) and resources:
            names = sorted(resources)
            for index, name in enumerate(names):
                if isinstance(resources[name], dict):
                    resources[name]["depends_on"] = names[(index + 1) % len(names)]
    elif kind == "yaml_oddity":
        names = sorted(n for n in YAML_ODDITIES if f"oddity:{n}" not in exclude)
        if names:
            _set(template, draw(st.sampled_from(paths)), oddity_marker(len(oddities)))
            name = draw(st.sampled_from(names))
            oddities = (*oddities, (name, YAML_ODDITIES[name]))
    elif kind == "json_text":
        # A json parameter with odd JSON text, given or as its default, that an output
        # and a resource evaluate.
        declared, outputs = template.get("parameters") or {}, template.get("outputs") or {}
        resources = template.get("resources") or {}
        if all(isinstance(section, dict) for section in (declared, outputs, resources)):
            text = draw(st.sampled_from(ODD_JSON_TEXT))
            body: dict[str, Any] = {"type": "json"}
            if draw(st.booleans()):
                given["odd_json"] = text
            else:
                body["default"] = text
            reference = {"get_param": "odd_json"}
            template.update(parameters={**declared, "odd_json": body},
                            outputs={**outputs, "odd_json": {"value": reference}})
            if "OS::Heat::Value" not in exclude:
                template["resources"] = {**resources, "odd_json": {
                    "type": "OS::Heat::Value", "properties": {"value": reference}}}
    return dataclasses.replace(
        case, template=template, parameters=given, mutations=(*case.mutations, kind),
        yaml_oddities=oddities,
        features=case.features | {f"mutation:{kind}"}
        | {f"oddity:{name}" for name, _ in oddities})


@st.composite
def mutated(draw: Draw, exclude: frozenset[str] = frozenset(), max_depth: int = 2) -> Case:
    """A well-formed template with one or two things broken."""
    case: Case = draw(well_formed(exclude, max_depth))
    kinds = [m for m in MUTATIONS if f"mutation:{m}" not in exclude]
    for kind in draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=2)):
        case = _mutate(draw, case, kind, exclude)
    if draw(st.integers(0, 3)) == 0:
        # A given parameter's value broken too, or one the template does not declare.
        parameters = dict(case.parameters)
        name = draw(st.sampled_from([*parameters, "undeclared"]))
        parameters[name] = draw(st.sampled_from(ODD_VALUES))
        case = dataclasses.replace(case, parameters=parameters,
                                   features=case.features | {"mutation:parameter_value"})
    return case
