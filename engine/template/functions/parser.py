"""Template data -> expression tree: which function each name is, in each version.

``PARSERS`` is the registry of template functions, HOT's and CFN's: name -> a parser that
checks the shape of the (already parsed) arguments and builds the node. A name is looked
up only if the template's version lists it (``engine.template.versions``), so the same
name can parse differently by version (the parser reads ``call.version``). Inside
conditions only the version's condition functions are calls.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from engine.errors import Location, StackValidationFailed
from engine.template.functions.cfn import (
    Base64,
    CfnAnd,
    CfnEquals,
    CfnJoin,
    CfnNot,
    CfnOr,
    CfnReplace,
    CfnResourceFacade,
    CfnSplit,
    FindInMap,
    GetAZs,
    MemberListToMap,
    Select,
)
from engine.template.functions.collections import (
    Contains,
    Filter,
    ListConcat,
    ListConcatUnique,
    MapMerge,
    MapReplace,
    Repeat,
)
from engine.template.functions.core import Function
from engine.template.functions.logic import ELIDED, And, ConditionRef, Equals, If, Not, Or
from engine.template.functions.references import GetAttr, GetParam, GetResource, ResourceFacade
from engine.template.functions.strings import (
    Digest,
    ListJoin,
    MakeUrl,
    StrReplace,
    StrReplaceStrict,
    StrReplaceVstrict,
    StrSplit,
    check_make_url,
)
from engine.template.functions.yaql_expression import Yaql, parse_expression
from engine.template.parse import Path, SourceDocument
from engine.template.versions import HotVersion


@dataclasses.dataclass(frozen=True)
class ParseContext:
    """What parsing a value needs besides the value: the document (for lines), the
    version (for the function set), the request's ``files`` (for ``get_file``) and the
    names in the ``conditions`` section (None: references to them are not checked)."""

    doc: SourceDocument
    version: HotVersion
    files: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    conditions: frozenset[str] | None = None
    in_condition: bool = False
    # CFN: ``Ref`` names a resource when the template has one of that name, else a
    # parameter (decided when parsed, as in Heat); ``Fn::FindInMap`` reads ``Mappings``.
    resource_names: frozenset[str] = frozenset()
    mappings: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def functions(self) -> frozenset[str]:
        v = self.version
        return v.condition_functions if self.in_condition else v.functions

    def for_condition(self) -> ParseContext:
        return dataclasses.replace(self, in_condition=True)


@dataclasses.dataclass(frozen=True)
class Call:
    """One call being parsed: its context, name and where it is."""

    ctx: ParseContext
    name: str
    path: Path

    @property
    def loc(self) -> Location:
        return self.ctx.doc.location(self.path)

    @property
    def version(self) -> HotVersion:
        return self.ctx.version

    def bad(self, reason: str) -> StackValidationFailed:
        return StackValidationFailed(self.loc, reason=reason)


Parser = Callable[[Call, Any], Any]


def parse_update_policy(ctx: ParseContext, data: Any, path: Path) -> Any:
    """A resource's update policy (HOT ``update_policy``, CFN ``UpdatePolicy``): a map
    whose values may call functions; None when the resource has none."""
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise StackValidationFailed(ctx.doc.location(path), reason=(
            f"Resource {path[1]} {path[2]} type must be object"))
    return parse_value(ctx, data, path)


def parse_value(ctx: ParseContext, data: Any, path: Path) -> Any:
    """Replace every function call in ``data`` by a Function node."""
    if isinstance(data, Mapping):
        if len(data) == 1:
            (key, arg), = data.items()
            if key in ctx.functions():
                return _parse_call(ctx, key, arg, (*path, key))
            if key in ctx.version.removed:
                raise StackValidationFailed(
                    ctx.doc.location((*path, key)),
                    reason=f"The template version is invalid: The function {key} is not "
                           "supported in this version of HOT.")
            if ctx.in_condition and key in ctx.version.functions:
                raise StackValidationFailed(
                    ctx.doc.location((*path, key)),
                    reason=f'The function "{key}" is invalid in this context')
        return {k: parse_value(ctx, v, (*path, k)) for k, v in data.items()}
    if isinstance(data, list):
        return [parse_value(ctx, v, (*path, i)) for i, v in enumerate(data)]
    return data


def parse_condition(ctx: ParseContext, data: Any, path: Path, *, named: bool = True) -> Any:
    """A condition: a boolean, a condition function or (where ``named``) the name of a
    condition. A definition in the ``conditions`` section may not be a bare name, as in
    Heat; an argument of not/and/or, an ``if`` and a ``condition`` key may."""
    ctx = ctx.for_condition()
    loc = ctx.doc.location(path)
    if isinstance(data, bool):
        return data
    if isinstance(data, str) and named:
        if ctx.conditions is not None and data not in ctx.conditions:
            raise StackValidationFailed(loc, reason=f'Invalid condition "{data}"')
        return ConditionRef(loc, data)
    parsed = parse_value(ctx, data, path)
    if isinstance(parsed, Function):
        return parsed
    if not named:
        raise StackValidationFailed(loc, reason=f'The definition of condition "{path[-1]}" '
                                                f"is invalid: {data}")
    raise StackValidationFailed(loc, reason=f'Invalid condition "{data}"')


def _parse_call(ctx: ParseContext, name: str, arg: Any, path: Path) -> Any:
    call = Call(ctx, name, path)
    parser = PARSERS.get(name)
    if parser is None:
        raise call.bad(f'The function "{name}" is not supported by Kiln yet.')
    if name in _RAW_ARGUMENTS:
        return parser(call, arg)
    return parser(call, parse_value(ctx, arg, path))


def _list_of(call: Call, args: Any, form: str, *, least: int = 1,
             most: int | None = None) -> list[Any]:
    if not isinstance(args, list) or len(args) < least or (most is not None
                                                             and len(args) > most):
        raise call.bad(f'Incorrect arguments to "{call.name}" should be: {call.name}: {form}')
    return args


def _map_of(call: Call, args: Any, required: tuple[str, ...],
            optional: tuple[str, ...] = ()) -> Mapping[str, Any]:
    if (not isinstance(args, Mapping) or not set(required) <= set(args)
            or set(args) - set(required) - set(optional)):
        keys = ", ".join([*required, *(f"{k} (optional)" for k in optional)])
        raise call.bad(f'Arguments to "{call.name}" must be a map with the keys: {keys}')
    return args


# --- the parsers -------------------------------------------------------------------------
# Messages are Heat's, so that a tenant moving a template sees the text they know.


def _should_be(call: Call, example: str) -> StackValidationFailed:
    return call.bad(f'Incorrect arguments to "{call.name}" should be: {example}')


def _get_param(call: Call, args: Any) -> Function:
    if not args:
        raise call.bad(f'Function "{call.name}" must have arguments')
    items = args if isinstance(args, list) else [args]
    if not isinstance(args, (list, str)):
        raise call.bad(f'Argument to "{call.name}" must be string or list')
    if not isinstance(items[0], str):
        raise call.bad(f'Parameter name in "{call.name}" must be string')
    return GetParam(call.loc, items[0], tuple(items[1:]))


def _get_resource(call: Call, args: Any) -> Function:
    if not isinstance(args, str):
        raise call.bad(f'Argument to "{call.name}" must be a resource name')
    return GetResource(call.loc, args)


def _get_attr(call: Call, args: Any) -> Function:
    whole = call.version.since("2015-10-15")
    if whole and not args:
        raise call.bad(f'Arguments to "{call.name}" can be of the next forms: '
                       "[resource_name] or [resource_name, attribute, (path), ...]")
    if not isinstance(args, list):
        raise call.bad(f'Argument to "{call.name}" must be a list')
    if len(args) < (1 if whole else 2):
        raise call.bad(f'Arguments to "{call.name}" must be of the form '
                       "[resource_name, attribute, (path), ...]")
    if not isinstance(args[0], str) or (len(args) > 1 and not isinstance(args[1], str)):
        raise call.bad(f'The resource name and attribute in "{call.name}" must be strings')
    return GetAttr(call.loc, args[0], args[1] if len(args) > 1 else None, tuple(args[2:]),
                   path_to_resource=call.version.since("2014-10-16"))


def _get_file(call: Call, args: Any) -> Any:
    if not isinstance(args, str):
        raise call.bad(f'Argument to "{call.name}" must be a string')
    content = call.ctx.files.get(args)
    if content is None:
        raise call.bad(f'No content found in the "files" section for {call.name} path: '
                       f"{args}")
    return content


def _str_replace(call: Call, args: Any) -> Function:
    kinds = {"str_replace": StrReplace, "str_replace_strict": StrReplaceStrict,
             "str_replace_vstrict": StrReplaceVstrict}
    if not isinstance(args, Mapping):
        raise call.bad(f'Arguments to "{call.name}" must be a map')
    if "template" not in args or "params" not in args:
        raise call.bad(f'"{call.name}" syntax should be {call.name}: {{template: This is '
                       "var1 template var2, params: {var1: a, var2: string}}")
    if not isinstance(args["params"], (Mapping, Function)):
        raise call.bad(f'"{call.name}" parameters must be a mapping')
    return kinds[call.name](call.loc, args["template"], args["params"],
                            json_values=call.version.since("2015-10-15"))


def _str_split(call: Call, args: Any) -> Function:
    if not isinstance(args, list) or len(args) < 2:
        raise _should_be(call, f'"{call.name}" : [ ",", "apples,pears", <index>]')
    return StrSplit(call.loc, args[0], args[1], args[2] if len(args) > 2 else None)


def _list_join(call: Call, args: Any) -> Function:
    several = call.version.since("2015-10-15")
    if not isinstance(args, list) or len(args) < 2 or (not several and len(args) != 2):
        more = " ..." if several else ""
        raise _should_be(call, f'"{call.name}" : [ " ", [ "str1", "str2"]{more}]')
    return ListJoin(call.loc, args[0], tuple(args[1:]), several=several)


def _list_concat(call: Call, args: Any) -> Function:
    if isinstance(args, (str, Mapping)):
        raise _should_be(call, f'"{call.name}" : [ [ <value 1>, <value 2> ], '
                               "[ <value 3>, <value 4> ] ]")
    kind = ListConcatUnique if call.name == "list_concat_unique" else ListConcat
    return kind(call.loc, args)


def _repeat(call: Call, args: Any) -> Function:
    if not isinstance(args, Mapping):
        raise call.bad(f'Arguments to "{call.name}" must be a map')
    if "for_each" not in args or "template" not in args:
        raise call.bad('"repeat" syntax should be repeat: {template: This is %var%, '
                       "for_each: {%var%: [a, b, c]}}")
    if not isinstance(args["for_each"], (Mapping, Function)):
        raise call.bad(f'The "for_each" argument to "{call.name}" must contain a map')
    # Before 2017-09-01 Heat ignores "permutations" (and any other key); so does Kiln.
    nested = call.version.since("2017-09-01")
    permutations = args.get("permutations", True) if nested else True
    if not isinstance(permutations, (bool, Function)):
        raise call.bad(f'"permutations" should be boolean type for {call.name} function.')
    return Repeat(call.loc, args["for_each"], args["template"], permutations,
                  maps=call.version.since("2016-10-14"))


def _digest(call: Call, args: Any) -> Function:
    if not isinstance(args, list):
        raise call.bad(f'Argument to function "{call.name}" must be a list of strings')
    if len(args) != 2:
        raise call.bad(f'Function "{call.name}" usage: ["<algorithm>", "<value>"]')
    return Digest(call.loc, args[0], args[1])


def _map_merge(call: Call, args: Any) -> Function:
    return MapMerge(call.loc, args)


def _map_replace(call: Call, args: Any) -> Function:
    return MapReplace(call.loc, args)


def _make_url(call: Call, args: Any) -> Function:
    if not isinstance(args, Function):
        check_make_url(args, call.bad)
    return MakeUrl(call.loc, args)


def _filter(call: Call, args: Any) -> Function:
    if not isinstance(args, list):
        raise call.bad(f'Argument to "{call.name}" must be a list')
    if len(args) != 2:
        raise call.bad(f'"{call.name}" expected 2 arguments of the form [values, sequence] '
                       f"but got {len(args)} arguments instead")
    return Filter(call.loc, args[0], args[1])


def _contains(call: Call, args: Any) -> Function:
    if not args or not isinstance(args, list):
        raise _should_be(call, f'"{call.name}" : [ "value1", [ "value1", "value2"]]')
    if len(args) != 2:
        raise call.bad(f'Arguments to "{call.name}" must be of the form: '
                       "[value1, [value1, value2]]")
    return Contains(call.loc, args[0], args[1])


def _yaql(call: Call, args: Any) -> Function:
    if not isinstance(args, Mapping):
        raise call.bad(f'Arguments to "{call.name}" must be a map.')
    if "expression" not in args or set(args) - {"expression", "data"}:
        raise call.bad(f'"{call.name}" syntax should be {call.name}: {{expression: '
                       "$.data.var1.sum(), data: {var1: [3, 2, 1]}}")
    expression = args["expression"]
    if not isinstance(expression, str):
        raise call.bad(f'The "expression" argument to {call.name} must contain a string.')
    try:
        parse_expression(expression)
    except ValueError as exc:
        raise call.bad(f"Bad expression {exc}.") from None
    return Yaql(call.loc, expression, args.get("data", {}))


def _resource_facade(call: Call, args: Any) -> Function:
    keys = ("metadata", "deletion_policy", "update_policy")
    if args not in keys:
        raise call.bad(f'Incorrect arguments to "{call.name}" should be one of: '
                       f'{", ".join(keys)}')
    return ResourceFacade(call.loc, args)


def _if(call: Call, args: Any) -> Function:
    elide = call.version.since("2021-04-16")
    if not isinstance(args, list) or len(args) not in ((2, 3) if elide else (3,)):
        raise call.bad(f'Arguments to "{call.name}" must be of the form: '
                       "[condition_name, value_if_true, value_if_false]")
    ctx, path = call.ctx, call.path
    condition = parse_condition(ctx, args[0], (*path, 0))
    when_true = parse_value(ctx, args[1], (*path, 1))
    when_false = parse_value(ctx, args[2], (*path, 2)) if len(args) == 3 else ELIDED
    return If(call.loc, condition, when_true, when_false)


def _equals(call: Call, args: Any) -> Function:
    if not args or not isinstance(args, list) or len(args) != 2:
        raise call.bad(f'Arguments to "{call.name}" must be of the form: [value_1, value_2]')
    return Equals(call.loc, args[0], args[1])


def _not(call: Call, args: Any) -> Function:
    if args is None:
        raise call.bad(f'Argument to "{call.name}" must be a condition')
    return Not(call.loc, parse_condition(call.ctx, args, call.path))


_JUNCTIONS: Mapping[str, type[And] | type[Or]] = {
    "and": And, "or": Or, "Fn::And": CfnAnd, "Fn::Or": CfnOr}


def _and_or(call: Call, args: Any) -> Function:
    """HOT's and/or and CFN's Fn::And/Fn::Or: a list of at least two conditions."""
    if not isinstance(args, list):
        raise call.bad(f'Arguments to "{call.name}" must be a list of conditions')
    if len(args) < 2:
        raise call.bad(f'The minimum number of condition arguments to "{call.name}" is 2.')
    conditions = tuple(parse_condition(call.ctx, c, (*call.path, i))
                       for i, c in enumerate(args))
    return _JUNCTIONS[call.name](call.loc, conditions)


# --- CloudFormation functions ---------------------------------------------------------


def _ref(call: Call, args: Any) -> Function:
    if not isinstance(args, str):
        raise call.bad(f'Argument to "{call.name}" must be a resource or parameter name')
    if args in call.ctx.resource_names and not call.ctx.in_condition:
        return GetResource(call.loc, args)
    return GetParam(call.loc, args, ())


def _get_att(call: Call, args: Any) -> Function:
    if (not isinstance(args, list) or len(args) != 2
            or not all(isinstance(a, str) for a in args)):
        raise call.bad(f'Arguments to "{call.name}" must be of the form '
                       "[resource_name, attribute]")
    return GetAttr(call.loc, args[0], args[1], ())


def _cfn_join(call: Call, args: Any) -> Function:
    if not isinstance(args, list) or len(args) != 2:
        raise _should_be(call, f'"{call.name}" : [ " ", [ "str1", "str2"]]')
    return CfnJoin(call.loc, args[0], (args[1],), several=False)


def _select(call: Call, args: Any) -> Function:
    if not isinstance(args, list) or len(args) != 2:
        raise call.bad(f'Arguments to "{call.name}" must be of the form [index, collection]')
    return Select(call.loc, args[0], args[1])


def _cfn_split(call: Call, args: Any) -> Function:
    if not isinstance(args, list) or len(args) != 2:
        raise _should_be(call, f'"{call.name}" : [ ",", "str1,str2"]]')
    if not isinstance(args[0], str):
        raise call.bad(f"Delimiter for {call.name} must be string")
    return CfnSplit(call.loc, args[0], args[1])


def _cfn_replace(call: Call, args: Any) -> Function:
    if not isinstance(args, list) or len(args) != 2:
        raise _should_be(call, f'{{"{call.name}": [ {{"$var1": "foo", "%var2%": "bar"}}, '
                               '"$var1 is %var2%"]}')
    if not isinstance(args[0], (Mapping, Function)):
        raise call.bad(f'"{call.name}" parameters must be a mapping')
    return CfnReplace(call.loc, args[1], args[0], json_values=False)


def _base64(call: Call, args: Any) -> Function:
    return Base64(call.loc, args)


def _get_azs(call: Call, args: Any) -> Function:
    return GetAZs(call.loc, args)


def _find_in_map(call: Call, args: Any) -> Function:
    if not isinstance(args, list) or len(args) != 3:
        raise call.bad(f'Arguments to "{call.name}" must be of the form '
                       "[map_name, top_level_key, second_level_key]")
    return FindInMap(call.loc, call.ctx.mappings, (args[0], args[1], args[2]))


def _member_list_to_map(call: Call, args: Any) -> Function:
    if not isinstance(args, list) or len(args) != 3:
        raise call.bad(f'Wrong Arguments try: "{call.name}": [key_name, value_name, '
                       '[".member.0.key_name=k", ".member.0.value_name=v"]]')
    return MemberListToMap(call.loc, args[0], args[1], args[2])


_FACADE_KEYS = {"Metadata": "metadata", "DeletionPolicy": "deletion_policy",
                "UpdatePolicy": "update_policy"}


def _cfn_resource_facade(call: Call, args: Any) -> Function:
    if args not in _FACADE_KEYS:
        raise call.bad(f'Incorrect arguments to "{call.name}" should be one of: '
                       f'{", ".join(_FACADE_KEYS)}')
    return CfnResourceFacade(call.loc, _FACADE_KEYS[args])


def _cfn_if(call: Call, args: Any) -> Function:
    if not isinstance(args, list) or len(args) != 3:
        raise call.bad(f'Arguments to "{call.name}" must be of the form: '
                       "[condition_name, value_if_true, value_if_false]")
    ctx, path = call.ctx, call.path
    return If(call.loc, parse_condition(ctx, args[0], (*path, 0)),
              parse_value(ctx, args[1], (*path, 1)), parse_value(ctx, args[2], (*path, 2)))


def _cfn_equals(call: Call, args: Any) -> Function:
    if not isinstance(args, list) or len(args) != 2:
        raise call.bad(f'Arguments to "{call.name}" must be of the form: [value_1, value_2]')
    return CfnEquals(call.loc, args[0], args[1])


def _cfn_not(call: Call, args: Any) -> Function:
    if not isinstance(args, list) or len(args) != 1:
        raise call.bad(f'Arguments to "{call.name}" must be of the form: [condition]')
    return CfnNot(call.loc, parse_condition(call.ctx, args[0], (*call.path, 0)))


PARSERS: Mapping[str, Parser] = {
    "get_param": _get_param,
    "get_resource": _get_resource,
    "get_attr": _get_attr,
    "get_file": _get_file,
    "str_replace": _str_replace,
    "str_replace_strict": _str_replace,
    "str_replace_vstrict": _str_replace,
    "str_split": _str_split,
    "list_join": _list_join,
    "list_concat": _list_concat,
    "list_concat_unique": _list_concat,
    "repeat": _repeat,
    "digest": _digest,
    "map_merge": _map_merge,
    "map_replace": _map_replace,
    "make_url": _make_url,
    "filter": _filter,
    "contains": _contains,
    "yaql": _yaql,
    "resource_facade": _resource_facade,
    "if": _if,
    "equals": _equals,
    "not": _not,
    "and": _and_or,
    "or": _and_or,
    "Ref": _ref,
    "Fn::GetAtt": _get_att,
    "Fn::Join": _cfn_join,
    "Fn::Select": _select,
    "Fn::Split": _cfn_split,
    "Fn::Replace": _cfn_replace,
    "Fn::Base64": _base64,
    "Fn::GetAZs": _get_azs,
    "Fn::FindInMap": _find_in_map,
    "Fn::MemberListToMap": _member_list_to_map,
    "Fn::ResourceFacade": _cfn_resource_facade,
    "Fn::If": _cfn_if,
    "Fn::Equals": _cfn_equals,
    "Fn::Not": _cfn_not,
    "Fn::And": _and_or,
    "Fn::Or": _and_or,
}

# Functions whose arguments are not plain values: ``if`` parses its first argument as a
# condition, ``not``/``and``/``or`` theirs as conditions, ``yaql``'s expression is text.
_RAW_ARGUMENTS = frozenset({"if", "not", "and", "or", "Fn::If", "Fn::Not", "Fn::And",
                            "Fn::Or"})

IMPLEMENTED = frozenset(PARSERS)
