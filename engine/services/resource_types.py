"""The resource-type catalogue: ``GET /resource_types``, ``GET /resource_types/{type}``
and its ``/template``, and the installed types ``kiln-manage`` lists.

Read from the registry's classes only, never the database. The filters are Heat's
(``ResourceRegistry.get_types``): ``name`` is a regular expression matched at the start of
the type name, and one that does not compile matches nothing; ``version`` is compared
with the version of the type's support status, ``support_status`` with its status, both
exactly. A ``support_status`` Heat does not know is a 400 with Heat's type and words.

Unlike Heat, a ``name`` whose matching could take exponential time is refused (400): see
:func:`name_pattern`.
"""

from __future__ import annotations

import dataclasses
import re
from re import _parser as sre_parser  # type: ignore[attr-defined]
from typing import Any

from engine.distributions import Origin, origins
from engine.errors import BadRequest, EntityNotFound, Invalid
from engine.resources.base import Resource
from engine.resources.registry import ResourceTypeRegistry
from engine.schema import SUPPORT_STATUSES
from engine.services import template_info
from engine.services.records import ResourceTypeRecord

#: More choice points than this in one name filter are refused. A choice point is a
#: repeat of variable count (``*``, ``+``, ``?``, ``{1,5}``) or each extra alternative of a
#: ``|``; ``k`` of them can split a name of ``n`` characters in about ``n**(k-1)`` ways, a
#: few milliseconds per type at four.
MAX_NAME_CHOICES = 4


@dataclasses.dataclass(frozen=True)
class InstalledType:
    """A resource type as an operator sees it: where it comes from."""

    name: str
    entry_point: str  # "module:Class"
    distribution: str
    version: str
    support_status: str


@dataclasses.dataclass(frozen=True)
class TypeFilters:
    name: str | None = None
    version: str | None = None
    support_status: str | None = None


class ResourceTypes:
    def __init__(self, registry: ResourceTypeRegistry) -> None:
        self._registry = registry

    def list_resource_types(self, filters: TypeFilters) -> list[ResourceTypeRecord]:
        return list_types(self._registry, filters)

    def installed_resource_types(self) -> list[InstalledType]:
        return installed_types(self._registry)

    def get_resource_type(self, type_name: str) -> ResourceTypeRecord:
        return get_type(self._registry, type_name)

    def generate_template(self, type_name: str, template_type: str) -> dict[str, Any]:
        """``GET /resource_types/<type>/template``: see ``template_info.resource_template``."""
        cls = self._registry.find(type_name)
        if cls is None:
            raise EntityNotFound(entity="Resource Type", name=type_name)
        return template_info.resource_template(type_name, cls, template_type)


def list_types(registry: ResourceTypeRegistry, filters: TypeFilters
               ) -> list[ResourceTypeRecord]:
    """The types that pass every filter given, sorted by name."""
    if filters.support_status is not None and filters.support_status not in SUPPORT_STATUSES:
        # Heat's exception.Invalid, with its message and the tuple printed as Python does.
        raise Invalid(reason="Data supplied was not valid: Invalid support status and "
                             f"should be one of {SUPPORT_STATUSES}")
    pattern = name_pattern(filters.name) if filters.name is not None else None
    if filters.name is not None and pattern is None:
        return []
    found = []
    for type_name in registry.names():
        cls = registry.get(type_name)
        if pattern is not None and not pattern.match(type_name):
            continue
        if filters.version is not None and cls.support_version != filters.version:
            continue
        if filters.support_status is not None and cls.support_status != filters.support_status:
            continue
        found.append(describe_type(type_name, cls))
    return found


def installed_types(registry: ResourceTypeRegistry) -> list[InstalledType]:
    """Every type the registry loaded, by name, with the distribution declaring it."""
    declared_by = origins(registry.namespace)
    found = []
    for type_name in registry.names():
        value = registry.entry_points.get(type_name, "")
        origin = declared_by.get((type_name, value), Origin("", ""))
        found.append(InstalledType(name=type_name, entry_point=value,
                                   distribution=origin.distribution, version=origin.version,
                                   support_status=registry.get(type_name).support_status))
    return found


def get_type(registry: ResourceTypeRegistry, type_name: str) -> ResourceTypeRecord:
    cls = registry.find(type_name)
    if cls is None:
        raise EntityNotFound(entity="Resource Type", name=type_name)
    return describe_type(type_name, cls)


def describe_type(type_name: str, cls: type[Resource]) -> ResourceTypeRecord:
    return ResourceTypeRecord(
        name=type_name, description=cls.describe(),
        properties={k: v.describe() for k, v in cls.properties_schema.items()},
        attributes={k: v.describe() for k, v in cls.attributes_schema.items()},
        support_status=cls.support().describe())


def name_pattern(text: str) -> re.Pattern[str] | None:
    """``text`` compiled, or None when it is not a regular expression (Heat then lists
    nothing).

    Python's matcher backtracks, so a pattern such as ``(.*.*)*X`` takes exponential time
    on a name it fails to match: a single ``GET`` would hold an API worker for minutes.
    Heat has that hole; Kiln refuses, with a 400, patterns whose cost is not bounded by a
    small power of the name's length: a choice inside a repeat of variable count, or more
    than :data:`MAX_NAME_CHOICES` choice points in all (a fixed count ``{3}`` repeats its
    choices).
    """
    try:
        pattern = re.compile(text)
    except (re.error, RecursionError, OverflowError):
        return None
    choices = _choices(sre_parser.parse(text), in_repeat=False)
    if choices is None or choices > MAX_NAME_CHOICES:
        raise BadRequest(reason=f"The name filter {text!r} could take too long to match: "
                                "Kiln refuses a repeat or an alternative inside a repeat, "
                                f"and more than {MAX_NAME_CHOICES} repeats and alternatives "
                                "in all.")
    return pattern


_REPEATS = {sre_parser.MAX_REPEAT, sre_parser.MIN_REPEAT, sre_parser.POSSESSIVE_REPEAT}


def _choices(items: Any, *, in_repeat: bool) -> int | None:
    """How many choice points ``items`` (a parsed pattern) holds, or None when one sits
    inside a repeat of variable count (``in_repeat``), where it multiplies without bound.

    NOTE: ``re._parser`` is CPython's own parser (``sre_parse`` until 3.11, now deprecated
    under that name); its tree is walked rather than the text guessed at, so escapes and
    character classes cannot fool the check.
    """
    count = 0
    for op, arg in items:
        found: int | None = 0
        if op in _REPEATS:
            low, high, sub = arg
            inner = _choices(sub, in_repeat=in_repeat or low != high)
            if inner is None:
                return None
            if low == high:  # a fixed count: that many copies of the item in a row
                found = inner * high
            elif in_repeat:
                return None
            else:
                found = 1
        elif op == sre_parser.BRANCH:
            if in_repeat:
                return None
            found = _sum(_choices(b, in_repeat=False) for b in arg[1])
            found = None if found is None else found + len(arg[1]) - 1
        elif op == sre_parser.SUBPATTERN:
            found = _choices(arg[-1], in_repeat=in_repeat)
        elif op in (sre_parser.ASSERT, sre_parser.ASSERT_NOT):
            found = _choices(arg[1], in_repeat=in_repeat)
        elif op == sre_parser.ATOMIC_GROUP:
            found = _choices(arg, in_repeat=in_repeat)
        elif op == sre_parser.GROUPREF_EXISTS:
            found = _sum(_choices(b, in_repeat=in_repeat) for b in arg[1:] if b is not None)
        if found is None:
            return None
        count += found
    return count


def _sum(counts: Any) -> int | None:
    total = 0
    for count in counts:
        if count is None:
            return None
        total += count
    return total
