"""Template parameters: their declared schema and the typed values a stack runs with.

``hidden`` parameters are masked by :func:`masked`, the one function every output path
(API views, events, logs, plugin views) uses, so a hidden value has one place to leak from.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from engine.budget import compile_pattern
from engine.errors import (
    KilnError,
    Location,
    StackValidationFailed,
    UnknownUserParameter,
    UserParameterMissing,
)
from engine.logs import mask_secret
from engine.schema import (
    AllowedPattern,
    AllowedValues,
    Constraint,
    Custom,
    Length,
    Modulo,
    Range,
    load_json,
    to_boolean,
    to_number,
)
from engine.template.parse import SourceDocument
from engine.template.versions import HotVersion

MASK = "******"
TYPES = ("string", "number", "boolean", "json", "comma_delimited_list")
_KEYS = {"type", "label", "description", "default", "hidden", "constraints", "immutable", "tags"}
# Heat's valid_types of each constraint, in HOT parameter types.
_CONSTRAINT_TYPES = {
    "length": ("string", "comma_delimited_list", "json"),
    "range": ("number",),
    "allowed_values": ("string", "number", "comma_delimited_list", "boolean"),
    "allowed_pattern": ("string",),
    "modulo": ("number",),
    "custom_constraint": TYPES,
}
# Parameter keys and constraints that arrived in later versions: (name, first version).
_KEY_SINCE = {"tags": "2018-03-02"}
# oslo's bool_from_string spellings, as Heat's refusal lists them.
_BOOLEAN_SPELLINGS = "'0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'"
_CONSTRAINT_SINCE = {"modulo": "2017-02-24"}


@dataclasses.dataclass(frozen=True)
class ParameterSchema:
    name: str
    type: str
    default: Any = None
    has_default: bool = False
    hidden: bool = False
    label: str = ""
    description: str = ""
    constraints: tuple[tuple[Constraint, str], ...] = ()
    location: Location = dataclasses.field(default_factory=Location)
    immutable: bool = False
    tags: tuple[str, ...] = ()

    def convert(self, value: Any) -> Any:
        """Typed value of ``value``, checked against the constraints: what ``get_param``
        gives, as Heat's parameter classes (heat/engine/parameters.py) give it."""
        typed = self._typed(value)
        for constraint, description in self.constraints:
            if isinstance(constraint, AllowedValues):
                reason = self._not_allowed(constraint, value, typed)
            else:
                try:
                    reason = constraint.check(typed)
                except TypeError:  # a length of a number a json parameter holds
                    reason = f"Value '{value}' has no length"
            if reason:
                if self.hidden:
                    reason = "the value does not satisfy its constraints"
                raise self._invalid(description or reason)
        return typed

    def _typed(self, value: Any) -> Any:
        def fail(expected: str) -> StackValidationFailed:
            return self._invalid(f"Value '{self._shown(value)}' is not {expected}")

        if self.type == "string":
            # Heat's str(): a boolean reads True/False, a number as Python writes it.
            # A list or map is refused: Heat would give its Python repr.
            if isinstance(value, (Mapping, list)):
                raise fail("a string")
            return str(value)
        if self.type == "number":
            number = to_number(value, on_error=fail)
            if not math.isfinite(number):
                raise fail("a finite number")
            return number
        if self.type == "boolean":
            def unrecognised(_: str) -> StackValidationFailed:
                return self._invalid(f"Unrecognized value '{self._shown(value)}', acceptable "
                                     f"values are: {_BOOLEAN_SPELLINGS}")
            return to_boolean(value, on_error=unrecognised)
        if self.type == "json":
            # Any JSON value, as Heat's JsonParam: text is read as JSON, except empty
            # text, which Heat gives back as it is.
            if not isinstance(value, str):
                return value
            try:
                return load_json(value) if value else value
            except ValueError as exc:
                raise self._invalid(f"Value must be valid JSON: {exc}") from None
        # comma_delimited_list: split on commas, items kept as written (" c" stays).
        if isinstance(value, str):
            return value.split(",") if value else []
        if isinstance(value, list):
            return [str(item) for item in value]
        raise fail("a comma-delimited list")

    def _not_allowed(self, constraint: AllowedValues, value: Any, typed: Any
                     ) -> str | None:
        """Heat's allowed_values: a list's items compared as they are, a single value
        with every allowed value read as the parameter's type (``"1"`` allows the
        number 1); the refusal shows the value as given."""
        if isinstance(typed, list):
            allowed: tuple[Any, ...] = constraint.values
        else:
            allowed = tuple(self._allowed_as_type(v) for v in constraint.values)
        if constraint.check(typed, allowed) is None:
            return None
        return constraint.refusal(value)

    def _allowed_as_type(self, allowed: Any) -> Any:
        if self.type == "json":
            return allowed
        try:
            return self._typed(allowed)
        except StackValidationFailed:
            raise self._invalid(f'Value "{allowed}" is invalid for data type '
                                f'"{self.type}".') from None

    def _shown(self, value: Any) -> Any:
        return MASK if self.hidden else value

    def _invalid(self, reason: str) -> StackValidationFailed:
        return StackValidationFailed(
            self.location, reason=f"Parameter '{self.name}' is invalid: {reason}"
        )


def parse_schemas(doc: SourceDocument, section: Any, version: HotVersion | None = None
                  ) -> dict[str, ParameterSchema]:
    """The declared parameters; ``version`` None accepts every version's keys (for code
    reading a stored template that was checked when it was stored)."""
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise StackValidationFailed(doc.location(("parameters",)),
                                    reason='"parameters" must be a map')
    return {str(name): parse_schema(doc, str(name), body, version)
            for name, body in section.items()}


def parse_schema(doc: SourceDocument, name: str, body: Any, version: HotVersion | None = None
                 ) -> ParameterSchema:
    """One declared HOT parameter (``version`` as for :func:`parse_schemas`)."""
    path = ("parameters", name)
    loc = doc.location(path)
    if not isinstance(body, Mapping):
        raise StackValidationFailed(loc, reason=f'Parameter "{name}" must be a map')
    unknown = sorted(k for k in body if k not in _KEYS or (
        version is not None and k in _KEY_SINCE and not version.since(_KEY_SINCE[k])))
    if unknown:
        raise StackValidationFailed(doc.location((*path, unknown[0])),
                                    reason=f'Invalid key "{unknown[0]}" for parameter ({name})')
    kind = body.get("type")
    if kind not in TYPES:
        raise StackValidationFailed(doc.location((*path, "type")),
                                    reason=f'Invalid type ({kind}) for parameter ({name}); '
                                           f'must be one of {", ".join(TYPES)}')
    listed = body.get("constraints")
    if listed is not None and not isinstance(listed, list):
        raise StackValidationFailed(doc.location((*path, "constraints")),
                                    reason=f"Invalid parameter constraints for parameter "
                                           f"{name}, expected a list")
    constraints = tuple(
        _parse_constraint(doc, item, (*path, "constraints", i), kind, version)
        for i, item in enumerate(listed or [])
    )
    tags = body.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise StackValidationFailed(doc.location((*path, "tags")),
                                    reason=f'The tags of parameter "{name}" must be a list '
                                           "of strings")
    schema = ParameterSchema(
        name=name, type=kind, default=body.get("default"), has_default="default" in body,
        hidden=_flag(doc, body, path, "hidden"), label=str(body.get("label") or ""),
        description=str(body.get("description") or ""), constraints=constraints, location=loc,
        immutable=_flag(doc, body, path, "immutable"), tags=tuple(tags),
    )
    if schema.has_default and schema.default is not None:
        schema.convert(schema.default)
    return schema


def _flag(doc: SourceDocument, body: Mapping[str, Any], path: tuple[Any, ...], key: str
          ) -> bool:
    value = body.get(key, False)
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "false"):
        return str(value).lower() == "true"
    raise StackValidationFailed(doc.location((*path, key)),
                                reason=f'"{key}" of parameter "{path[-1]}" must be a boolean')


def _parse_constraint(doc: SourceDocument, item: Any, path: tuple[Any, ...], param_type: str,
                      version: HotVersion | None) -> tuple[Constraint, str]:
    loc = doc.location(path)
    if not isinstance(item, Mapping):
        raise StackValidationFailed(loc, reason="A parameter constraint must be a map")
    description = str(item.get("description") or "")
    kinds = [k for k in item if k != "description"]
    if len(kinds) != 1:
        raise StackValidationFailed(loc, reason="A parameter constraint must have one kind")
    kind, arg = kinds[0], item[kinds[0]]
    if kind not in _CONSTRAINT_TYPES or (
            version is not None and kind in _CONSTRAINT_SINCE
            and not version.since(_CONSTRAINT_SINCE[kind])):
        raise StackValidationFailed(loc, reason=f'Invalid parameter constraints: "{kind}" '
                                                "is not supported")
    # NOTE: checked here so that a constraint can never meet a value it cannot compare
    # (a range on a string, a length of a number) when the stack's values are checked.
    if param_type not in _CONSTRAINT_TYPES[kind]:
        raise StackValidationFailed(loc, reason=f'"{kind}" constraint invalid for type '
                                                f"{param_type}")
    try:
        if kind in ("length", "range"):
            low, high = arg.get("min"), arg.get("max")
            number = int if kind == "length" else (int, float)
            if any(b is not None and (isinstance(b, bool) or not isinstance(b, number))
                   for b in (low, high)):
                raise TypeError(kind)
            return (Length(low, high) if kind == "length" else Range(low, high)), description
        if kind == "custom_constraint":
            if not isinstance(arg, str) or not arg:
                raise TypeError(kind)
            return Custom(arg), description
        if kind == "modulo":
            step, offset = arg.get("step"), arg.get("offset")
            if (not isinstance(step, int) or not isinstance(offset, int)
                    or isinstance(step, bool) or isinstance(offset, bool)):
                raise TypeError(kind)
            if step == 0 or abs(offset) >= abs(step):
                raise StackValidationFailed(loc, reason='Invalid "modulo" constraint: step '
                                                        "must be non-zero and larger than "
                                                        "offset")
            return Modulo(step, offset), description
        if kind == "allowed_values":
            if not isinstance(arg, list):
                raise TypeError(kind)
            return AllowedValues(tuple(arg)), description
        compile_pattern(str(arg))
        return AllowedPattern(str(arg), location=loc), description
    except (AttributeError, TypeError):
        raise StackValidationFailed(loc, reason=f'Invalid "{kind}" constraint') from None
    except re.error as exc:
        raise StackValidationFailed(loc, reason=f'Invalid "{kind}" constraint: {exc}') from None


def resolve_values(
    schemas: Mapping[str, ParameterSchema], given: Mapping[str, Any], *,
    require_all: bool = True, defaults: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Typed values for every declared parameter: ``given``, else the environment's
    ``defaults`` (its parameter_defaults), else the template's default; a null counts as
    not given, as in Heat.

    Without ``require_all`` (template validate, which Heat allows without values) a
    parameter with none is left out, and what depends on it stays unevaluated."""
    for key in given:
        if key not in schemas:
            raise UnknownUserParameter(key=key)
    raw = raw_values(schemas, given, defaults)
    values: dict[str, Any] = {}
    for name, schema in schemas.items():
        if name in raw:
            values[name] = schema.convert(raw[name])
        elif require_all:
            raise UserParameterMissing(schema.location, key=name)
    return values


def raw_values(schemas: Mapping[str, ParameterSchema], given: Mapping[str, Any],
               defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The value each declared parameter takes, as written (not converted), in Heat's
    order: ``given``, else the environment's ``defaults`` (its parameter_defaults), else
    the template's default; a null counts as not given. One with none is left out.

    The one place that order is kept: :func:`resolve_values` converts what this finds,
    and a stored stack's hidden values (:func:`given_hidden_values`) are what it finds."""
    defaults = defaults or {}
    found: dict[str, Any] = {}
    for name, schema in schemas.items():
        for value in (given.get(name), defaults.get(name),
                      schema.default if schema.has_default else None):
            if value is not None:
                found[name] = value
                break
    return found


def masked(schemas: Mapping[str, ParameterSchema], values: Mapping[str, Any]
           ) -> dict[str, Any]:
    """``values`` with every hidden parameter replaced by the mask."""
    return {k: MASK if k in schemas and schemas[k].hidden else v for k, v in values.items()}


def hidden_values(schemas: Mapping[str, ParameterSchema], values: Mapping[str, Any]
                  ) -> tuple[str, ...]:
    """The text of every hidden parameter value, longest first, for :func:`redact`: the
    whole value, and each string or number inside a json or comma_delimited_list one,
    which ``get_param`` with a path, ``list_join`` or a property given the value reach
    alone."""
    return _secrets(schemas, values)


class _Leaf(str):
    """A string or number inside a hidden json or list value. A short one ("1", "on")
    is masked only where it stands alone (``engine.logs.mask_secret``): a json value
    holds many, and masking them inside every word would leave nothing readable. A whole
    hidden value is masked everywhere, however short."""

    __slots__ = ()


def _secrets(schemas: Mapping[str, ParameterSchema], *readings: Mapping[str, Any]
             ) -> tuple[str, ...]:
    """:func:`hidden_values` of one or more readings of the same parameters. The whole
    values are gathered first, so that a leaf equal to a whole value is masked as one."""
    hidden = [reading[name] for reading in readings for name, schema in schemas.items()
              if schema.hidden and reading.get(name) is not None]
    found: set[str] = {str(value) for value in hidden}
    for value in hidden:
        if isinstance(value, Mapping | list):
            found.update(_Leaf(leaf) for leaf in _leaves(value))
    found.discard("")
    return tuple(sorted(found, key=len, reverse=True))


def _leaves(value: Any) -> Iterator[str]:
    """The text of each string and number in a json value (not its keys, which name its
    parts, nor a boolean or null, which every value holds)."""
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        yield str(value)


def redact(value: Any, secrets: tuple[str, ...]) -> Any:
    """``value`` with every occurrence of a hidden value masked, however it was embedded
    (``str_replace`` and ``list_join`` can carry a secret into any string); a short
    leaf of a json or list value where it stands alone (``_Leaf``)."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = (mask_secret(value, secret) if isinstance(secret, _Leaf)
                     else value.replace(secret, MASK))
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        # A hidden number passed through get_param stays a number.
        return MASK if str(value) in secrets else value
    if isinstance(value, Mapping):
        return {k: redact(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v, secrets) for v in value]
    return value


def given_hidden_values(schemas: Mapping[str, ParameterSchema], given: Mapping[str, Any],
                        defaults: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """:func:`hidden_values` of the values a stack takes from what it was given, as they
    were stored (:func:`raw_values`: ``given``, else the environment's ``defaults``, else
    the template's default): the stored text and, converted, the leaves ``get_param``
    hands on. For code that must mask without building the IR
    (``engine.template.stored_parameters``)."""
    raw = raw_values(schemas, given, defaults)
    # Stored as given: a json or comma_delimited_list value is text until converted.
    typed = {name: _typed_or_none(schemas[name], value) for name, value in raw.items()
             if schemas[name].hidden}
    return _secrets(schemas, raw, typed)


def _typed_or_none(schema: ParameterSchema, value: Any) -> Any:
    try:
        return schema.convert(value)
    except KilnError:  # it was accepted once; the raw text is a secret all the same
        return None
