"""engine.ir.stored: one IR per stored definition, kept in a bounded LRU cache shared by
threads; a changed definition (of any part) is built anew."""

from __future__ import annotations

import dataclasses
import functools
import json
import threading
import time
from typing import Any

import pytest

from engine.errors import StackValidationFailed
from engine.ir.model import TypeSchema
from engine.ir.stored import StoredIrs, StoredText, redefinition
from tests.unit.ir.conftest import lookup

TEMPLATE = {"heat_template_version": "2018-08-31",
            "parameters": {"size": {"type": "number", "default": 1}},
            "resources": {"a": {"type": "Test::Plain",
                                "properties": {"value": {"get_param": "size"}}}}}


@dataclasses.dataclass(frozen=True)
class Stored:
    """A stored stack as the builder reads it (a ``Stack`` row has these too)."""

    id: str = "stack-1"
    name: str = "s"
    tenant_id: str = "t"
    template: Any = dataclasses.field(default_factory=lambda: TEMPLATE)
    parameters: Any = dataclasses.field(default_factory=dict)
    environment: Any = dataclasses.field(default_factory=dict)
    files: Any = dataclasses.field(default_factory=dict)
    facade: Any = None


def no_constraints(name: str) -> Any:
    raise KeyError(name)


class Counting:
    """The type lookup, counting the builds (each build looks every type up)."""

    def __init__(self) -> None:
        self.builds = 0
        self._lock = threading.Lock()

    def __call__(self, type_name: str) -> TypeSchema:
        with self._lock:
            self.builds += 1
        return lookup(type_name)


@pytest.fixture
def counting() -> Counting:
    return Counting()


@pytest.fixture
def irs(counting: Counting) -> StoredIrs:
    return StoredIrs(counting, no_constraints)


def test_the_same_definition_gives_the_same_object(irs: StoredIrs, counting: Counting
                                                   ) -> None:
    first = irs.of(Stored())

    # Another row of the same stack, read again: equal values, other objects.
    assert irs.of(Stored(template={**TEMPLATE})) is first
    assert counting.builds == 1


@pytest.mark.parametrize("change", [
    {"template": {**TEMPLATE, "description": "changed"}},
    {"parameters": {"size": 2}},
    {"environment": {"parameter_defaults": {"size": 3}}},
    {"files": {"f.yaml": "x"}},
    {"facade": {"metadata": {"k": "v"}}},
    {"id": "stack-2"},
    {"name": "other"},
    {"tenant_id": "other"},
])
def test_a_changed_definition_is_built_anew(change: dict[str, Any], irs: StoredIrs
                                            ) -> None:
    before = irs.of(Stored())

    after = irs.of(Stored(**change))

    assert after is not before
    assert irs.of(Stored()) is before  # the first is still kept


def test_a_key_of_another_type_is_another_definition(irs: StoredIrs) -> None:
    # JSON would write both as {"1": ...}; they are two definitions all the same.
    first = irs.of(Stored(files={1: "x"}))

    assert irs.of(Stored(files={"1": "x"})) is not first


def test_the_cache_is_bounded_and_forgets_the_least_recently_used(counting: Counting
                                                                   ) -> None:
    irs = StoredIrs(counting, no_constraints, size=2)
    a = irs.of(Stored(id="a"))
    irs.of(Stored(id="b"))
    assert irs.of(Stored(id="a")) is a  # a is now the most recently used

    irs.of(Stored(id="c"))  # past the bound: b goes

    builds = counting.builds
    assert irs.of(Stored(id="a")) is a
    assert counting.builds == builds
    irs.of(Stored(id="b"))
    assert counting.builds == builds + 1


def test_an_operation_finds_its_ir_without_reading_the_definition(irs: StoredIrs) -> None:
    planned = irs.for_operation("op-1", Stored())

    class Unreadable:
        """A step's stack: its large columns are not loaded."""

        id, name, tenant_id, facade = "stack-1", "s", "t", None

        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"the definition was read ({name})")

    assert irs.for_operation("op-1", Unreadable()) is planned
    assert irs.of(Stored()) is planned  # one IR: the operation's is the definition's


def as_text(stored: Stored, **text: str | None) -> StoredText:
    """The definition as the database's JSON columns hold it."""
    columns = {name: None if getattr(stored, name) is None else json.dumps(getattr(
        stored, name)) for name in ("template", "parameters", "environment", "files",
                                    "facade")}
    return StoredText(stored.id, stored.name, stored.tenant_id, **{**columns, **text})


def loaded(stored: Stored) -> Stored:
    """The stack as the ORM loads its row (each JSON column decoded)."""
    return Stored(stored.id, stored.name, stored.tenant_id, *(
        json.loads(json.dumps(getattr(stored, name)))
        for name in ("template", "parameters", "environment", "files", "facade")))


def test_a_definition_read_as_text_finds_the_definitions_ir(
        irs: StoredIrs, counting: Counting, monkeypatch: pytest.MonkeyPatch) -> None:
    stored = irs.of(loaded(Stored()))  # the worker's, say

    assert irs.if_valid_stored(as_text(Stored())) is stored  # decoded, the same definition
    decoded: list[str] = []
    loads = json.loads
    monkeypatch.setattr(json, "loads", lambda text: decoded.append(text) or loads(text))
    assert irs.if_valid_stored(as_text(Stored())) is stored
    assert decoded == []  # found by the text's digest, the template not decoded again
    assert counting.builds == 1


def test_a_changed_text_is_another_definition(irs: StoredIrs) -> None:
    before = irs.if_valid_stored(as_text(Stored()))

    after = irs.if_valid_stored(as_text(Stored(), parameters=json.dumps({"size": 2})))

    assert after is not None and before is not None
    assert after is not before
    assert after.parameters["size"] == 2
    # NULL and JSON null are one value, as the ORM reads them; "" is no JSON at all.
    assert irs.if_valid_stored(as_text(Stored(), facade="null")) is before


def test_a_definition_read_as_text_that_no_longer_validates_has_no_ir(irs: StoredIrs
                                                                     ) -> None:
    broken = Stored(template={**TEMPLATE, "resources": {"a": {"type": "Test::Gone"}}})

    assert irs.if_valid_stored(as_text(broken)) is None


def test_an_operation_whose_ir_was_forgotten_has_it_built_again(counting: Counting
                                                                 ) -> None:
    irs = StoredIrs(counting, no_constraints, size=1)
    planned = irs.for_operation("op-1", Stored())
    irs.of(Stored(id="other"))  # past the bound: the operation's IR goes

    again = irs.for_operation("op-1", Stored())

    assert again is not planned
    assert again == planned


def test_a_failure_is_raised_and_not_kept(counting: Counting) -> None:
    broken = Stored(template={**TEMPLATE, "resources": {"a": {"type": "Test::Gone"}}})
    irs = StoredIrs(counting, no_constraints)

    with pytest.raises(StackValidationFailed):
        irs.of(broken)
    assert irs.if_valid(broken) is None
    builds = counting.builds
    assert irs.if_valid(broken) is None
    assert counting.builds > builds  # tried again: a failure is not kept


def test_threads_building_one_definition_at_once_all_get_the_one_kept() -> None:
    slow = Counting()

    def lookup_slowly(type_name: str) -> TypeSchema:
        time.sleep(0.05)  # every thread is building before any has kept its IR
        return slow(type_name)

    irs = StoredIrs(lookup_slowly, no_constraints)
    start = threading.Barrier(6)
    got: list[Any] = []

    def read() -> None:
        start.wait()
        got.append(irs.of(Stored()))

    threads = [threading.Thread(target=read) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert len(got) == 6
    assert all(ir is got[0] for ir in got)
    assert irs.of(Stored()) is got[0]


def test_many_threads_past_the_bound_each_get_their_stacks_ir(counting: Counting) -> None:
    irs = StoredIrs(counting, no_constraints, size=4)
    stacks = [Stored(id=f"s{i % 6}") for i in range(300)]  # more stacks than the bound
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def read(offset: int) -> None:
        try:
            start.wait()
            for stack in stacks[offset:] + stacks[:offset]:
                take = irs.of if offset % 2 else functools.partial(
                    irs.for_operation, f"op-{stack.id}")
                assert take(stack).parameters["OS::stack_id"] == stack.id
        except BaseException as exc:  # noqa: BLE001 -- reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=read, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert errors == []


def test_an_update_s_definition_is_taken_as_it_is_stored() -> None:
    definition = {"template": TEMPLATE, "parameters": {"size": 2}, "environment": None,
                  "files": {"a.yaml": "x"}}

    assert redefinition(definition, {"old.yaml": "y"}) == (
        TEMPLATE, {"size": 2}, {}, {"a.yaml": "x"})  # a null environment is an empty one


def test_a_definition_stored_without_files_keeps_the_stack_s() -> None:
    definition = {"template": TEMPLATE, "parameters": {}}

    assert redefinition(definition, {"old.yaml": "y"}).files == {"old.yaml": "y"}
    assert redefinition(definition, None).files is None
