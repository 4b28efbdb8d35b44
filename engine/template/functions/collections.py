"""Functions over lists and maps."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from engine import budget
from engine.template.functions.core import Function, Scope, is_sequence, resolve


@dataclasses.dataclass(frozen=True)
class ListConcat(Function):
    """``list_concat: [list, …]``."""

    fn_name = "list_concat"
    lists: Any

    def resolve(self, scope: Scope) -> Any:
        lists = resolve(self.lists, scope)
        if not is_sequence(lists):
            raise self.fail(f'Incorrect arguments to "{self.fn_name}" should be: '
                            f'"{self.fn_name}" : [ [ <value 1>, <value 2> ], '
                            "[ <value 3>, <value 4> ] ]")
        result: list[Any] = []
        for value in lists:
            if value is None:
                continue
            if not is_sequence(value):
                raise self.fail(f"Incorrect arguments: Items to concat must be lists. "
                                f"{json.dumps(lists, default=str)} contains an item that is "
                                f"not a list: {json.dumps(value, default=str)}")
            budget.check_items(len(result) + len(value), self.fn_name, self.location)
            result.extend(value)
        # The same list given many times is many copies once stored.
        return budget.check_size(self._finish(result), self.fn_name, self.location)

    def _finish(self, items: list[Any]) -> list[Any]:
        return items


@dataclasses.dataclass(frozen=True)
class ListConcatUnique(ListConcat):
    """``list_concat`` keeping the first of equal items."""

    fn_name = "list_concat_unique"

    def _finish(self, items: list[Any]) -> list[Any]:
        return _without_repeats(items)


@dataclasses.dataclass(frozen=True)
class Repeat(Function):
    """``repeat: {for_each: {placeholder: list|map, …}, template, permutations?}``.

    The template is resolved once, then copied for each combination with every placeholder
    replaced in keys and strings. With ``permutations`` (the default) the combinations are
    the product of the lists, the last varying fastest; without it the lists are walked
    side by side. A map in ``for_each`` is walked by its keys (2016-10-14 on, ``maps``)."""

    fn_name = "repeat"
    for_each: Any
    template: Any
    permutations: Any = True
    maps: bool = True

    def resolve(self, scope: Scope) -> Any:
        for_each = resolve(self.for_each, scope)
        if not isinstance(for_each, Mapping):
            raise self.fail(f'The "for_each" argument to "{self.fn_name}" must contain a map')
        permutations = resolve(self.permutations, scope)
        if not isinstance(permutations, bool):
            raise self.fail(f'"permutations" should be boolean type for {self.fn_name} '
                            "function.")
        maps = self.maps and permutations
        loops: dict[str, list[Any]] = {}
        for key, values in for_each.items():
            if values is None:
                values = []
            if isinstance(values, Mapping) and maps:
                values = list(values)
            if not is_sequence(values):
                kinds = "lists or maps" if maps else "lists"
                raise self.fail(f'The values of the "for_each" argument to "{self.fn_name}" '
                                f"must be {kinds}")
            loops[str(key)] = list(values)
        keys = list(loops)
        if not keys:
            # Heat fails here with Python's unpacking error.
            raise self.fail(f'The "for_each" argument to "{self.fn_name}" must not be empty')
        combos: Iterable[tuple[Any, ...]]
        if permutations:
            # Counted before a single combination is made (the lists' product).
            budget.check_items(math.prod(len(v) for v in loops.values()), self.fn_name,
                               self.location)
            combos = itertools.product(*(loops[k] for k in keys))
        else:
            if len({len(v) for v in loops.values()}) > 1:
                raise self.fail(f"For {self.fn_name}, the length of for_each values should be "
                                "equal if no nested loop.")
            combos = zip(*(loops[k] for k in keys), strict=True)
        template = resolve(self.template, scope)
        meter = budget.Meter(self.fn_name, self.location)
        meter.add_size(1)
        result = []
        for combo in combos:
            result.append(self._substitute(template, list(zip(keys, combo, strict=True))))
            meter.add(result[-1])
        return result

    def _substitute(self, value: Any, replacements: list[tuple[str, Any]]) -> Any:
        """``value`` with the placeholders replaced in for_each order, in map keys and
        strings alike (a value that contains a later placeholder is replaced again, as
        in Heat)."""
        if isinstance(value, str):
            for key, item in replacements:
                # Heat replaces every placeholder in every string, found or not, so a
                # non-string item fails wherever the template has a string.
                if not isinstance(item, str):
                    raise self.fail(f'"{self.fn_name}" can only put strings into a string: '
                                    f'"{key}" is {item!r:.200}')
                if key in value and len(item) > len(key):
                    # One string may not outgrow the budget either; checked unbuilt.
                    grown = len(value) + value.count(key) * (len(item) - len(key))
                    budget.Meter(self.fn_name, self.location).add_size(grown)
                value = value.replace(key, item)
            return value
        if isinstance(value, Mapping):
            return {self._substitute(k, replacements): self._substitute(v, replacements)
                    for k, v in value.items()}
        if is_sequence(value):
            return [self._substitute(v, replacements) for v in value]
        return value


_MAP_MERGE_EXAMPLE = '"map_merge" : [ { "key1": "val1" }, { "key2": "val2" } ]'


@dataclasses.dataclass(frozen=True)
class MapMerge(Function):
    """``map_merge: [map, …]``: later keys win."""

    fn_name = "map_merge"
    maps: Any

    def resolve(self, scope: Scope) -> Any:
        maps = resolve(self.maps, scope)
        if not is_sequence(maps):
            raise self.fail(f'Incorrect arguments to "{self.fn_name}" should be: '
                            f"{_MAP_MERGE_EXAMPLE}")
        merged: dict[Any, Any] = {}
        for value in maps:
            if value is None:
                continue
            if not isinstance(value, Mapping):
                raise self.fail(f"Incorrect arguments: Items to merge must be maps. "
                                f"{value!r:.200} is type {type(value)} instead of a dict")
            budget.check_items(len(merged) + len(value), self.fn_name, self.location)
            merged.update(value)
        return budget.check_size(merged, self.fn_name, self.location)


_MAP_REPLACE_EXAMPLE = ('"map_replace" : [ { "key1": "val1" }, {"keys": {"key1": "key2"}, '
                        '"values": {"val1": "val2"}}]')


@dataclasses.dataclass(frozen=True)
class MapReplace(Function):
    """``map_replace: [map, {keys: {old: new}, values: {old: new}}]``."""

    fn_name = "map_replace"
    args: Any

    def resolve(self, scope: Scope) -> Any:
        args = resolve(self.args, scope)
        if not is_sequence(args) or len(args) != 2:
            raise self.fail(f'Incorrect arguments to "{self.fn_name}" should be: '
                            f"{_MAP_REPLACE_EXAMPLE}")
        mapping, repl = args[0] or {}, args[1] or {}
        keys: Any = repl.get("keys") or {} if isinstance(repl, Mapping) else None
        values: Any = repl.get("values") or {} if isinstance(repl, Mapping) else None
        if not all(isinstance(m, Mapping) for m in (mapping, repl, keys, values)):
            raise self.fail(f'Incorrect arguments: to "{self.fn_name}", arguments must be a '
                            f"list of maps. Example:  {_MAP_REPLACE_EXAMPLE}")
        if set(repl) - {"keys", "values"}:
            raise self.fail(f'Incorrect arguments to "{self.fn_name}" should be: '
                            f"{_MAP_REPLACE_EXAMPLE}")
        result: dict[Any, Any] = {}
        for key, value in mapping.items():
            new_key = keys.get(key)
            if new_key is None:
                new_key = key
            elif isinstance(new_key, (Mapping, list)):
                # Heat fails here with Python's "unhashable type".
                raise self.fail(f"key replacement {json.dumps(new_key, default=str):.200} for "
                                f"{key} is not a valid map key")
            elif new_key != key and new_key in mapping:
                raise self.fail(f"key replacement {new_key} collides with a key in the "
                                "input map")
            if new_key in result:
                raise self.fail(f"key replacement {new_key} collides with a key in the "
                                "output map")
            hashable = not isinstance(value, (Mapping, list))
            result[new_key] = values.get(value, value) if hashable else value
        # One long replacement value given to many keys is many copies once stored.
        return budget.check_size(result, self.fn_name, self.location)


@dataclasses.dataclass(frozen=True)
class Filter(Function):
    """``filter: [values_to_remove, list]``."""

    fn_name = "filter"
    remove: Any
    items: Any

    def resolve(self, scope: Scope) -> Any:
        remove, items = resolve(self.remove, scope), resolve(self.items, scope)
        if not items:
            return items
        if not isinstance(items, list):
            raise self.fail(f'"{self.fn_name}" only works with lists')
        if not remove:
            return items
        if not isinstance(remove, list):
            raise self.fail(f'"{self.fn_name}" filters a list of values')
        unwanted = _Seen(remove)
        return [item for item in items if item not in unwanted]


@dataclasses.dataclass(frozen=True)
class Contains(Function):
    """``contains: [value, sequence]`` (a string sequence is a substring test)."""

    fn_name = "contains"
    value: Any
    sequence: Any

    def resolve(self, scope: Scope) -> Any:
        value, sequence = resolve(self.value, scope), resolve(self.sequence, scope)
        if not isinstance(sequence, (list, tuple, str)):
            raise self.fail(f'Second argument to "{self.fn_name}" should be a sequence.')
        if isinstance(sequence, str) and not isinstance(value, str):
            raise self.fail(f'"{self.fn_name}" can only look for a string in a string')
        return value in sequence


def _without_repeats(items: list[Any]) -> list[Any]:
    """``items`` keeping the first of equal ones (Python's ``==``, as Heat compares)."""
    seen, unique = _Seen(), []
    for item in items:
        if item not in seen:
            seen.add(item)
            unique.append(item)
    return unique


class _Seen:
    """A set of template values with Python's equality, maps and lists included, so
    that a membership test is one hash, not a scan (``list_concat_unique`` and
    ``filter`` over long lists stay linear)."""

    def __init__(self, items: Iterable[Any] = ()) -> None:
        self._keys: set[Any] = set()
        self._unhashable: list[Any] = []
        for item in items:
            self.add(item)

    def add(self, item: Any) -> None:
        try:
            self._keys.add(_hashable(item))
        except TypeError:
            self._unhashable.append(item)

    def __contains__(self, item: Any) -> bool:
        try:
            if _hashable(item) in self._keys:
                return True
        except TypeError:
            pass
        return item in self._unhashable


def _hashable(value: Any) -> Any:
    """A stand-in for ``value`` that is equal exactly when the values are equal (``1``,
    ``1.0`` and ``True`` alike, maps in any order) and hashable."""
    if isinstance(value, Mapping):
        return ("map", frozenset((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("list", tuple(_hashable(v) for v in value))
    return value
