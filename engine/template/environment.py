"""Environments: what a request sets beside the template, merged as Heat merges them.

An environment has six sections (``ENVIRONMENT_SECTIONS``). A request gives one in
``environment`` or a list of names in ``environment_files`` whose texts are in ``files``;
with the list, the body's ``environment`` is ignored and the files are merged in order on
top of the request's ``parameters`` (Heat's order, so that heatclient's requests mean the
same here). ``resource_registry`` maps type names to other type names (exactly, by a
trailing-``*`` glob, or for one resource under ``resources``) and sets breakpoints
(``resources.<name pattern>.hooks``, :func:`resource_hooks`) and the actions an update
may not take on a resource (``resources.<name pattern>.restricted_actions``,
:func:`resource_restricted_actions`); a nested stack inherits the entries its parent
resource's name matches (:func:`child_registry`).
``parameter_defaults`` replace template defaults.

Everything here is pure: plain data in, plain data or an :class:`Environment` out.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import fnmatch
from collections.abc import Mapping, Sequence
from typing import Any

from engine.errors import BadRequest, InvalidBreakPointHook, InvalidRestrictedActionType
from engine.schema import load_json
from engine.template.event_sinks import check as check_event_sinks
from engine.template.parse import document
from engine.vocabulary import Hook, RestrictedAction

ENVIRONMENT_SECTIONS = ("parameters", "parameter_defaults", "resource_registry",
                        "encrypted_param_names", "event_sinks", "parameter_merge_strategies")
MERGE_STRATEGIES = ("overwrite", "merge", "deep_merge")
TEMPLATE_SUFFIXES = (".yaml", ".template")
_LIST_SECTIONS = ("encrypted_param_names", "event_sinks")
HOOKS = "hooks"
RESTRICTED_ACTIONS = "restricted_actions"
# As Heat's messages show its HOOK_TYPES and RESTRICTED_ACTIONS tuples.
_HOOK_TYPES_SHOWN = str(tuple(str(hook) for hook in Hook))
_RESTRICTED_ACTIONS_SHOWN = str(tuple(str(action) for action in RestrictedAction))


@dataclasses.dataclass(frozen=True)
class Environment:
    parameters: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    parameter_defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    resource_registry: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    encrypted_param_names: tuple[str, ...] = ()
    event_sinks: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Environment:
        """The environment of a stored stack (already checked when it was stored)."""
        data = data or {}
        return cls(parameters=dict(data.get("parameters") or {}),
                   parameter_defaults=dict(data.get("parameter_defaults") or {}),
                   resource_registry=dict(data.get("resource_registry") or {}),
                   encrypted_param_names=tuple(data.get("encrypted_param_names") or ()),
                   event_sinks=tuple(data.get("event_sinks") or ()))

    def as_dict(self) -> dict[str, Any]:
        """Heat's stored form: every section present, ``resources`` always in the
        registry."""
        registry = dict(self.resource_registry)
        registry.setdefault("resources", {})
        return {"parameters": dict(self.parameters),
                "parameter_defaults": dict(self.parameter_defaults),
                "resource_registry": registry,
                "encrypted_param_names": list(self.encrypted_param_names),
                "event_sinks": [dict(s) for s in self.event_sinks]}

    def resolve_type(self, type_name: str, resource_name: str) -> str:
        """The type that implements ``type_name`` for ``resource_name``.

        A per-resource entry beats an exact entry, which beats the longest matching glob;
        a mapped name is looked up again (so aliases chain). A chain that comes back to a
        name already on it stops there."""
        return _resolve(self.resource_registry, type_name, resource_name)


def _resolve(registry: Mapping[str, Any], type_name: str, resource_name: str) -> str:
    # NOTE: a loop, not recursion, and one pass over the registry: an environment may
    # chain thousands of aliases.
    per_resource = (registry.get("resources") or {}).get(resource_name) or {}
    globs = sorted((k for k, v in registry.items() if k.endswith("*") and isinstance(v, str)),
                   key=lambda k: (-len(k), k))
    seen: set[str] = set()
    while type_name not in seen:
        mapped = _mapped(registry, per_resource, globs, type_name)
        if mapped is None:
            break
        seen.add(type_name)
        if mapped.endswith(TEMPLATE_SUFFIXES):
            return mapped  # a provider template: a file in the stack's files
        type_name = mapped
    return type_name


def resource_hooks(registry: Mapping[str, Any], resource_name: str) -> frozenset[str]:
    """The hooks ``registry`` sets on ``resource_name``: those of every ``resources``
    entry whose name pattern (``fnmatch``, case-sensitive, as Heat's ``matches_hook``)
    matches it."""
    return _matching(registry, resource_name, HOOKS)


def resource_restricted_actions(registry: Mapping[str, Any], resource_name: str
                                ) -> frozenset[str]:
    """The actions (``RestrictedAction``) ``registry`` forbids an update to take on
    ``resource_name``, matched as hooks are (Heat's ``get_rsrc_restricted_actions``)."""
    return _matching(registry, resource_name, RESTRICTED_ACTIONS)


def sets_any(registry: Mapping[str, Any], key: str) -> bool:
    """Whether some ``resources`` entry of ``registry`` sets ``key`` (``HOOKS``,
    ``RESTRICTED_ACTIONS``): a stack whose entries set none need not match names."""
    return any(isinstance(entry, Mapping) and key in entry
               for entry in (registry.get("resources") or {}).values())


def _matching(registry: Mapping[str, Any], resource_name: str, key: str) -> frozenset[str]:
    """The values (a string or a list of them) under ``key`` of every ``resources``
    entry whose name pattern matches ``resource_name``, together."""
    found: set[str] = set()
    for pattern, entry in (registry.get("resources") or {}).items():
        if not isinstance(entry, Mapping) or not fnmatch.fnmatchcase(resource_name, pattern):
            continue
        values = entry.get(key)
        if isinstance(values, str):
            found.add(values)
        elif isinstance(values, list):
            found.update(value for value in values if isinstance(value, str))
    return frozenset(found)


def child_registry(registry: Mapping[str, Any], resource_name: str) -> dict[str, Any]:
    """The registry the nested stack of ``resource_name`` inherits, as Heat's
    ``get_child_environment`` builds it: the parent's, with ``resources`` replaced by the
    contents of the parent's entries that name the resource (every matching pattern, then
    the exact name), so ``resources: {nested: {inner: {hooks: pre-create}}}`` sets a
    hook on the resource ``inner`` of ``nested``'s stack. An entry that is no map (a
    type mapping or ``hooks`` of the resource itself) names no resource there."""
    resources = registry.get("resources") or {}
    inherited: dict[str, Any] = {}
    for pattern, entry in resources.items():
        if isinstance(entry, Mapping) and fnmatch.fnmatchcase(resource_name, pattern):
            inherited.update(entry)
    exact = resources.get(resource_name)
    if isinstance(exact, Mapping):
        inherited.update(exact)
    return {**{key: value for key, value in registry.items() if key != "resources"},
            "resources": {name: dict(entry) for name, entry in inherited.items()
                          if isinstance(entry, Mapping)}}


def _mapped(registry: Mapping[str, Any], per_resource: Mapping[str, Any], globs: list[str],
            type_name: str) -> str | None:
    """One step: a per-resource entry, else an exact one, else the longest matching glob
    (which never maps a type onto itself)."""
    for entries in (per_resource, registry):
        if isinstance(entries.get(type_name), str):
            return str(entries[type_name])
    for key in globs:
        if type_name.startswith(key[:-1]):
            target = registry[key]
            mapped = target[:-1] + type_name[len(key) - 1:] if target.endswith("*") else target
            if mapped != type_name:
                return str(mapped)
    return None


# --- reading a request -------------------------------------------------------------------


def parse_environment(value: Any, name: str = "environment") -> dict[str, Any]:
    """An environment from a request (a map, or YAML/JSON text), with Heat's checks."""
    if value is None:
        return {}
    data = document(value, name).data if isinstance(value, str) else value
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise BadRequest(reason="Environment not in valid format: The environment is not "
                                "a valid YAML mapping data type.")
    for section, body in data.items():
        if section not in ENVIRONMENT_SECTIONS:
            raise BadRequest(reason=f'Environment not in valid format: environment has '
                                    f'wrong section "{section}"')
        if body is None:
            raise BadRequest(reason=f'Environment not in valid format: environment has '
                                    f'empty section "{section}"')
        _check_section(section, body, name)
    return dict(data)


def _check_section(section: str, body: Any, name: str) -> None:
    wanted_list = section in _LIST_SECTIONS
    if not isinstance(body, list if wanted_list else Mapping):
        wanted = "a list" if wanted_list else "a map"
        raise BadRequest(reason=f'The section "{section}" of {name} must be {wanted}')
    _check_contents(section, body, name)


def _check_contents(section: str, body: Any, name: str) -> None:
    if section == "resource_registry":
        _check_registry(body, name)
    elif section == "event_sinks":
        check_event_sinks(body, name)
    elif section == "parameter_merge_strategies":
        for param, strategy in body.items():
            if strategy not in MERGE_STRATEGIES:
                raise BadRequest(reason=f"Invalid merge strategy '{strategy}' for parameter "
                                        f"'{param}'.")


def _check_registry(registry: Mapping[str, Any], name: str, *, per_resource: bool = False
                    ) -> None:
    """Heat's shapes: type names mapped to type names or template files; under
    ``resources``, per resource name pattern, those, its ``hooks`` and
    ``restricted_actions``, and maps for the resources of its nested stack (checked the
    same way, at any depth)."""
    for key, value in registry.items():
        if key == "resources" and not per_resource:
            if not isinstance(value, Mapping) or not all(isinstance(v, Mapping)
                                                         for v in value.values()):
                raise BadRequest(reason=f'"resource_registry.resources" in {name} must map '
                                        "resource names to maps")
            for entry in value.values():
                _check_registry(entry, name, per_resource=True)
        elif key == HOOKS:
            if value is not None:
                _check_hooks(value)
        elif key == RESTRICTED_ACTIONS:
            if value is not None:
                _check_restricted_actions(value)
        elif per_resource and isinstance(value, Mapping):
            _check_registry(value, name, per_resource=True)  # a nested stack's resource
        elif value is not None and not isinstance(value, str):
            raise BadRequest(reason=f'resource_registry entry "{key}" in {name} must map to '
                                    "a type name or a template file")


def _one_or_a_list_of(value: Any, allowed: type[enum.StrEnum]) -> bool:
    """Whether ``value`` is one of ``allowed``'s words or a list of them, as Heat takes a
    hook and a restricted action."""
    words = set(allowed)
    if isinstance(value, str):
        return value in words
    return isinstance(value, list) and all(isinstance(v, str) and v in words for v in value)


def _check_hooks(value: Any) -> None:
    """A hook type, or a list of them (Heat's ``is_hook_definition``)."""
    if not _one_or_a_list_of(value, Hook):
        raise InvalidBreakPointHook(message=f'Invalid hook type "{value}" for resource '
                                            "breakpoint, acceptable hook types are: "
                                            f"{_HOOK_TYPES_SHOWN}")


def _check_restricted_actions(value: Any) -> None:
    """A restricted action, or a list of them (Heat's ``is_valid_restricted_action``)."""
    if not _one_or_a_list_of(value, RestrictedAction):
        raise InvalidRestrictedActionType(
            message=f'Invalid restricted_action type "{value}" for resource, acceptable '
                    f"restricted_action types are: {_RESTRICTED_ACTIONS_SHOWN}")


def request_environment(body: Mapping[str, Any], parameter_types: Mapping[str, str]
                        ) -> dict[str, Any]:
    """The environment a create, update or preview request sets, merged as Heat merges
    it: ``environment`` (or, when given, the ``environment_files`` from ``files`` in
    order, ignoring ``environment``) with the request's ``parameters`` applied first.
    ``parameter_types`` (name -> HOT type) lets a merge strategy merge by type."""
    parameters = body.get("parameters") or {}
    if not isinstance(parameters, Mapping):
        raise BadRequest(reason="parameters must be a map")
    names = body.get("environment_files") or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise BadRequest(reason="environment_files must be a list of file names")
    if not names:
        given = parse_environment(body.get("environment"))
        given.pop("parameter_merge_strategies", None)
        given["parameters"] = {**(given.get("parameters") or {}), **parameters}
        return given
    files = body.get("files") or {}
    if not isinstance(files, Mapping):
        raise BadRequest(reason="files must be a map")
    env: dict[str, Any] = {"parameters": dict(parameters)}
    strategies_seen: dict[str, str] = {}
    for name in names:
        if name not in files:
            raise BadRequest(reason=f'The environment file "{name}" is not in "files"')
        one = parse_environment(files[name], name)
        strategies = one.pop("parameter_merge_strategies", {}) or {}
        for section, value in one.items():
            if section in ("parameters", "parameter_defaults"):
                env[section] = _merge_parameters(env.get(section) or {}, value, strategies,
                                                 strategies_seen, parameter_types, name)
            elif section in _LIST_SECTIONS:
                env[section] = [*(env.get(section) or []), *value]
            else:
                env[section] = {**(env.get(section) or {}),
                                **{k: v for k, v in value.items() if v is not None}}
    return env


def _merge_parameters(old: Mapping[str, Any], new: Mapping[str, Any],
                      strategies: Mapping[str, str], seen: dict[str, str],
                      types: Mapping[str, str], file: str) -> dict[str, Any]:
    merged = dict(old)
    for key, value in new.items():
        # A strategy a file states (for the key, or as its default) is remembered, and a
        # later file stating another is a conflict; a file that states none overwrites
        # unless an earlier one chose otherwise.
        stated = strategies.get(key, strategies.get("default"))
        if stated is not None and seen.setdefault(key, stated) != stated:
            raise BadRequest(reason=f"Conflicting merge strategy '{stated}' for parameter "
                                    f"'{key}' in file '{file}'.")
        strategy = stated or seen.get(key, "overwrite")
        if value is None:
            continue
        if strategy == "overwrite" or key not in merged:
            merged[key] = copy.deepcopy(value)
            continue
        merged[key] = _merge_value(merged[key], value, types.get(key, "string"),
                                   deep=strategy == "deep_merge", key=key)
    return merged


def _merge_value(old: Any, new: Any, kind: str, *, deep: bool, key: str) -> Any:
    if kind == "json":
        return _merge_maps(_json(old, key), _json(new, key), deep)
    if kind == "comma_delimited_list":
        if isinstance(old, str) and isinstance(new, str):
            return f"{old},{new}" if old else new
        return [*_as_list(old), *_as_list(new)]
    if kind == "string":
        return f"{old}{new}"
    if kind == "number":
        try:
            return float(old) + float(new) if "." in f"{old}{new}" else int(old) + int(new)
        except (TypeError, ValueError):
            raise BadRequest(reason=f"Invalid parameter in environment {key}.") from None
    raise BadRequest(reason=f"Invalid merge strategy 'merge' for parameter '{key}'.")


def _json(value: Any, key: str) -> Any:
    try:
        return load_json(value) if isinstance(value, str) else value
    except ValueError:
        raise BadRequest(reason=f"Invalid parameter in environment {key}.") from None


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, str):
        return value.split(",") if value else []
    if isinstance(value, Sequence):
        return list(value)
    return [value]


def _merge_maps(old: Any, new: Any, deep: bool) -> Any:
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return new
    merged = dict(old)
    for key, value in new.items():
        if deep and isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge_maps(merged[key], value, deep)
        elif deep and isinstance(value, list) and isinstance(merged.get(key), list):
            merged[key] = [*merged[key], *value]
        else:
            merged[key] = value
    return merged
