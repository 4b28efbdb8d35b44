"""Well-formed HOT templates for the property tests: every function, condition and
parameter type a HOT version offers, and the built-in resource types that create at once.

A template is drawn with the names it may use in scope, so that it is well-formed by
construction: a function appears only in the versions that have it
(``engine.template.versions``), a resource refers only to resources drawn before it (no
cycle), a condition only to earlier conditions, a parameter's constraints are drawn to
hold for its value. Well-formed is not the same as "creates": a ``str_split`` index or a
``RandomString`` length read from a parameter can still fail at run time, which is a
FAILED stack, not a bug.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from typing import Any

import yaml
from hypothesis import strategies as st

from engine.template.versions import HOT_VERSIONS, HotVersion

Draw = Callable[[st.SearchStrategy[Any]], Any]

STR, NUM, BOOL, LIST, MAP, ANY = "str", "num", "bool", "list", "map", "any"
PARAMETER_TYPES = ("string", "number", "boolean", "json", "comma_delimited_list")
RESOURCE_TYPES = ("OS::Heat::None", "OS::Heat::TestResource", "OS::Heat::Value",
                  "OS::Heat::RandomString", "OS::Heat::ResourceGroup")
# What get_attr of each type's attribute gives, for drawing it where a kind is wanted.
ATTRIBUTES: dict[str, dict[str, str]] = {
    "OS::Heat::TestResource": {"output": STR},
    "OS::Heat::RandomString": {"value": STR},
    "OS::Heat::Value": {"value": ANY},
    "OS::Heat::ResourceGroup": {"refs": LIST, "refs_map": MAP},
    "OS::Heat::None": {"anything": ANY},
}
# Good values for each registered custom constraint (setup.cfg kiln.constraints).
CUSTOM_CONSTRAINTS = {"ip_addr": "10.0.0.1", "net_cidr": "10.0.0.0/24",
                      "mac_addr": "fa:16:3e:00:00:01", "dns_name": "www.example.com",
                      "dns_domain": "example.com.", "rel_dns_name": "www",
                      "iso_8601": "2026-01-01T00:00:00Z", "timezone": "UTC"}
DIGESTS = ("md5", "sha1", "sha256", "sha512")
PSEUDO_PARAMETERS = ("OS::stack_name", "OS::stack_id", "OS::project_id")

# Text with what functions look for: separators, placeholders, quotes, non-ASCII.
TEXT = st.text(alphabet=st.sampled_from("abcxyz019 -_,.$%:/\"'é€"), max_size=10)
WORD = st.text(alphabet=st.sampled_from("abcdefgh"), min_size=1, max_size=6)
NUMBER = st.one_of(st.integers(-50, 1000),
                    st.floats(-100, 100, allow_nan=False).map(lambda f: round(f, 2)))
SCALAR = st.one_of(TEXT, NUMBER, st.booleans(), st.none())
PLAIN = st.recursive(SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(WORD, inner, max_size=3)), max_leaves=6)

@dataclasses.dataclass(frozen=True)
class Case:
    """One drawn template with what a stack of it is given."""

    template: dict[str, Any]
    parameters: dict[str, Any]
    files: dict[str, str]
    features: frozenset[str]
    mutations: tuple[str, ...] = ()
    # As text (YAML, lines known) or as a JSON object; odd YAML goes only into text:
    # (name, YAML) in place of the value ``oddity_marker(i)`` stands for.
    as_text: bool = True
    yaml_oddities: tuple[tuple[str, str], ...] = ()

    @property
    def well_formed(self) -> bool:
        return not self.mutations

    def text(self) -> str:
        text = yaml.safe_dump(self.template, sort_keys=False, allow_unicode=True, width=1000)
        for index, (_, odd) in enumerate(self.yaml_oddities):
            text = text.replace(f"'{oddity_marker(index)}'", odd, 1)
            text = text.replace(oddity_marker(index), odd, 1)
        return text

    def body(self) -> Any:
        """The ``template`` of a request."""
        return self.text() if self.as_text or self.yaml_oddities else self.template

    def describe(self) -> str:
        """For a failure message: what the case is and its template."""
        return (f"features: {sorted(self.features)}\nparameters: {self.parameters!r}\n"
                f"files: {self.files!r}\ntemplate:\n{self.text()}")


def oddity_marker(index: int) -> str:
    return f"@@yaml-oddity-{index}@@"



@dataclasses.dataclass
class _Scope:
    """What a value being drawn may refer to."""

    version: HotVersion
    exclude: frozenset[str]
    params: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> HOT type
    resources: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> type
    conditions: list[str] = dataclasses.field(default_factory=list)
    files: dict[str, str] = dataclasses.field(default_factory=dict)
    features: set[str] = dataclasses.field(default_factory=set)
    # Values of the wrong kind now and then: a number where text goes, a map where a
    # list does. Such a template parses; what it does wrong shows when it is evaluated.
    confused: bool = False

    def has(self, function: str) -> bool:
        return function in self.version.functions and function not in self.exclude

    def allows(self, feature: str) -> bool:
        return feature not in self.exclude

    def call(self, function: str, args: Any) -> dict[str, Any]:
        self.features.add(function)
        return {function: args}

    def params_of(self, *types: str) -> list[str]:
        return [n for n, t in self.params.items() if t in types]

    def attributes_of(self, kind: str) -> list[tuple[str, str]]:
        return [(name, attr) for name, rtype in self.resources.items()
                for attr, attr_kind in ATTRIBUTES[rtype].items()
                if kind == ANY or attr_kind == kind]


# --- values ----------------------------------------------------------------------------
# Each builder draws a value of one kind; ``_value`` picks among the builders the version
# has. At depth 0 only the leaves (literals and references) are left.

Builder = Callable[[Draw, _Scope, int], Any]


def _confuse(draw: Draw, scope: _Scope) -> bool:
    """Whether to draw something of the wrong kind here (a quarter of the time, in a
    confused template)."""
    if scope.confused and draw(st.integers(0, 3)) == 0:
        scope.features.add("kind_confusion")
        return True
    return False


def _value(draw: Draw, scope: _Scope, kind: str, depth: int) -> Any:
    if _confuse(draw, scope):
        kind = ANY
    if kind == ANY:
        kind = draw(st.sampled_from((STR, NUM, BOOL, LIST, MAP, ANY)))
    options = [b for fn, b in _BUILDERS[kind] if fn is None or (depth > 0 and scope.has(fn))]
    builder = draw(st.sampled_from(options))
    return builder(draw, scope, depth - 1)


def _literal(kind: str) -> Builder:
    strategies = {STR: TEXT, NUM: NUMBER, BOOL: st.booleans(),
                  LIST: st.lists(TEXT, max_size=4),
                  MAP: st.dictionaries(WORD, PLAIN, max_size=3)}
    return lambda draw, scope, depth: draw(strategies[kind])


def _param(*types: str, paths: bool = False) -> Builder:
    """``get_param`` of a parameter of one of ``types``; with ``paths``, maybe a path into
    a json or list value (which gives any kind)."""

    def build(draw: Draw, scope: _Scope, depth: int) -> Any:
        names = scope.params_of(*types)
        if "string" in types and not scope.version.is_cfn:
            names += list(PSEUDO_PARAMETERS)
        if not names:
            return _literal({"string": STR, "number": NUM, "boolean": BOOL,
                             "comma_delimited_list": LIST, "json": MAP}[types[0]])(
                                 draw, scope, depth)
        name = draw(st.sampled_from(names))
        scope.features.add("get_param")
        if (paths and scope.params.get(name) in ("json", "comma_delimited_list")
                and draw(st.booleans())):
            # A path into the value: an index or key that may or may not be there.
            return {"get_param": [name, draw(st.sampled_from((0, 1, "0", "a")))]}
        return {"get_param": name}
    return build


def _get_attr(kind: str) -> Builder:
    def build(draw: Draw, scope: _Scope, depth: int) -> Any:
        found = scope.attributes_of(kind)
        if not found:
            return _literal(kind if kind != ANY else STR)(draw, scope, depth)
        name, attribute = draw(st.sampled_from(found))
        scope.features.add(f"get_attr:{scope.resources[name]}")
        return scope.call("get_attr", [name, attribute])
    return build


def _get_resource(draw: Draw, scope: _Scope, depth: int) -> Any:
    if not scope.resources:
        return draw(TEXT)
    return scope.call("get_resource", draw(st.sampled_from(sorted(scope.resources))))


def _get_file(draw: Draw, scope: _Scope, depth: int) -> Any:
    name = f"files/{draw(WORD)}.txt"
    scope.files[name] = draw(TEXT)
    return scope.call("get_file", name)


def _str_replace(function: str) -> Builder:
    def build(draw: Draw, scope: _Scope, depth: int) -> Any:
        keys = draw(st.lists(st.sampled_from(("$a", "%b%", "VAR", "_x_")), min_size=1,
                             max_size=3, unique=True))
        pieces = [draw(TEXT) for _ in keys]
        # The strict forms refuse a key the template lacks: every key is put in.
        template = "".join(p + k for p, k in zip(pieces, keys, strict=True)) + draw(TEXT)
        if function == "str_replace_vstrict":
            params = {k: draw(st.one_of(WORD, st.integers(1, 9))) for k in keys}
        else:
            params = {k: _value(draw, scope, draw(st.sampled_from((STR, NUM))), depth)
                      for k in keys}
        if draw(st.booleans()):
            template = _value(draw, scope, STR, depth) if function == "str_replace" \
                else template
        return scope.call(function, {"template": template, "params": params})
    return build


def _list_join(draw: Draw, scope: _Scope, depth: int) -> Any:
    several = scope.version.since("2015-10-15")
    lists = [_value(draw, scope, LIST, depth)
             for _ in range(draw(st.integers(1, 3 if several else 1)))]
    return scope.call("list_join", [draw(st.sampled_from((",", "", " ", "-", "::"))),
                                    *lists])


def _digest(draw: Draw, scope: _Scope, depth: int) -> Any:
    algorithm = (_value(draw, scope, STR, depth) if _confuse(draw, scope)
                 else draw(st.sampled_from(DIGESTS)))
    return scope.call("digest", [algorithm, _value(draw, scope, STR, depth)])


def _str_split(indexed: bool) -> Builder:
    def build(draw: Draw, scope: _Scope, depth: int) -> Any:
        args = [draw(st.sampled_from((",", "-", " ", "a"))), _value(draw, scope, STR, depth)]
        if indexed:
            # Any string splits into at least one piece; a confused index may not exist.
            args.append(_value(draw, scope, NUM, depth) if _confuse(draw, scope) else 0)
        return scope.call("str_split", args)
    return build


def _make_url(draw: Draw, scope: _Scope, depth: int) -> Any:
    parts: dict[str, Any] = {"scheme": draw(st.sampled_from(("http", "https", "ftp"))),
                             "host": draw(st.sampled_from(("example.com", "10.0.0.1",
                                                           "::1", "[fe80::1]")))}
    if draw(st.booleans()):
        parts["port"] = draw(st.integers(1, 65535))
    if draw(st.booleans()):
        parts["path"] = _value(draw, scope, STR, depth)
    if draw(st.booleans()):
        parts["query"] = {draw(WORD): draw(TEXT)}
    if draw(st.booleans()):
        parts["username"], parts["password"] = draw(WORD), draw(TEXT)
    if draw(st.booleans()):
        parts["fragment"] = draw(TEXT)
    return scope.call("make_url", parts)


# yaql expressions with the kind of what they give and the kinds of their data.
_YAQL: dict[str, list[tuple[str, dict[str, str]]]] = {
    STR: [("$.data.s", {"s": STR}), ('$.data.l.join(",")', {"l": LIST}),
          ("$.data.s.toUpper()", {"s": STR})],
    NUM: [("$.data.a + $.data.b", {"a": NUM, "b": NUM}), ("$.data.l.len()", {"l": LIST}),
          ("len($.data.s)", {"s": STR})],
    BOOL: [("$.data.a = $.data.b", {"a": STR, "b": STR}),
           ("$.data.l.len() > 1", {"l": LIST})],
    LIST: [('$.data.l.select($ + "x")', {"l": LIST}), ('$.data.l.where($ != "")', {"l": LIST}),
           ("$.data.l.distinct()", {"l": LIST}), ("$.data.m.keys()", {"m": MAP})],
    MAP: [("$.data.m", {"m": MAP}), ('$.data.m.set("k", $.data.s)', {"m": MAP, "s": STR}),
          ("dict($.data.l.select([$, 1]))", {"l": LIST})],
}


def _yaql(kind: str) -> Builder:
    def build(draw: Draw, scope: _Scope, depth: int) -> Any:
        expression, data = draw(st.sampled_from(_YAQL[kind]))
        return scope.call("yaql", {"expression": expression,
                                   "data": {k: _value(draw, scope, v, depth)
                                            for k, v in data.items()}})
    return build


def _if(kind: str) -> Builder:
    def build(draw: Draw, scope: _Scope, depth: int) -> Any:
        args = [_condition(draw, scope, depth, named=True), _value(draw, scope, kind, depth)]
        # Wallaby's one-branch if: the value is left out when the condition is false.
        if (not scope.version.since("2021-04-16") or not scope.allows("if:elided")
                or draw(st.booleans())):
            args.append(_value(draw, scope, kind, depth))
        else:
            scope.features.add("if:elided")
        return scope.call("if", args)
    return build


def _contains(draw: Draw, scope: _Scope, depth: int) -> Any:
    return scope.call("contains", [_value(draw, scope, STR, depth),
                                   _value(draw, scope, LIST, depth)])


def _repeat(draw: Draw, scope: _Scope, depth: int) -> Any:
    names = draw(st.lists(st.sampled_from(("%v%", "<%w%>", "$x")), min_size=1, max_size=2,
                          unique=True))
    args: dict[str, Any] = {"for_each": {n: _value(draw, scope, LIST, depth) for n in names}}
    if scope.version.since("2016-10-14") and draw(st.booleans()):
        # A map template (Heat 2016-10-14 on): keys and values are substituted.
        args["template"] = {names[0]: draw(TEXT) + names[-1]}
    else:
        args["template"] = draw(TEXT) + "".join(names)
    if scope.version.since("2017-09-01") and draw(st.booleans()):
        # Without permutations the lists go in step, so they must be as long as each other.
        args["permutations"] = False
        size = draw(st.integers(0, 3))
        args["for_each"] = {n: draw(st.lists(WORD, min_size=size, max_size=size))
                            for n in names}
    return scope.call("repeat", args)


def _list_concat(function: str) -> Builder:
    def build(draw: Draw, scope: _Scope, depth: int) -> Any:
        return scope.call(function, [_value(draw, scope, LIST, depth)
                                     for _ in range(draw(st.integers(1, 3)))])
    return build


def _filter(draw: Draw, scope: _Scope, depth: int) -> Any:
    return scope.call("filter", [_value(draw, scope, LIST, depth),
                                 _value(draw, scope, LIST, depth)])


def _map_merge(draw: Draw, scope: _Scope, depth: int) -> Any:
    return scope.call("map_merge", [_value(draw, scope, MAP, depth)
                                    for _ in range(draw(st.integers(1, 3)))])


def _map_replace(draw: Draw, scope: _Scope, depth: int) -> Any:
    keys = draw(st.dictionaries(WORD, WORD, max_size=2))
    values = draw(st.dictionaries(TEXT, TEXT, max_size=2))
    return scope.call("map_replace", [_value(draw, scope, MAP, depth),
                                      {"keys": keys, "values": values}])


def _whole_resource(draw: Draw, scope: _Scope, depth: int) -> Any:
    if not scope.resources or not scope.version.since("2015-10-15"):
        return draw(st.dictionaries(WORD, PLAIN, max_size=2))
    scope.features.add("get_attr:whole")
    return scope.call("get_attr", [draw(st.sampled_from(sorted(scope.resources)))])


def _group_member(draw: Draw, scope: _Scope, depth: int) -> Any:
    groups = sorted(n for n, t in scope.resources.items() if t == "OS::Heat::ResourceGroup")
    if not groups or not scope.allows("get_attr:group_member"):
        return draw(SCALAR)
    scope.features.add("get_attr:group_member")
    form = draw(st.sampled_from((["resource.0"], ["resource.1", "anything"],
                                 ["attributes", "anything"], ["resource.9", "x", "y"])))
    return scope.call("get_attr", [draw(st.sampled_from(groups)), *form])


def _select(draw: Draw, scope: _Scope, depth: int) -> Any:
    index = _value(draw, scope, NUM, depth) if _confuse(draw, scope) else draw(st.integers(0, 2))
    return scope.call("Fn::Select", [index, _value(draw, scope, LIST, depth)])


def _cfn_join(draw: Draw, scope: _Scope, depth: int) -> Any:
    return scope.call("Fn::Join", [draw(st.sampled_from((",", ""))),
                                   _value(draw, scope, LIST, depth)])


def _cfn_split(draw: Draw, scope: _Scope, depth: int) -> Any:
    return scope.call("Fn::Split", [",", _value(draw, scope, STR, depth)])


def _base64(draw: Draw, scope: _Scope, depth: int) -> Any:
    return scope.call("Fn::Base64", _value(draw, scope, STR, depth))


def _ref(draw: Draw, scope: _Scope, depth: int) -> Any:
    names = sorted(scope.resources) + scope.params_of("string")
    if not names:
        return draw(TEXT)
    return scope.call("Ref", draw(st.sampled_from(names)))


_BUILDERS: dict[str, list[tuple[str | None, Builder]]] = {
    STR: [(None, _literal(STR)), (None, _param("string")), (None, _get_resource),
          (None, _get_attr(STR)), ("get_file", _get_file),
          ("str_replace", _str_replace("str_replace")),
          ("str_replace_strict", _str_replace("str_replace_strict")),
          ("str_replace_vstrict", _str_replace("str_replace_vstrict")),
          ("list_join", _list_join), ("digest", _digest), ("str_split", _str_split(True)),
          ("make_url", _make_url), ("yaql", _yaql(STR)), ("if", _if(STR)),
          ("Fn::Select", _select), ("Fn::Join", _cfn_join), ("Fn::Base64", _base64),
          ("Ref", _ref)],
    NUM: [(None, _literal(NUM)), (None, _param("number")), ("yaql", _yaql(NUM)),
          ("if", _if(NUM))],
    BOOL: [(None, _literal(BOOL)), (None, _param("boolean")), ("contains", _contains),
           ("yaql", _yaql(BOOL)), ("if", _if(BOOL))],
    LIST: [(None, _literal(LIST)), (None, _param("comma_delimited_list")),
           (None, _get_attr(LIST)), ("str_split", _str_split(False)), ("repeat", _repeat),
           ("list_concat", _list_concat("list_concat")),
           ("list_concat_unique", _list_concat("list_concat_unique")),
           ("filter", _filter), ("yaql", _yaql(LIST)), ("if", _if(LIST)),
           ("Fn::Split", _cfn_split)],
    MAP: [(None, _literal(MAP)), (None, _param("json")), (None, _get_attr(MAP)),
          ("map_merge", _map_merge), ("map_replace", _map_replace), ("yaql", _yaql(MAP)),
          ("if", _if(MAP)), ("get_attr", _whole_resource)],
    # What has no one kind: a Value's value, a group member's attribute, a path into a
    # json or list parameter.
    ANY: [(None, _get_attr(ANY)), ("get_attr", _group_member),
          (None, _param("json", "comma_delimited_list", paths=True)),
          (None, _literal(MAP))],
}


# --- conditions ------------------------------------------------------------------------


def _condition_value(draw: Draw, scope: _Scope) -> Any:
    """What equals/contains compare in a condition: literals and parameters only."""
    names = list(scope.params)
    if names and draw(st.booleans()):
        scope.features.add("get_param")
        return {"get_param": draw(st.sampled_from(names))}
    return draw(st.one_of(WORD, st.integers(0, 3), st.booleans()))


def _condition(draw: Draw, scope: _Scope, depth: int, *, named: bool) -> Any:
    """A condition; ``named`` allows the name of an earlier one (not at the top of a
    definition in the ``conditions`` section, as in Heat)."""
    forms = ["bool", "equals"]
    if named and scope.conditions:
        forms += ["name", "name"]
    if depth > 0:
        forms += [f for f in ("not", "and", "or") if f not in scope.exclude]
        forms += [f for f in ("contains", "yaql")
                  if f in scope.version.condition_functions and f not in scope.exclude]
    form = draw(st.sampled_from(forms))
    if form == "bool":
        return draw(st.booleans())
    if form == "name":
        return draw(st.sampled_from(scope.conditions))
    if form == "equals":
        return scope.call("equals", [_condition_value(draw, scope),
                                     _condition_value(draw, scope)])
    if form == "not":
        return scope.call("not", _condition(draw, scope, depth - 1, named=True))
    if form in ("and", "or"):
        return scope.call(form, [_condition(draw, scope, depth - 1, named=True)
                                 for _ in range(draw(st.integers(2, 3)))])
    if form == "contains":
        return scope.call("contains", [_condition_value(draw, scope),
                                       [_condition_value(draw, scope) for _ in range(2)]])
    return scope.call("yaql", {"expression": "$.data.a = $.data.b",
                               "data": {"a": _condition_value(draw, scope),
                                        "b": _condition_value(draw, scope)}})


# --- parameters ------------------------------------------------------------------------


def _parameter_value(draw: Draw, kind: str) -> Any:
    if kind == "string":
        return draw(TEXT)
    if kind == "number":
        return draw(NUMBER)
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "json":
        return draw(st.one_of(st.dictionaries(WORD, PLAIN, max_size=3),
                              st.lists(SCALAR, max_size=3)))
    return draw(st.lists(st.text(alphabet="abc xyz", max_size=4), max_size=3))


def _as_given(draw: Draw, kind: str, value: Any) -> Any:
    """``value`` as a request may give it: typed, or as the text Heat also accepts."""
    if not draw(st.booleans()):
        return value
    if kind == "number":
        return str(value)
    if kind == "boolean":
        return draw(st.sampled_from(("true", "yes", "1", "on", "t") if value
                                    else ("false", "no", "0", "off", "f")))
    if kind == "json":
        return json.dumps(value)
    if kind == "comma_delimited_list":
        return ",".join(value)
    return value


def _constraints(draw: Draw, scope: _Scope, kind: str, value: Any
                 ) -> tuple[list[dict[str, Any]], Any]:
    """Constraints that ``value`` meets (it may be replaced by one a custom constraint
    takes), and the value."""
    options = {"string": ["length", "allowed_values", "allowed_pattern", "custom_constraint"],
               "number": ["range", "allowed_values", "modulo"],
               "boolean": ["allowed_values"],
               "json": ["length"],
               "comma_delimited_list": ["length", "allowed_values"]}[kind]
    if not scope.version.since("2017-02-24"):
        options = [o for o in options if o != "modulo"]
    chosen = draw(st.lists(st.sampled_from(options), max_size=2, unique=True))
    result: list[dict[str, Any]] = []
    if "custom_constraint" in chosen:
        name = draw(st.sampled_from(sorted(CUSTOM_CONSTRAINTS)))
        value = CUSTOM_CONSTRAINTS[name]
        result.append({"custom_constraint": name})
    if "modulo" in chosen:
        value = int(value)
        step = draw(st.integers(2, 5))
        result.append({"modulo": {"step": step, "offset": value % step}})
    for name in chosen:
        if name == "length":
            size = len(value)
            bounds = {"min": draw(st.integers(0, size)), "max": size + draw(st.integers(0, 3))}
            result.append({"length": draw(st.sampled_from(
                (bounds, {"min": bounds["min"]}, {"max": bounds["max"]})))})
        elif name == "range":
            result.append({"range": {"min": value - draw(st.integers(0, 5)),
                                     "max": value + draw(st.integers(0, 5))}})
        elif name == "allowed_values":
            items = value if isinstance(value, list) else [value]
            result.append({"allowed_values": [*items, draw(WORD)]})
        elif name == "allowed_pattern":
            pattern = draw(st.sampled_from((re.escape(value), ".*", "[^\\n]*", "(?s).*")))
            result.append({"allowed_pattern": pattern})
        if result and draw(st.booleans()):
            result[-1]["description"] = draw(TEXT)
    return result, value


def _parameter(draw: Draw, scope: _Scope) -> tuple[dict[str, Any], Any]:
    """A parameter's declaration and the value a stack is given (None: not given)."""
    kind = draw(st.sampled_from(PARAMETER_TYPES))
    scope.features.add(f"parameter:{kind}")
    constraints, value = _constraints(draw, scope, kind, _parameter_value(draw, kind))
    body: dict[str, Any] = {"type": kind}
    if constraints:
        body["constraints"] = constraints
        scope.features.update(f"constraint:{next(iter(c))}" for c in constraints)
    if draw(st.booleans()):
        body["default"] = value
    for key in ("label", "description"):
        if draw(st.booleans()):
            body[key] = draw(TEXT)
    if draw(st.integers(0, 3)) == 0:
        body["hidden"] = True
    if scope.version.since("2018-03-02") and draw(st.integers(0, 3)) == 0:
        body["tags"] = [draw(WORD)]
    given = _as_given(draw, kind, value) if ("default" not in body or draw(st.booleans())) \
        else None
    return body, given


# --- resources and the template --------------------------------------------------------


def _properties(draw: Draw, scope: _Scope, rtype: str, depth: int) -> dict[str, Any]:
    if rtype == "OS::Heat::None":
        return {draw(WORD): _value(draw, scope, ANY, depth)
                for _ in range(draw(st.integers(0, 2)))}
    if rtype == "OS::Heat::TestResource":
        props: dict[str, Any] = {"value": _value(draw, scope, STR, depth)}
        if draw(st.integers(0, 7)) == 0:
            props["fail"] = True  # a FAILED stack is a final state too
        return props
    if rtype == "OS::Heat::Value":
        props = {"value": _value(draw, scope, ANY, depth)}
        if draw(st.integers(0, 3)) == 0:
            props["type"] = draw(st.sampled_from(PARAMETER_TYPES))
        return props
    if rtype == "OS::Heat::RandomString":
        props = {}
        if draw(st.booleans()):
            props["length"] = (draw(st.integers(1, 64)) if draw(st.booleans())
                               else _value(draw, scope, NUM, 0))
        if draw(st.booleans()):
            props["salt"] = _value(draw, scope, STR, depth)
        if draw(st.booleans()):
            props["character_classes"] = [{"class": draw(st.sampled_from(
                ("lettersdigits", "letters", "lowercase", "uppercase", "digits",
                 "hexdigits", "octdigits"))), "min": draw(st.integers(1, 2))}]
        return props
    member = {"type": "OS::Heat::None",
              "properties": {"index": draw(st.sampled_from(("%index%", "x-%index%"))),
                             "v": _value(draw, scope, STR, depth)}}
    count = (draw(st.sampled_from((-1, "2", 1.5, None, True))) if _confuse(draw, scope)
             else draw(st.integers(0, 3)))
    return {"count": count, "resource_def": member}


def _resource(draw: Draw, scope: _Scope, depth: int) -> dict[str, Any]:
    rtype = draw(st.sampled_from([t for t in RESOURCE_TYPES if t not in scope.exclude]))
    scope.features.add(rtype)
    body: dict[str, Any] = {"type": rtype}
    properties = _properties(draw, scope, rtype, depth)
    if properties or draw(st.booleans()):
        body["properties"] = properties
    if scope.resources and draw(st.integers(0, 2)) == 0:
        body["depends_on"] = draw(st.lists(st.sampled_from(sorted(scope.resources)),
                                           min_size=1, max_size=2, unique=True))
    if scope.version.has_conditions and draw(st.integers(0, 2)) == 0:
        body["condition"] = _condition(draw, scope, 1, named=True)
        scope.features.add("condition:resource")
    if draw(st.integers(0, 4)) == 0:
        body["metadata"] = {draw(WORD): _value(draw, scope, ANY, 1)}
    if draw(st.integers(0, 4)) == 0:
        body["deletion_policy"] = draw(st.sampled_from(("Delete", "Retain")))
    return body


@st.composite
def well_formed(draw: Draw, exclude: frozenset[str] = frozenset(), max_depth: int = 3,
                confused: bool = False) -> Case:
    """A template that Heat accepts, with values for its parameters; ``confused``: with
    values of the wrong kind here and there (a template that may fail at run time)."""
    version = draw(st.sampled_from(HOT_VERSIONS))
    scope = _Scope(version=version, exclude=exclude, confused=confused)
    scope.features.add(f"version:{version.date}")
    template: dict[str, Any] = {
        "heat_template_version": draw(st.sampled_from(
            [version.date] + ([version.alias] if version.alias else [])))}
    if draw(st.booleans()):
        template["description"] = draw(TEXT)
    parameters: dict[str, Any] = {}
    given: dict[str, Any] = {}
    for index in range(draw(st.integers(0, 3))):
        name = f"p{index}"
        parameters[name], value = _parameter(draw, scope)
        scope.params[name] = parameters[name]["type"]
        if value is not None:
            given[name] = value
    if parameters:
        template["parameters"] = parameters
        if draw(st.integers(0, 3)) == 0:
            template["parameter_groups"] = [{"label": "all", "parameters": list(parameters)}]
    if version.has_conditions:
        conditions = {}
        for index in range(draw(st.integers(0, 3))):
            name = f"c{index}"
            conditions[name] = _condition(draw, scope, 2, named=False)
            scope.conditions.append(name)
        if conditions or draw(st.booleans()):
            template["conditions"] = conditions
    resources: dict[str, Any] = {}
    for index in range(draw(st.integers(1, 4))):
        name = f"r{index}"
        resources[name] = _resource(draw, scope, max_depth)
        scope.resources[name] = resources[name]["type"]
    template["resources"] = resources
    outputs: dict[str, Any] = {}
    for index in range(draw(st.integers(0, 3))):
        output: dict[str, Any] = {"value": _value(draw, scope, ANY, max_depth)}
        if draw(st.booleans()):
            output["description"] = draw(TEXT)
        if version.has_conditions and draw(st.integers(0, 3)) == 0:
            output["condition"] = _condition(draw, scope, 1, named=True)
            scope.features.add("condition:output")
        outputs[f"o{index}"] = output
    if outputs:
        template["outputs"] = outputs
    return Case(template=template, parameters=given, files=dict(scope.files),
                features=frozenset(scope.features), as_text=draw(st.booleans()))
