"""The rules-file format shared by the policy and the approval plugins: reading a file and
checking it strictly.

A file is read once, when its plugin is configured. Anything doubtful in it is an error
that stops the process from starting, naming the file, the rule (``rules[2]
(server-cap)``) and the key: a rule that is silently narrower than the operator wrote is
worse than a service that refuses to start. So unknown keys, duplicate keys, a rule with
no check or with two, and values of the wrong type are all refused rather than ignored.

Every rule has the keys of :func:`parse_head` (``name``, ``message``, ``actions``,
``during``, ``tree_scope``), its plugin's own keys (the policy's ``effect``; the approval's
``approvers`` and ``window_seconds``) and exactly one check of those its plugin accepts
(:data:`CHECKS`). ``loader.py`` (policy) and ``plugins/lifecycle/approval/loader.py``
put them together.
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import re
import zoneinfo
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

import yaml

from engine.errors import StartupFailed
from engine.lifecycle.base import EVERY_STACK, TREE_SCOPES
from engine.vocabulary import Change
from plugins.lifecycle.policy.matching import EVERY_RESOURCE, SELECTOR_KEYS, Selector
from plugins.lifecycle.policy.rules import (
    ACTIONS,
    CHANGES,
    DEFAULT_CHANGES,
    AllowedTypes,
    AnyOperation,
    Check,
    DeniedTypes,
    MaxChanges,
    MaxCount,
    MaxResources,
    Protect,
    RequiredProperties,
    RequiredTags,
    default_actions,
)
from plugins.lifecycle.policy.windows import (
    EVERY_DAY,
    UTC_NAME,
    WEEKDAYS,
    Period,
    Weekly,
    Window,
    zone,
)

HEAD_KEYS = ("name", "message", "actions", "during", "tree_scope")
WEEKLY_KEYS = ("days", "from", "to")
PERIOD_KEYS = ("start", "end")
WINDOW_KEYS = (*WEEKLY_KEYS, *PERIOD_KEYS, "timezone")

RuleT = TypeVar("RuleT")


class RulesFileError(StartupFailed):
    msg_fmt = "{kind} rules file {path}: {problem}"


class Invalid(Exception):
    """A problem inside the document; :func:`read_rules_file` adds the file name."""


# --- reading --------------------------------------------------------------------------


def read_rules_file(path: str, kind: str,
                    parse: Callable[[Any], tuple[RuleT, ...]]) -> tuple[RuleT, ...]:
    """The rules ``parse`` finds in the YAML file at ``path``; no rules when ``path`` is
    empty. ``kind`` ("Policy", "Approval") starts every error message."""
    if not path:
        return ()
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise RulesFileError(kind=kind, path=path, problem=f"cannot be read: {reason}") from exc
    try:
        document = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise RulesFileError(kind=kind, path=path, problem=_yaml_problem(exc)) from exc
    try:
        return parse(document)
    except Invalid as exc:
        raise RulesFileError(kind=kind, path=path, problem=str(exc)) from exc


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


# --- the document and each rule's common keys ----------------------------------------


def parse_rule_list(document: Any, parse_rule: Callable[[Any, int], RuleT],
                    name_of: Callable[[RuleT], str]) -> tuple[RuleT, ...]:
    """Rules from a loaded document, ``{"rules": [...]}``, each read by ``parse_rule``
    (the raw rule and its index). Raises :class:`Invalid`."""
    if document is None:
        raise Invalid("the file is empty; write 'rules: []' for no rules")
    if not isinstance(document, Mapping):
        raise Invalid(f"must be a mapping with the key 'rules', not {kind_of(document)}")
    no_unknown_keys(document, ("rules",), "the top level")
    if "rules" not in document:
        raise Invalid("the key 'rules' is missing; write 'rules: []' for no rules")
    raw_rules = document["rules"]
    if not isinstance(raw_rules, list):
        raise Invalid(f"'rules' must be a list, not {kind_of(raw_rules)}")

    rules: list[RuleT] = []
    names: dict[str, int] = {}
    for index, raw in enumerate(raw_rules):
        rule = parse_rule(raw, index)
        name = name_of(rule)
        if name in names:
            # Findings are reported by name, so two rules of one name would be ambiguous.
            raise Invalid(f"{where_is(index, name)}: the name is already used by "
                          f"rules[{names[name]}]")
        names[name] = index
        rules.append(rule)
    return tuple(rules)


@dataclasses.dataclass(frozen=True)
class Head:
    """A rule's keys that every plugin's rules share, and its check."""

    where: str  # "rules[2] (server-cap)": how errors name the rule
    name: str
    check: Check
    actions: frozenset[str]
    message: str
    during: tuple[Window, ...]
    tree_scope: str


def parse_head(raw: Any, index: int, own_keys: tuple[str, ...],
               checks: tuple[str, ...]) -> Head:
    """The common keys and the one check of a raw rule, refusing any key that is neither
    common, in ``own_keys`` (the plugin's, for it to read) nor one of ``checks``."""
    where = where_is(index, None)
    if not isinstance(raw, Mapping):
        raise Invalid(f"{where}: a rule must be a mapping, not {kind_of(raw)}")

    name = where
    if "name" in raw:
        name = string(raw["name"], f"{where}: 'name'")
        where = where_is(index, name)

    no_unknown_keys(raw, (HEAD_KEYS[0], *own_keys, *HEAD_KEYS[1:], *checks), where)

    kinds = [key for key in checks if key in raw]
    if not kinds:
        raise Invalid(f"{where}: no check given; add exactly one of {', '.join(checks)}")
    if len(kinds) > 1:
        raise Invalid(
            f"{where}: more than one check ({', '.join(kinds)}); write one rule per check"
        )
    kind = kinds[0]
    if kind == "any_operation" and "actions" not in raw:
        raise Invalid(f"{where}: 'any_operation' needs 'actions': the stack actions it "
                      f"applies to")

    message = string(raw["message"], f"{where}: 'message'") if "message" in raw else ""
    actions = _actions(raw["actions"], f"{where}: 'actions'") if "actions" in raw else None
    check = CHECKS[kind](raw[kind], f"{where}: '{kind}'")
    if actions is None:
        actions = default_actions(check)
    during = _windows(raw["during"], f"{where}: 'during'") if "during" in raw else ()
    tree_scope = EVERY_STACK
    if "tree_scope" in raw:
        tree_scope = raw["tree_scope"]
        if tree_scope not in TREE_SCOPES:
            raise Invalid(f"{where}: 'tree_scope': must be one of {', '.join(TREE_SCOPES)}, "
                          f"not {kind_of(tree_scope)}")
    return Head(where=where, name=name, check=check, actions=actions, message=message,
                during=during, tree_scope=tree_scope)


def _actions(value: Any, where: str) -> frozenset[str]:
    names = strings(value, where)
    unknown = [name for name in names if name not in ACTIONS]
    if unknown:
        raise Invalid(
            f"{where}: unknown action {unknown[0]!r}; expected some of {', '.join(ACTIONS)}"
        )
    return frozenset(names)


# --- the checks, one parser each ------------------------------------------------------


def _max_resources(value: Any, where: str) -> Check:
    return MaxResources(limit=limit(value, where))


def _max_count(value: Any, where: str) -> Check:
    fields = _fields(value, where, ("type", "limit"))
    return MaxCount(
        type=string(fields["type"], f"{where}: 'type'"),
        limit=limit(fields["limit"], f"{where}: 'limit'"),
    )


def _allowed_types(value: Any, where: str) -> Check:
    return AllowedTypes(patterns=strings(value, where))


def _denied_types(value: Any, where: str) -> Check:
    return DeniedTypes(patterns=strings(value, where))


def _required_properties(value: Any, where: str) -> Check:
    fields = _fields(value, where, ("type", "properties"))
    return RequiredProperties(
        type=string(fields["type"], f"{where}: 'type'"),
        properties=strings(fields["properties"], f"{where}: 'properties'"),
    )


def _required_tags(value: Any, where: str) -> Check:
    return RequiredTags(tags=strings(value, where))


def _protect(value: Any, where: str) -> Check:
    fields = _fields(value, where, (), optional=("changes", "resources"))
    return Protect(changes=_changes(fields, where), resources=_selector(fields, where))


def _max_changes(value: Any, where: str) -> Check:
    fields = _fields(value, where, ("limit",), optional=("changes", "resources"))
    return MaxChanges(limit=limit(fields["limit"], f"{where}: 'limit'"),
                      changes=_changes(fields, where), resources=_selector(fields, where))


def _any_operation(value: Any, where: str) -> Check:
    if value is not True:
        raise Invalid(f"{where}: must be true (to turn the rule off, remove it), "
                      f"not {kind_of(value)}")
    return AnyOperation()


CHECKS: dict[str, Callable[[Any, str], Check]] = {
    "max_resources": _max_resources,
    "max_count": _max_count,
    "allowed_types": _allowed_types,
    "denied_types": _denied_types,
    "required_properties": _required_properties,
    "required_tags": _required_tags,
    "protect": _protect,
    "max_changes": _max_changes,
    "any_operation": _any_operation,
}


def _changes(fields: Mapping[str, Any], where: str) -> tuple[Change, ...]:
    if "changes" not in fields:
        return DEFAULT_CHANGES
    names = strings(fields["changes"], f"{where}: 'changes'")
    for name in names:
        if name not in CHANGES:
            raise Invalid(f"{where}: 'changes': unknown change {name!r}; expected some of "
                          f"{', '.join(CHANGES)}")
    return tuple(change for change in CHANGES if change in names)


def _selector(fields: Mapping[str, Any], where: str) -> Selector:
    if "resources" not in fields:
        return EVERY_RESOURCE
    where = f"{where}: 'resources'"
    value = _fields(fields["resources"], where, (), optional=SELECTOR_KEYS)
    if not value:
        raise Invalid(f"{where}: give some of {', '.join(SELECTOR_KEYS)}, or leave "
                      f"'resources' out to select every resource")
    return Selector(**{key: strings(value[key], f"{where}: '{key}'")
                       for key in SELECTOR_KEYS if key in value})


# --- time windows ---------------------------------------------------------------------


def _windows(value: Any, where: str) -> tuple[Window, ...]:
    if not isinstance(value, list) or not value:
        raise Invalid(f"{where}: must be a non-empty list of windows, not {kind_of(value)}")
    return tuple(_window(item, f"{where}[{i}]") for i, item in enumerate(value))


def _window(value: Any, where: str) -> Window:
    fields = _fields(value, where, (), optional=WINDOW_KEYS)
    weekly = [key for key in WEEKLY_KEYS if key in fields]
    period = [key for key in PERIOD_KEYS if key in fields]
    if weekly and period:
        raise Invalid(f"{where}: a window is weekly ({', '.join(WEEKLY_KEYS)}) or a period "
                      f"({', '.join(PERIOD_KEYS)}), not both")
    if not weekly and not period:
        raise Invalid(f"{where}: give 'days' and/or 'from' and 'to' for a weekly window, or "
                      f"'start' and 'end' for a period")
    timezone = UTC_NAME
    if "timezone" in fields:
        timezone = string(fields["timezone"], f"{where}: 'timezone'")
        try:
            zone(timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
            raise Invalid(f"{where}: 'timezone': unknown time zone {timezone!r}; give an "
                          f"IANA name such as Europe/Paris, or UTC") from exc
    if period:
        return _period(fields, where, timezone)
    days = EVERY_DAY
    if "days" in fields:
        names = strings(fields["days"], f"{where}: 'days'")
        for name in names:
            if name not in WEEKDAYS:
                raise Invalid(f"{where}: 'days': unknown day {name!r}; expected some of "
                              f"{', '.join(WEEKDAYS)}")
        days = tuple(i for i, day in enumerate(WEEKDAYS) if day in names)
    if ("from" in fields) != ("to" in fields):
        raise Invalid(f"{where}: give both 'from' and 'to', or neither for whole days")
    if "from" not in fields:
        return Weekly(days=days, timezone=timezone)
    return Weekly(days=days, start=_time(fields["from"], f"{where}: 'from'"),
                  end=_time(fields["to"], f"{where}: 'to'"), timezone=timezone)


_TIME = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)")


def _time(value: Any, where: str) -> int:
    """A time of day, "HH:MM", as minutes since midnight."""
    if isinstance(value, int) and not isinstance(value, bool):
        # YAML 1.1 reads an unquoted 16:00 as the sexagesimal number 960.
        raise Invalid(f"{where}: must be a time \"HH:MM\" in quotes, not {kind_of(value)}; "
                      f"YAML reads an unquoted 16:00 as a number")
    match = _TIME.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise Invalid(f"{where}: must be a time \"HH:MM\" (00:00 to 23:59), "
                      f"not {kind_of(value)}")
    return int(match[1]) * 60 + int(match[2])


def _period(fields: Mapping[str, Any], where: str, timezone: str) -> Period:
    for key in PERIOD_KEYS:
        if key not in fields:
            raise Invalid(f"{where}: '{key}' is missing; a period needs 'start' and 'end'")
    start = _moment(fields["start"], f"{where}: 'start'", timezone, end=False)
    end = _moment(fields["end"], f"{where}: 'end'", timezone, end=True)
    if end <= start:
        raise Invalid(f"{where}: 'end' is before 'start'")
    return Period(start=start, end=end, timezone=timezone)


def _moment(value: Any, where: str, timezone: str, *, end: bool) -> datetime.datetime:
    """A date or "YYYY-MM-DD HH:MM" in ``timezone``. An ``end`` is the instant after the
    day or minute written, since the operator writes the last one the window covers."""
    if isinstance(value, datetime.datetime):  # YAML reads 2025-01-03 16:00:00 as one
        raise Invalid(f"{where}: write a date, or a date and time \"YYYY-MM-DD HH:MM\" in "
                      f"quotes (its time zone is 'timezone'), not {kind_of(value)}")
    if isinstance(value, datetime.date):  # YAML reads an unquoted 2025-01-03 as a date
        moment = datetime.datetime.combine(value, datetime.time(), zone(timezone))
        return moment + datetime.timedelta(days=1) if end else moment
    if isinstance(value, str):
        for layout, step in (("%Y-%m-%d", datetime.timedelta(days=1)),
                             ("%Y-%m-%d %H:%M", datetime.timedelta(minutes=1)),
                             ("%Y-%m-%dT%H:%M", datetime.timedelta(minutes=1))):
            try:
                naive = datetime.datetime.strptime(value, layout)
            except ValueError:
                continue
            moment = naive.replace(tzinfo=zone(timezone))
            return moment + step if end else moment
    raise Invalid(f"{where}: must be a date \"YYYY-MM-DD\" or a date and time "
                  f"\"YYYY-MM-DD HH:MM\", not {kind_of(value)}")


# --- value helpers --------------------------------------------------------------------


def where_is(index: int, name: str | None) -> str:
    return f"rules[{index}] ({name})" if name is not None else f"rules[{index}]"


def no_unknown_keys(raw: Mapping[Any, Any], known: tuple[str, ...], where: str) -> None:
    for key in raw:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"expected {', '.join(known)}"
            raise Invalid(f"{where}: unknown key {key!r}; {hint}")


def _fields(value: Any, where: str, keys: tuple[str, ...],
            optional: tuple[str, ...] = ()) -> Mapping[str, Any]:
    """A mapping with every one of ``keys`` and any of ``optional``."""
    if not isinstance(value, Mapping):
        raise Invalid(f"{where}: must be a mapping with {', '.join((*keys, *optional))}, "
                      f"not {kind_of(value)}")
    no_unknown_keys(value, (*keys, *optional), where)
    for key in keys:
        if key not in value:
            raise Invalid(f"{where}: '{key}' is missing")
    return value


def string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"{where}: must be a non-empty string, not {kind_of(value)}")
    return value


def strings(value: Any, where: str) -> tuple[str, ...]:
    # One bare string is refused rather than taken as a list of one: "OS::Nova::*" and
    # ["OS::Nova::*"] look alike, but a rule that silently means something else is worse.
    if not isinstance(value, list) or not value:
        raise Invalid(f"{where}: must be a non-empty list of strings, not {kind_of(value)}")
    return tuple(string(item, f"{where}[{i}]") for i, item in enumerate(value))


def limit(value: Any, where: str) -> int:
    # bool is an int in Python; "limit: yes" is a slip, not 1.
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Invalid(f"{where}: must be a whole number of 0 or more, not {kind_of(value)}")
    return value


_KIND_NAMES: Mapping[type, str] = {
    bool: "a boolean", int: "an integer", float: "a number", str: "a string",
    list: "a list", dict: "a mapping", datetime.date: "a date",
    datetime.datetime: "a date and time",
}


def kind_of(value: Any) -> str:
    """How a value reads in an error: its YAML kind and, when short, the value."""
    if value is None:
        return "null"
    kind = _KIND_NAMES.get(type(value), type(value).__name__)
    shown = repr(value) if not isinstance(value, datetime.date) else str(value)
    return f"{kind} ({shown})" if len(shown) <= 40 else kind
