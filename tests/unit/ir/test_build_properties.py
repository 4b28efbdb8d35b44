"""Property-based tests of the template path in-process (issue 17): whatever template a
tenant sends, text -> document -> Template -> IR (``engine.ir.build``) either succeeds or
raises a ``KilnError`` (a 4xx at the API), never anything else (a 500). Then, with every
resource's properties and every output evaluated as the worker evaluates them, evaluation
too only raises ``KilnError``s, and what it gives can be stored (is JSON).

Many more examples than the functional twin (``tests/functional/api/
test_template_properties.py``), because nothing here starts a process.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import assume, example, given, note, settings

from engine.errors import KilnError
from engine.ir.build import build, properties_for_runtime, pseudo_parameters
from engine.ir.model import ResolvedStack
from engine.lifecycle.view import freeze, thaw
from engine.resources.registry import ResourceTypeRegistry
from engine.template.environment import Environment, request_environment
from engine.template.functions import resolve
from engine.template.loader import load
from engine.template.parse import document
from tests.strategies import Case, cases, examples, known_failing

REGISTRY = ResourceTypeRegistry.load()


def build_case(case: Case, *, require_all: bool = True) -> ResolvedStack:
    """What ``Proposals.propose`` does before anything is stored."""
    hot = load(document(case.body()), case.files)
    environment = request_environment({"parameters": case.parameters},
                                      {n: s.type for n, s in hot.parameters.items()})
    return build(hot, environment["parameters"],
                 pseudo_parameters("stack-id", "stack-name", "tenant-id"), REGISTRY.get,
                 require_all=require_all, constraints=REGISTRY.constraint,
                 environment=Environment.from_dict(environment))


class Reality:
    """A scope of resources "created" one by one, in the order the template lists them
    (which the strategies make a dependency order): each attribute is what the built-in
    type would answer for the properties it got."""

    def __init__(self, ir: ResolvedStack) -> None:
        self._ir = ir
        self._attributes: dict[str, dict[str, Any]] = {}

    def param(self, name: str) -> Any:
        return self._ir.parameters[name]

    def reference_id(self, resource: str) -> Any:
        return f"{resource}-id" if resource in self._attributes else None

    def attribute(self, resource: str, attribute: str, path: Sequence[Any] = ()) -> Any:
        value = self._attributes.get(resource, {}).get(attribute)
        for key in path:
            try:
                value = value[key]  # type: ignore[index]
            except (KeyError, IndexError, TypeError):
                return None
        return value

    def attributes(self, resource: str) -> Any:
        return self._attributes.get(resource)

    def create(self, name: str, type_name: str, properties: Mapping[str, Any]) -> None:
        count = properties.get("count") or 0
        members = [f"{name}-{i}" for i in range(count)]
        by_type: dict[str, dict[str, Any]] = {
            "OS::Heat::TestResource": {"output": properties.get("value")},
            "OS::Heat::RandomString": {"value": "x" * (properties.get("length") or 32)},
            "OS::Heat::Value": {"value": properties.get("value")},
            "OS::Heat::ResourceGroup": {"refs": members,
                                        "refs_map": {str(i): m for i, m in enumerate(members)}},
        }
        self._attributes[name] = by_type.get(type_name, {})


def evaluate(ir: ResolvedStack) -> dict[str, Any]:
    """Every resource's properties and every output, as the worker resolves them."""
    reality = Reality(ir)
    values: dict[str, Any] = {}
    for name, node in ir.resources.items():
        properties = properties_for_runtime(node, REGISTRY.get(node.type_name), reality)
        reality.create(name, node.type_name, properties)
        values[f"resources.{name}"] = properties
    for name, output in ir.outputs.items():
        values[f"outputs.{name}"] = resolve(output.value, reality)
    return values


def storable(value: Any) -> bool:
    """What the database keeps, and every walk of a stored value survives (the lifecycle
    views freeze and redact what they show): JSON, with no NaN or infinity, within
    Python's recursion."""
    try:
        json.dumps(value, allow_nan=False)
        thaw(freeze(value))
    except (TypeError, ValueError, RecursionError):
        return False
    return True


@settings(max_examples=examples(300))
@given(cases())
# Found once: a parameter group naming a map was a TypeError.
@example(Case(template={"heat_template_version": "2018-08-31",
                        "parameters": {"p": {"type": "string"}},
                        "parameter_groups": [{"parameters": [["p"]]}], "resources": {}},
              parameters={}, files={}, features=frozenset({"regression"})))
def test_building_any_template_raises_only_kiln_errors(case: Case) -> None:
    assume(known_failing(case) is None)
    note(case.describe())
    for require_all in (False, True):  # validate, then create
        try:
            build_case(case, require_all=require_all)
        except KilnError as exc:
            assert str(exc)


@settings(max_examples=examples(200))
@given(cases())
def test_evaluating_a_built_template_raises_only_kiln_errors_and_gives_json(case: Case
                                                                          ) -> None:
    assume(known_failing(case) is None)
    note(case.describe())
    try:
        ir = build_case(case)
    except KilnError:
        return  # refused before anything runs: the first test's business
    try:
        values = evaluate(ir)
    except KilnError as exc:
        assert str(exc)
        return
    assert storable(values), values


def test_storable_refuses_what_json_columns_cannot_hold() -> None:
    assert storable({"a": [1, "b", None, True]})
    assert not storable({"a": math.inf})
    assert not storable({"a": object()})
