"""The operator's inventory file: racks, hosts, their capacity, and what placed types cost.

Read and checked once, at configure time; every problem raises :class:`InventoryError`
naming the file and the key, so a typo stops the process at start instead of surfacing as
a puzzling denial later. The format is described in ``specs/lifecycle-placement.rst``;
``etc/kiln/placement-inventory.yaml.example`` is a complete example.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import yaml

from engine.lifecycle.view import ResourceView, Unresolved
from plugins.lifecycle.placement.algorithm import Amounts, Host, HostKey, Rack

TOP_KEYS = ("units", "racks", "types")


class InventoryError(ValueError):
    """The inventory file is missing, unreadable or wrong; the message says where."""


class CostError(ValueError):
    """A resource's cost cannot be worked out from its properties."""


@dataclasses.dataclass(frozen=True)
class PropertyAmount:
    """An amount read from a numeric property; ``default`` when the property is unset."""

    property: str
    default: int | None = None


@dataclasses.dataclass(frozen=True)
class TypeCost:
    """What one resource of a placed type takes.

    Either ``fixed`` and ``from_property`` (units whose amount is a constant, or the value
    of a numeric property), or ``by_property`` and ``table`` (the amounts looked up by the
    value of one property, e.g. a flavor).
    """

    fixed: Amounts = dataclasses.field(default_factory=dict)
    from_property: Mapping[str, PropertyAmount] = dataclasses.field(default_factory=dict)
    by_property: str | None = None
    table: Mapping[str, Amounts] = dataclasses.field(default_factory=dict)

    def amounts(self, resource: ResourceView) -> dict[str, int]:
        """The resource's amounts, units with 0 left out; raises :class:`CostError`."""
        if self.by_property is not None:
            value = _property(resource, self.by_property)
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise CostError(f"property '{self.by_property}' must be a string, not "
                                f"{_show(value)}")
            amounts = self.table.get(str(value))
            if amounts is None:
                raise CostError(f"{self.by_property} '{value}' has no cost in the placement "
                                "inventory")
            return {unit: amount for unit, amount in amounts.items() if amount}
        result = {unit: amount for unit, amount in self.fixed.items() if amount}
        for unit, source in self.from_property.items():
            name = source.property
            if resource.properties.get(name) is None and source.default is not None:
                amount: int | None = source.default
            else:
                amount = _whole_number(_property(resource, name))
            if amount is None:
                raise CostError(f"property '{name}' must be a whole number of {unit}, not "
                                f"{_show(resource.properties[name])}")
            if amount:
                result[unit] = result.get(unit, 0) + amount
        return result


@dataclasses.dataclass(frozen=True)
class Inventory:
    path: str
    units: tuple[str, ...]
    racks: tuple[Rack, ...]
    types: Mapping[str, TypeCost]

    def hosts(self) -> frozenset[HostKey]:
        return frozenset((rack.name, host.name) for rack in self.racks for host in rack.hosts)


def load_inventory(path: str) -> Inventory:
    """Read and check the inventory file; raise :class:`InventoryError` on any problem."""
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise InventoryError(f"{path}: cannot be read: {exc}") from exc
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise InventoryError(f"{path}: is not valid YAML: {detail}") from exc
    return _Reader(path).inventory(document)


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, key: str, problem: str) -> InventoryError:
        return InventoryError(f"{self.path}: {key}: {problem}" if key
                              else f"{self.path}: {problem}")

    def inventory(self, document: Any) -> Inventory:
        if not isinstance(document, Mapping):
            raise self.fail("", "must be a mapping with the keys " + ", ".join(TOP_KEYS))
        for key in document:
            if key not in TOP_KEYS:
                raise self.fail(str(key), f"unknown key (known: {', '.join(TOP_KEYS)})")
        for key in TOP_KEYS:
            if key not in document:
                raise self.fail(key, "is missing")
        units = self.units(document["units"])
        racks = self.racks(document["racks"], units)
        types = self.types(document["types"], units)
        return Inventory(path=self.path, units=units, racks=racks, types=types)

    def units(self, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not value:
            raise self.fail("units", "must be a non-empty list of unit names")
        for index, unit in enumerate(value):
            if not isinstance(unit, str) or not unit:
                raise self.fail(f"units[{index}]", "must be a non-empty string")
            if unit in value[:index]:
                raise self.fail(f"units[{index}]", f"'{unit}' is listed twice")
        return tuple(value)

    def racks(self, value: Any, units: tuple[str, ...]) -> tuple[Rack, ...]:
        self.named_mapping("racks", value, "rack names to racks")
        racks = []
        seen: dict[str, str] = {}
        for rack_name, body in value.items():
            key = f"racks.{rack_name}"
            if not isinstance(body, Mapping) or set(body) != {"hosts"}:
                raise self.fail(key, "must be a mapping with the one key 'hosts'")
            hosts_key = f"{key}.hosts"
            self.named_mapping(hosts_key, body["hosts"], "host names to capacities")
            hosts = []
            for host_name, capacity in body["hosts"].items():
                host_key = f"{hosts_key}.{host_name}"
                if host_name in seen:
                    raise self.fail(host_key, f"host '{host_name}' is also in rack "
                                    f"'{seen[host_name]}'; host names must be unique")
                seen[host_name] = rack_name
                amounts = self.amounts(host_key, capacity, units)
                if not amounts:
                    raise self.fail(host_key, "must give the capacity of at least one unit")
                hosts.append(Host(name=host_name, capacity=amounts))
            racks.append(Rack(name=rack_name, hosts=tuple(hosts)))
        return tuple(racks)

    def types(self, value: Any, units: tuple[str, ...]) -> Mapping[str, TypeCost]:
        self.named_mapping("types", value, "resource types to costs")
        types = {}
        for type_name, body in value.items():
            key = f"types.{type_name}"
            if not isinstance(body, Mapping):
                raise self.fail(key, "must be a mapping with 'cost', or with 'by_property' "
                                "and 'costs'")
            if set(body) == {"cost"}:
                types[type_name] = self.cost(f"{key}.cost", body["cost"], units)
            elif set(body) == {"by_property", "costs"}:
                types[type_name] = self.table(key, body, units)
            else:
                found = ", ".join(sorted(map(str, body))) or "nothing"
                raise self.fail(key, "must have either 'cost', or 'by_property' and "
                                f"'costs' (found: {found})")
        return types

    def cost(self, key: str, value: Any, units: tuple[str, ...]) -> TypeCost:
        if not isinstance(value, Mapping):
            raise self.fail(key, "must be a mapping of unit to an amount or "
                            "{property: NAME}")
        fixed: dict[str, int] = {}
        from_property: dict[str, PropertyAmount] = {}
        for unit, amount in value.items():
            unit_key = f"{key}.{unit}"
            self.unit(unit_key, unit, units)
            if not isinstance(amount, Mapping):
                fixed[unit] = self.whole(unit_key, amount)
                continue
            name = amount.get("property")
            if (not set(amount) <= {"property", "default"} or not isinstance(name, str)
                    or not name):
                raise self.fail(unit_key, "must be a whole number or {property: NAME} "
                                "(with an optional default: N)")
            default = (self.whole(f"{unit_key}.default", amount["default"])
                       if "default" in amount else None)
            from_property[unit] = PropertyAmount(name, default)
        return TypeCost(fixed=fixed, from_property=from_property)

    def table(self, key: str, body: Mapping[str, Any], units: tuple[str, ...]) -> TypeCost:
        by_property = body["by_property"]
        if not isinstance(by_property, str) or not by_property:
            raise self.fail(f"{key}.by_property", "must be a property name")
        costs = body["costs"]
        if not isinstance(costs, Mapping) or not costs:
            raise self.fail(f"{key}.costs", f"must map each value of '{by_property}' to "
                            "its amounts")
        table = {}
        for choice, amounts in costs.items():
            choice_key = f"{key}.costs.{choice}"
            if isinstance(choice, bool) or not isinstance(choice, str | int):
                raise self.fail(choice_key, f"must be a value of '{by_property}' (a string)")
            table[str(choice)] = self.amounts(choice_key, amounts, units)
        return TypeCost(by_property=by_property, table=table)

    def amounts(self, key: str, value: Any, units: tuple[str, ...]) -> dict[str, int]:
        if not isinstance(value, Mapping):
            raise self.fail(key, "must be a mapping of unit to a whole number")
        result = {}
        for unit, amount in value.items():
            self.unit(f"{key}.{unit}", unit, units)
            result[unit] = self.whole(f"{key}.{unit}", amount)
        return result

    def unit(self, key: str, unit: Any, units: tuple[str, ...]) -> None:
        if unit not in units:
            raise self.fail(key, f"unknown unit '{unit}' (units: {', '.join(units)})")

    def whole(self, key: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(key, f"must be a whole number, 0 or more, not {_show(value)}")
        return value

    def named_mapping(self, key: str, value: Any, what: str) -> None:
        if not isinstance(value, Mapping) or not value:
            raise self.fail(key, f"must be a non-empty mapping of {what}")
        for name in value:
            if not isinstance(name, str) or not name:
                raise self.fail(f"{key}.{name}", "names must be non-empty strings")


def _property(resource: ResourceView, name: str) -> Any:
    if name not in resource.properties or resource.properties[name] is None:
        raise CostError(f"property '{name}' is not set")
    value = resource.properties[name]
    if isinstance(value, Unresolved):
        raise CostError(f"property '{name}' is only known at run time")
    return value


def _whole_number(value: Any) -> int | None:
    """An int, a float with no fraction, or a string of digits (parameters arrive as
    strings); None for anything else or a negative number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and value >= 0:
        return value
    return None


def _show(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."
