"""CloudFormation functions (``Ref``, ``Fn::…``), as Heat evaluates them in its two CFN
formats and in HOT 2013-05-23.

Most are the HOT function under another name; the ones with no HOT twin are here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from engine.schema import load_json
from engine.template.functions.core import Function, Scope, is_sequence, resolve
from engine.template.functions.logic import And, Equals, Not, Or
from engine.template.functions.references import ResourceFacade
from engine.template.functions.strings import ListJoin, StrReplace, StrSplit

# What Fn::GetAZs gives without a compute service to ask (Heat's answer then too).
DEFAULT_AZS = ("nova",)


class CfnJoin(ListJoin):
    fn_name = "Fn::Join"


class CfnSplit(StrSplit):
    fn_name = "Fn::Split"


class CfnReplace(StrReplace):
    fn_name = "Fn::Replace"


class CfnResourceFacade(ResourceFacade):
    fn_name = "Fn::ResourceFacade"


class CfnEquals(Equals):
    fn_name = "Fn::Equals"


class CfnNot(Not):
    fn_name = "Fn::Not"


class CfnAnd(And):
    fn_name = "Fn::And"


class CfnOr(Or):
    fn_name = "Fn::Or"


@dataclasses.dataclass(frozen=True)
class Select(Function):
    """``Fn::Select: [index, list|map]``: an index out of range, a missing key or a value
    not known yet is ``""``, as in Heat; a string collection is read as JSON."""

    fn_name = "Fn::Select"
    index: Any
    collection: Any

    def resolve(self, scope: Scope) -> Any:
        index, collection = resolve(self.index, scope), resolve(self.collection, scope)
        if collection in ("", None):
            return ""
        if isinstance(collection, str):
            try:
                collection = load_json(collection)
            except ValueError as exc:
                raise self.fail(f'"{self.fn_name}": {exc}') from None
        if isinstance(collection, Mapping):
            if not isinstance(index, str):
                raise self.fail(f'Index to "{self.fn_name}" must be a string')
            return collection.get(index, "")
        if is_sequence(collection):
            try:
                index = int(index)
            except (TypeError, ValueError):
                raise self.fail(f'Index to "{self.fn_name}" must be an integer') from None
            try:
                return collection[index]
            except IndexError:
                return ""
        raise self.fail(f"Arguments to {self.fn_name} not fully resolved")


@dataclasses.dataclass(frozen=True)
class Base64(Function):
    """``Fn::Base64``: the string itself (Heat encodes nothing; the guest decodes nothing)."""

    fn_name = "Fn::Base64"
    value: Any

    def resolve(self, scope: Scope) -> Any:
        value = resolve(self.value, scope)
        if not isinstance(value, str):
            raise self.fail(f'"{self.fn_name}" argument must be a string')
        return value


@dataclasses.dataclass(frozen=True)
class GetAZs(Function):
    """``Fn::GetAZs: region``: the availability zones (the region is ignored, as in Heat)."""

    fn_name = "Fn::GetAZs"
    region: Any

    def resolve(self, scope: Scope) -> Any:
        return list(DEFAULT_AZS)


@dataclasses.dataclass(frozen=True)
class FindInMap(Function):
    """``Fn::FindInMap: [map, key, value]`` in the template's ``Mappings``."""

    fn_name = "Fn::FindInMap"
    mappings: Mapping[str, Any]
    path: tuple[Any, Any, Any]

    def resolve(self, scope: Scope) -> Any:
        value: Any = self.mappings
        where = "Mappings"
        for key in (resolve(p, scope) for p in self.path):
            # A map or list key is in no map (Heat fails with Python's unhashable type).
            if (not isinstance(value, Mapping) or isinstance(key, (Mapping, list))
                    or key not in value):
                raise self.fail(f'"{key}" is not in {where}')
            value, where = value[key], f"{where}.{key}"
        return value

    def args(self) -> tuple[Any, ...]:
        return self.path


_MEMBER = re.compile(r"^\.member\.(\d+)\.(.+)$")


@dataclasses.dataclass(frozen=True)
class MemberListToMap(Function):
    """``Fn::MemberListToMap: [key_name, value_name, [".member.N.<key_name>=k", …]]``."""

    fn_name = "Fn::MemberListToMap"
    key_name: Any
    value_name: Any
    members: Any

    def resolve(self, scope: Scope) -> Any:
        key_name, value_name = resolve(self.key_name, scope), resolve(self.value_name, scope)
        members = resolve(self.members, scope)
        if not isinstance(key_name, str):
            raise self.fail(f"{self.fn_name} Key Name must be a string")
        if not isinstance(value_name, str):
            raise self.fail(f"{self.fn_name} Value Name must be a string")
        if not is_sequence(members):
            raise self.fail("Member list must be a list")
        groups: dict[int, dict[str, str]] = {}
        for item in members:
            if not isinstance(item, str):
                raise self.fail("Member list items must be strings")
            path, _, value = item.partition("=")
            found = _MEMBER.match(path)
            if found:
                groups.setdefault(int(found.group(1)), {})[found.group(2)] = value
        return {group[key_name]: group[value_name]
                for _, group in sorted(groups.items())
                if key_name in group and value_name in group}
