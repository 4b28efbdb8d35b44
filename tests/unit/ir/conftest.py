"""Fake resource types for the IR: class attributes only, as a Resource class has them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import pytest

from engine.errors import ResourceTypeNotFound
from engine.ir.build import build
from engine.ir.model import ResolvedStack, TypeSchema
from engine.schema import Attribute, Property
from engine.template.loader import load
from engine.template.parse import parse_text


class _NoChecks:
    """Types without cross-property checks or an update policy, as the Resource base
    class defaults."""

    update_policy_schema: ClassVar[Mapping[str, Property]] = {}

    @classmethod
    def validate_properties(cls, properties: Mapping[str, Any]) -> None:
        return None


class Server(_NoChecks):
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "flavor": Property("string", required=True),
        "size": Property("integer", default=1),
        "volume": Property("string"),
        "tags": Property("list", default=[]),
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "name": Attribute("The name"),
        "networks": Attribute("Addresses by network", type="map"),
    }
    allow_unknown_properties: ClassVar[bool] = False
    allow_unknown_attributes: ClassVar[bool] = False


class Anything(_NoChecks):
    """Takes any property and has any attribute (like a template resource)."""

    properties_schema: ClassVar[Mapping[str, Property]] = {}
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {}
    allow_unknown_properties: ClassVar[bool] = True
    allow_unknown_attributes: ClassVar[bool] = True


class Plain(_NoChecks):
    properties_schema: ClassVar[Mapping[str, Property]] = {"value": Property("string")}
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {"value": Attribute()}
    allow_unknown_properties: ClassVar[bool] = False
    allow_unknown_attributes: ClassVar[bool] = False


TYPES: dict[str, TypeSchema] = {"Test::Server": Server, "Test::Anything": Anything,
                                "Test::Plain": Plain}


def lookup(type_name: str) -> TypeSchema:
    try:
        return TYPES[type_name]
    except KeyError:
        raise ResourceTypeNotFound(type_name=type_name) from None


PSEUDO = {"OS::stack_name": "teststack", "OS::stack_id": "stack-id-1",
          "OS::project_id": "tenant-1"}

Make = Callable[..., ResolvedStack]


@pytest.fixture
def make() -> Make:
    """Build the IR of template text with the fake types."""

    def make_stack(text: str, parameters: Mapping[str, Any] | None = None) -> ResolvedStack:
        return build(load(parse_text(text)), parameters or {}, PSEUDO, lookup)

    return make_stack
