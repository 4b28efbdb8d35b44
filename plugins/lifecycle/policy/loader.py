"""Reading the policy rules file and checking it strictly.

The file is read once, when the plugin is configured. Anything doubtful in it is an error
that stops the process from starting, naming the file, the rule (``rules[2] (server-cap)``)
and the key: a policy that is silently narrower than the operator wrote is worse than a
service that refuses to start. So unknown keys, duplicate keys, a rule with no check or
with two, and values of the wrong type are all refused rather than ignored.

The format, in short (``etc/kiln/policy.yaml.example`` shows every kind)::

    rules:
      - name: server-cap          # optional; default rules[<index>]
        effect: deny              # required: deny | warn
        message: Ask for more     # optional; shown to the tenant with the rule name
        actions: [CREATE, UPDATE] # optional; default CREATE, UPDATE, ADOPT
        max_count: {type: "OS::Nova::Server", limit: 100}   # exactly one check
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import yaml

from engine.errors import StartupFailed
from plugins.lifecycle.policy.rules import (
    ACTIONS,
    DEFAULT_ACTIONS,
    EFFECTS,
    AllowedTypes,
    Check,
    DeniedTypes,
    Effect,
    MaxCount,
    MaxResources,
    RequiredProperties,
    RequiredTags,
    Rule,
)

COMMON_KEYS = ("name", "effect", "message", "actions")


class RulesFileError(StartupFailed):
    msg_fmt = "Policy rules file {path}: {problem}"


class _Invalid(Exception):
    """A problem inside the document; ``load_rules`` adds the file name."""


# --- reading --------------------------------------------------------------------------


def load_rules(path: str) -> tuple[Rule, ...]:
    """The rules in the YAML file at ``path``; no rules when ``path`` is empty."""
    if not path:
        return ()
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise RulesFileError(path=path, problem=f"cannot be read: {reason}") from exc
    try:
        document = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise RulesFileError(path=path, problem=_yaml_problem(exc)) from exc
    try:
        return parse_rules(document)
    except _Invalid as exc:
        raise RulesFileError(path=path, problem=str(exc)) from exc


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice (it would keep the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"not valid YAML: line {mark.line + 1}, column {mark.column + 1}: {exc.problem}"
    return f"not valid YAML: {exc}"


# --- checking -------------------------------------------------------------------------


def parse_rules(document: Any) -> tuple[Rule, ...]:
    """Rules from a loaded document: ``{"rules": [...]}``. Raises ``_Invalid``."""
    if document is None:
        raise _Invalid("the file is empty; write 'rules: []' for no rules")
    if not isinstance(document, Mapping):
        raise _Invalid(f"must be a mapping with the key 'rules', not {_kind(document)}")
    _no_unknown_keys(document, ("rules",), "the top level")
    if "rules" not in document:
        raise _Invalid("the key 'rules' is missing; write 'rules: []' for no rules")
    raw_rules = document["rules"]
    if not isinstance(raw_rules, list):
        raise _Invalid(f"'rules' must be a list, not {_kind(raw_rules)}")

    rules: list[Rule] = []
    names: dict[str, int] = {}
    for index, raw in enumerate(raw_rules):
        rule = _parse_rule(raw, index)
        if rule.name in names:
            # Findings are reported by name, so two rules of one name would be ambiguous.
            raise _Invalid(
                f"{_where(index, rule.name)}: the name is already used by rules[{names[rule.name]}]"
            )
        names[rule.name] = index
        rules.append(rule)
    return tuple(rules)


def _parse_rule(raw: Any, index: int) -> Rule:
    where = _where(index, None)
    if not isinstance(raw, Mapping):
        raise _Invalid(f"{where}: a rule must be a mapping, not {_kind(raw)}")

    name = where
    if "name" in raw:
        name = _string(raw["name"], f"{where}: 'name'")
        where = _where(index, name)

    _no_unknown_keys(raw, COMMON_KEYS + tuple(_CHECKS), where)

    kinds = [key for key in _CHECKS if key in raw]
    if not kinds:
        raise _Invalid(f"{where}: no check given; add exactly one of {', '.join(_CHECKS)}")
    if len(kinds) > 1:
        raise _Invalid(
            f"{where}: more than one check ({', '.join(kinds)}); write one rule per check"
        )
    kind = kinds[0]

    if "effect" not in raw:
        raise _Invalid(f"{where}: 'effect' is missing; expected one of {', '.join(EFFECTS)}")
    effect = _effect(raw["effect"], where)

    message = _string(raw["message"], f"{where}: 'message'") if "message" in raw else ""
    actions = _actions(raw["actions"], where) if "actions" in raw else DEFAULT_ACTIONS
    check = _CHECKS[kind](raw[kind], f"{where}: '{kind}'")
    return Rule(name=name, effect=effect, check=check, actions=actions, message=message)


def _effect(value: Any, where: str) -> Effect:
    for effect in EFFECTS:
        if value == effect:
            return effect
    raise _Invalid(
        f"{where}: unknown effect {value!r}; expected one of {', '.join(EFFECTS)}"
    )


def _actions(value: Any, where: str) -> frozenset[str]:
    names = _strings(value, f"{where}: 'actions'")
    unknown = [name for name in names if name not in ACTIONS]
    if unknown:
        raise _Invalid(
            f"{where}: 'actions': unknown action {unknown[0]!r}; expected some of "
            f"{', '.join(ACTIONS)}"
        )
    return frozenset(names)


# --- the checks, one parser each ------------------------------------------------------


def _max_resources(value: Any, where: str) -> Check:
    return MaxResources(limit=_limit(value, where))


def _max_count(value: Any, where: str) -> Check:
    fields = _fields(value, where, ("type", "limit"))
    return MaxCount(
        type=_string(fields["type"], f"{where}: 'type'"),
        limit=_limit(fields["limit"], f"{where}: 'limit'"),
    )


def _allowed_types(value: Any, where: str) -> Check:
    return AllowedTypes(patterns=_strings(value, where))


def _denied_types(value: Any, where: str) -> Check:
    return DeniedTypes(patterns=_strings(value, where))


def _required_properties(value: Any, where: str) -> Check:
    fields = _fields(value, where, ("type", "properties"))
    return RequiredProperties(
        type=_string(fields["type"], f"{where}: 'type'"),
        properties=_strings(fields["properties"], f"{where}: 'properties'"),
    )


def _required_tags(value: Any, where: str) -> Check:
    return RequiredTags(tags=_strings(value, where))


_CHECKS: dict[str, Callable[[Any, str], Check]] = {
    "max_resources": _max_resources,
    "max_count": _max_count,
    "allowed_types": _allowed_types,
    "denied_types": _denied_types,
    "required_properties": _required_properties,
    "required_tags": _required_tags,
}


# --- value helpers --------------------------------------------------------------------


def _where(index: int, name: str | None) -> str:
    return f"rules[{index}] ({name})" if name is not None else f"rules[{index}]"


def _no_unknown_keys(raw: Mapping[Any, Any], known: tuple[str, ...], where: str) -> None:
    for key in raw:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"expected {', '.join(known)}"
            raise _Invalid(f"{where}: unknown key {key!r}; {hint}")


def _fields(value: Any, where: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
    """A mapping with exactly ``keys``."""
    if not isinstance(value, Mapping):
        raise _Invalid(f"{where}: must be a mapping with {', '.join(keys)}, not {_kind(value)}")
    _no_unknown_keys(value, keys, where)
    for key in keys:
        if key not in value:
            raise _Invalid(f"{where}: '{key}' is missing")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Invalid(f"{where}: must be a non-empty string, not {_kind(value)}")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    # One bare string is refused rather than taken as a list of one: "OS::Nova::*" and
    # ["OS::Nova::*"] look alike, but a rule that silently means something else is worse.
    if not isinstance(value, list) or not value:
        raise _Invalid(f"{where}: must be a non-empty list of strings, not {_kind(value)}")
    return tuple(_string(item, f"{where}[{i}]") for i, item in enumerate(value))


def _limit(value: Any, where: str) -> int:
    # bool is an int in Python; "limit: yes" is a slip, not 1.
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Invalid(f"{where}: must be a whole number of 0 or more, not {_kind(value)}")
    return value


_KIND_NAMES: Mapping[type, str] = {
    bool: "a boolean", int: "an integer", float: "a number", str: "a string",
    list: "a list", dict: "a mapping",
}


def _kind(value: Any) -> str:
    """How a value reads in an error: its YAML kind and, when short, the value."""
    if value is None:
        return "null"
    kind = _KIND_NAMES.get(type(value), type(value).__name__)
    shown = repr(value)
    return f"{kind} ({shown})" if len(shown) <= 40 else kind
