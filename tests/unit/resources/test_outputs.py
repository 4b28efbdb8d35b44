"""engine.resources.outputs: outputs resolved from stored rows (only those asked for, each
failure its own ``output_error``, the evaluation budget honoured, a nested stack's outputs
read live), and the API's cache of them (kept for the IR they were resolved from, never
when volatile, too large or too old). Resolving through the services and the database:
tests/unit/services/test_stack_reads.py."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, NamedTuple

import pytest

from engine import budget
from engine.errors import DatabaseUnavailable
from engine.ir.build import build_from_document, pseudo_parameters
from engine.ir.model import ResolvedStack
from engine.resources.outputs import (
    OutputCache,
    Resolved,
    nested_stack_id,
    output_resources,
    resolve_outputs,
)
from engine.resources.registry import ResourceTypeRegistry
from engine.template.parse import document

TEMPLATE = """\
heat_template_version: 2018-08-31
parameters:
  word: {type: string, hidden: true, default: hunter2}
resources:
  v: {type: OS::Heat::Value, properties: {value: {get_param: word}}}
  unused: {type: OS::Heat::Value, properties: {value: 1}}
outputs:
  said: {value: {str_replace: {template: 'it is W', params: {W: {get_attr: [v, value]}}}}}
  plain: {description: a number, value: 7}
"""


class Row(NamedTuple):
    id: int
    name: str
    type: str
    physical_id: str | None
    properties: Any
    data: Any
    generation: int = 0


class Stack(NamedTuple):
    id: str = "stack-1"
    name: str = "web"
    tenant_id: str = "tenant-1"


def now() -> datetime.datetime:
    return datetime.datetime(2026, 11, 22, tzinfo=datetime.UTC)


@pytest.fixture
def ir(registry: ResourceTypeRegistry) -> ResolvedStack:
    return build_from_document(document(TEMPLATE), {},
                               pseudo_parameters("stack-1", "web", "tenant-1"), registry.get)


ROWS = {"v": Row(1, "v", "OS::Heat::Value", "v-1", {"value": "hunter2"}, {})}


def test_only_the_outputs_asked_for_and_the_rows_they_read_are_resolved(
        ir: ResolvedStack, registry: ResourceTypeRegistry) -> None:
    assert output_resources(ir) == output_resources(ir, ["said"]) == {"v"}
    assert output_resources(ir, ["plain"]) == frozenset()

    resolved = resolve_outputs(ir, Stack(), ROWS, registry, now, keys=["said"])

    # The hidden value masked where str_replace carried it; nothing read the clock.
    assert resolved == Resolved([{"output_key": "said", "description": "No description given",
                                  "output_value": "it is ******"}], volatile=False)
    # A resource never created reads as null (str_replace puts "" for it, as Heat).
    never_created = resolve_outputs(ir, Stack(), {}, registry, now).outputs
    assert [o["output_value"] for o in never_created] == ["it is ", 7]


def test_an_output_past_the_evaluation_budget_is_its_error_and_not_volatile(
        ir: ResolvedStack, registry: ResourceTypeRegistry) -> None:
    no_time = dataclasses.replace(budget.limits(), evaluation_timeout_seconds=0)
    with budget.evaluation(no_time):
        resolved = resolve_outputs(ir, Stack(), ROWS, registry, now)

    said, plain = resolved.outputs
    assert said["output_value"] is None
    assert said["output_error"] == (
        'template:8 outputs.said.value.str_replace: Evaluation of "str_replace" took too '
        "long: the regular expressions, yaql and str_replace of one evaluation may take 0 s "
        "in all ([template] evaluation_timeout_seconds).")
    assert plain["output_value"] == 7 and "output_error" not in plain
    # Kept for the cache's age like any other: resolving it again on every read would
    # spend the whole budget each time (the console polls every 2 s).
    assert not resolved.volatile


PARENT = """\
heat_template_version: 2018-08-31
resources:
  inner: {type: child.yaml}
  v: {type: OS::Heat::Value, properties: {value: 1}}
outputs:
  through: {value: {get_attr: [inner, word]}}
"""
CHILD = "heat_template_version: 2018-08-31\noutputs:\n  word: {value: x}\n"
INNER = Row(2, "inner", "child.yaml", "child-1", {}, {"outputs": {"word": "copied"}})


@pytest.fixture
def parent(registry: ResourceTypeRegistry) -> ResolvedStack:
    return build_from_document(document(PARENT), {},
                               pseudo_parameters("stack-1", "web", "tenant-1"), registry.get,
                               files={"child.yaml": CHILD})


def child_said(word: Any, volatile: bool = False) -> Resolved:
    return Resolved([{"output_key": "word", "description": "", "output_value": word}],
                    volatile)


def test_a_nested_stacks_outputs_are_read_live_and_its_clock_makes_the_parents_volatile(
        parent: ResolvedStack, registry: ResourceTypeRegistry) -> None:
    assert nested_stack_id("child.yaml", "child-1", registry) == "child-1"
    assert nested_stack_id("child.yaml", None, registry) is None  # not made yet
    assert nested_stack_id("OS::Heat::Value", "v-1", registry) is None
    assert nested_stack_id("Gone::Type", "g-1", registry) is None

    def through(children: Any) -> Resolved:
        return resolve_outputs(parent, Stack(), {"inner": INNER}, registry, now,
                               children=children)

    assert through(None).outputs[0]["output_value"] == "copied"  # the worker's: the copy
    assert through(lambda _: None).outputs[0]["output_value"] == "copied"  # gone
    assert through(lambda _: child_said("live")) == Resolved(
        [{"output_key": "through", "description": "No description given",
          "output_value": "live"}], volatile=False)
    assert through(lambda _: child_said("later", volatile=True)).volatile


def test_a_database_failure_reading_a_nested_stack_fails_the_read(
        parent: ResolvedStack, registry: ResourceTypeRegistry) -> None:
    """A 503, as any read the database fails, not that output's ``output_error``."""
    def unavailable(_: str) -> Resolved:
        raise DatabaseUnavailable(reason="gone away")

    with pytest.raises(DatabaseUnavailable):
        resolve_outputs(parent, Stack(), {"inner": INNER}, registry, now,
                        children=unavailable)


def resolved(volatile: bool = False, value: Any = "v") -> Resolved:
    return Resolved([{"output_key": "k", "description": "d", "output_value": value}],
                    volatile)


def test_the_cache_answers_for_the_ir_it_was_resolved_from_alone(ir: ResolvedStack) -> None:
    cache = OutputCache()
    cache.put("stack-1", ir, "rows-1", resolved())

    assert cache.get("stack-1", ir, "rows-1") == resolved().outputs
    assert cache.get("stack-1", ir, "rows-2") is None  # another digest of the rows
    assert cache.get("stack-2", ir, "rows-1") is None
    # An equal IR built again (the stack updated back, the IR cache evicted it) is not it.
    assert cache.get("stack-1", dataclasses.replace(ir), "rows-1") is None


def test_the_cache_keeps_nothing_volatile_too_large_or_older_than_its_age(
        ir: ResolvedStack) -> None:
    clock = [0.0]
    cache = OutputCache(max_age=5, size=1000, timer=lambda: clock[0])
    cache.put("volatile", ir, "d", resolved(volatile=True))
    cache.put("large", ir, "d", resolved(value="x" * 1000))
    cache.put("kept", ir, "d", resolved())

    assert cache.get("volatile", ir, "d") is None
    assert cache.get("large", ir, "d") is None
    clock[0] = 4.9
    assert cache.get("kept", ir, "d") == resolved().outputs
    clock[0] = 5.0
    assert cache.get("kept", ir, "d") is None
