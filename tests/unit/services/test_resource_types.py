"""engine.services.resource_types: Heat's filters over the registry, the record of a type,
and the name filter's refusal of patterns that backtrack for ever."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from engine.errors import BadRequest, EntityNotFound, Invalid
from engine.resources.base import Resource
from engine.resources.registry import ResourceTypeRegistry
from engine.schema import DEPRECATED, STRING, UNSUPPORTED, Attribute, Property, SupportStatus
from engine.services.resource_types import (
    MAX_NAME_CHOICES,
    TypeFilters,
    get_type,
    list_types,
    name_pattern,
)


class Plain(Resource):
    """A plain type.

    With a second paragraph the catalogue leaves out."""

    support_version: ClassVar[str | None] = "5.0.0"
    properties_schema: ClassVar[Any] = {"p": Property(STRING, "P.", update_allowed=True)}
    attributes_schema: ClassVar[Any] = {"a": Attribute("A.", type=STRING)}


class Old(Resource):
    support_status: ClassVar[str] = DEPRECATED
    support_version: ClassVar[str | None] = "9.0.0"
    support_message: ClassVar[str | None] = "Use My::Plain."
    support_previous_status: ClassVar[SupportStatus | None] = SupportStatus(version="5.0.0")


class Lab(Resource):
    """Experimental."""

    support_status: ClassVar[str] = UNSUPPORTED


@pytest.fixture
def registry() -> ResourceTypeRegistry:
    return ResourceTypeRegistry({"My::Plain": Plain, "My::Old": Old, "Lab::Thing": Lab})


def listed(registry: ResourceTypeRegistry, **filters: str) -> list[str]:
    return [r.name for r in list_types(registry, TypeFilters(**filters))]


def test_no_filter_lists_every_type_by_name(registry: ResourceTypeRegistry) -> None:
    assert listed(registry) == ["Lab::Thing", "My::Old", "My::Plain"]


def test_filters_combine(registry: ResourceTypeRegistry) -> None:
    assert listed(registry, name="My::") == ["My::Old", "My::Plain"]
    assert listed(registry, name="Plain") == []  # matched at the start only
    assert listed(registry, name="My::", version="5.0.0") == ["My::Plain"]
    assert listed(registry, version="9.0.0") == ["My::Old"]
    assert listed(registry, support_status="DEPRECATED") == ["My::Old"]
    assert listed(registry, support_status="UNSUPPORTED", name="My") == []
    assert listed(registry, support_status="HIDDEN") == []


def test_a_type_without_a_version_matches_no_version(registry: ResourceTypeRegistry
                                                     ) -> None:
    assert "Lab::Thing" not in listed(registry, version="")


def test_an_invalid_regex_lists_nothing(registry: ResourceTypeRegistry) -> None:
    assert listed(registry, name="My::(") == []


def test_an_unknown_status_is_invalid(registry: ResourceTypeRegistry) -> None:
    with pytest.raises(Invalid) as raised:
        listed(registry, support_status="Supported")
    assert type(raised.value) is Invalid  # error.type "Invalid", as Heat's
    assert str(raised.value) == (
        "Data supplied was not valid: Invalid support status and should be one of "
        "('UNKNOWN', 'SUPPORTED', 'DEPRECATED', 'UNSUPPORTED', 'HIDDEN')")


def test_record_of_a_type(registry: ResourceTypeRegistry) -> None:
    record = get_type(registry, "My::Plain")

    assert record.description == "A plain type."
    assert record.properties == {"p": Plain.properties_schema["p"].describe()}
    assert record.attributes == {"a": {"description": "A.", "type": "string"}}
    assert record.support_status == {"status": "SUPPORTED", "message": None,
                                     "version": "5.0.0", "previous_status": None}


def test_record_of_a_deprecated_type(registry: ResourceTypeRegistry) -> None:
    record = get_type(registry, "My::Old")

    assert record.description == "No description available"  # Heat's words
    assert record.support_status == {
        "status": "DEPRECATED", "message": "Use My::Plain.", "version": "9.0.0",
        "previous_status": {"status": "SUPPORTED", "message": None, "version": "5.0.0",
                            "previous_status": None}}


def test_unknown_type(registry: ResourceTypeRegistry) -> None:
    with pytest.raises(EntityNotFound) as raised:
        get_type(registry, "My::Nope")
    assert str(raised.value) == "The Resource Type (My::Nope) could not be found."


@pytest.mark.parametrize("pattern", [
    "OS::Heat::.*", "OS::(Heat|Nova)::.*", "OS::Heat::(Random)?String", "(?:a{2})*",
    "(?=a.*)b", "aa|bb|cc|dd|ee",
    r"\(.*\)*", "[a|b]*", ".*" * MAX_NAME_CHOICES, "(?:ab.*){4}", "OS::Heat::.{3}",
])
def test_patterns_of_bounded_cost_are_accepted(pattern: str) -> None:
    assert name_pattern(pattern) is not None


@pytest.mark.parametrize("pattern", [
    "(.*.*)*X", "(?:a+)+", "(.|.)*X", "(?:x|y.*)+", "((a*)?)*", "(?>(a*)*)",
    ".*" * (MAX_NAME_CHOICES + 1), "(?:.*){5}X", "((.*){9}){9}", "(?:a|a){30}X",
    "(?:ab?)*", "(?:a?){30}X", "aa|bb|cc|dd|ee|ff",
])
def test_patterns_that_can_backtrack_for_ever_are_refused(pattern: str) -> None:
    with pytest.raises(BadRequest, match="could take too long to match"):
        name_pattern(pattern)


@pytest.mark.parametrize("pattern", ["[", "a**", "(?P<x>a)(?P<x>b)"])
def test_text_that_is_no_regex_gives_none(pattern: str) -> None:
    assert name_pattern(pattern) is None
