"""Property and attribute schemas and their constraints: pure data and validation.

Resource plugins declare ``properties_schema`` and ``attributes_schema`` with these classes;
template parameters reuse the same constraints. ``Property.coerce`` turns a resolved value
into the declared type or raises ``StackValidationFailed`` naming the path, so the caller
only has to add the template location.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from engine import budget
from engine.errors import BadRequest, Location, StackValidationFailed

STRING, NUMBER, INTEGER, BOOLEAN, MAP, LIST, ANY = (
    "string", "number", "integer", "boolean", "map", "list", "any",
)
TYPES = (STRING, NUMBER, INTEGER, BOOLEAN, MAP, LIST, ANY)


class Constraint:
    """A check on an already-typed value; ``describe`` gives the Heat wire form."""

    def check(self, value: Any) -> str | None:
        """Return why ``value`` fails, or None."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class Range(Constraint):
    min: float | None = None
    max: float | None = None

    def check(self, value: Any) -> str | None:
        if self.min is not None and value < self.min:
            return f"{value} is out of range (min: {self.min}, max: {self.max})."
        if self.max is not None and value > self.max:
            return f"{value} is out of range (min: {self.min}, max: {self.max})."
        return None

    def describe(self) -> dict[str, Any]:
        return {"range": _bounds(self.min, self.max)}


@dataclasses.dataclass(frozen=True)
class Length(Constraint):
    min: int | None = None
    max: int | None = None

    def check(self, value: Any) -> str | None:
        size = len(value)
        if (self.min is not None and size < self.min) or (
            self.max is not None and size > self.max
        ):
            return f"length ({size}) is out of range (min: {self.min}, max: {self.max})."
        return None

    def describe(self) -> dict[str, Any]:
        return {"length": _bounds(self.min, self.max)}


@dataclasses.dataclass(frozen=True)
class AllowedValues(Constraint):
    values: tuple[Any, ...]

    def check(self, value: Any, allowed: tuple[Any, ...] | None = None) -> str | None:
        """``allowed`` replaces :attr:`values` where the caller compares them in another
        form (a parameter reads them as its type)."""
        allowed = self.values if allowed is None else allowed
        # NOTE: a list is allowed when every item is, as in Heat (comma_delimited_list).
        if all(item in allowed for item in (value if isinstance(value, list) else [value])):
            return None
        return self.refusal(value)

    def refusal(self, value: Any) -> str:
        """Heat's words: the whole value and the allowed ones, as JSON."""
        allowed = ", ".join(json.dumps(v, default=str) for v in self.values)
        return f"{json.dumps(value, default=str)} is not an allowed value [{allowed}]"

    def describe(self) -> dict[str, Any]:
        return {"allowed_values": list(self.values)}


@dataclasses.dataclass(frozen=True)
class AllowedPattern(Constraint):
    """Heat's test: the pattern matches at the start and the match ends at the end. A
    match that takes too long raises ``EvaluationTooLong`` (``engine.budget``)."""

    pattern: str
    # Where the template states it, for the error when a match takes too long.
    location: Location | None = dataclasses.field(default=None, compare=False)

    def check(self, value: Any) -> str | None:
        if budget.match_pattern(self.pattern, str(value), self.location):
            return None
        return f'"{value}" does not match pattern "{self.pattern}"'

    def describe(self) -> dict[str, Any]:
        return {"allowed_pattern": self.pattern}


@dataclasses.dataclass(frozen=True)
class Modulo(Constraint):
    """The value is ``offset`` more than a multiple of ``step`` (Heat, 2017-02-24 on)."""

    step: int
    offset: int

    def check(self, value: Any) -> str | None:
        if value % self.step == self.offset:
            return None
        return f"{value} is not a multiple of {self.step} with an offset of {self.offset}"

    def describe(self) -> dict[str, Any]:
        return {"modulo": {"step": self.step, "offset": self.offset}}


@dataclasses.dataclass(frozen=True)
class ResourceLimit(Constraint):
    """A count of resources (an integer, or a list with one item per resource) no larger
    than a stack may hold (``[api] max_resources_per_stack``, read from the evaluation
    budget), for types that make one resource per item, such as groups: refused before
    any member is built. Not part of Heat's wire form."""

    def check(self, value: Any) -> str | None:
        limit = budget.limits().max_resources_per_stack
        size = len(value) if isinstance(value, (list, tuple, Mapping)) else value
        if isinstance(size, int) and size > limit:
            return (f"Maximum resources per stack exceeded: {size} resources, more than "
                    f"{limit}.")
        return None

    def describe(self) -> dict[str, Any]:
        return {}


class CustomCheck:
    """Base of a custom constraint: a named check that plugins register under the
    stevedore namespace ``kiln.constraints`` (``ip_addr = mypkg.checks:IPAddress``) and
    templates name with ``custom_constraint: ip_addr`` on a parameter or property.

    ``check`` returns why the value is refused, or None. It must be quick and must not
    call a backend: it runs in the API for every request that names it."""

    def check(self, value: Any) -> str | None:
        raise NotImplementedError

    @staticmethod
    def refused(value: Any, reason: str | None = None) -> str:
        """Heat's wording for a refusal, with the check's reason when it has one."""
        if reason is None:
            return f"Error validating value '{value}'"
        return f"Error validating value '{value}': {reason}"


@dataclasses.dataclass(frozen=True)
class Custom(Constraint):
    """``custom_constraint: <name>``. Parsed templates hold it unbound (``checker`` None,
    checking nothing); ``engine.ir.build`` binds the registered check before any value
    is checked, and refuses a name nobody registered."""

    name: str
    checker: CustomCheck | None = dataclasses.field(default=None, compare=False)

    def check(self, value: Any) -> str | None:
        return self.checker.check(value) if self.checker is not None else None

    def describe(self) -> dict[str, Any]:
        return {"custom_constraint": self.name}


def bind_constraints(constraints: tuple[Constraint, ...],
                     lookup: Callable[[str], CustomCheck]) -> tuple[Constraint, ...]:
    """``constraints`` with every :class:`Custom` bound to ``lookup(name)``, the
    registered check; ``lookup`` raises KeyError for a name nobody registered."""
    return tuple(Custom(c.name, lookup(c.name)) if isinstance(c, Custom) else c
                 for c in constraints)


def names_custom(schema: Mapping[str, Property]) -> bool:
    """Whether a custom constraint appears anywhere in ``schema``, nested ones included."""
    return any(_property_names_custom(prop) for prop in schema.values())


def bind_schema(schema: Mapping[str, Property],
                lookup: Callable[[str], CustomCheck]) -> dict[str, Property]:
    """A copy of a properties schema with its custom constraints bound (see
    :func:`bind_constraints`), at every depth."""
    return {name: _bind_property(prop, lookup) for name, prop in schema.items()}


def _property_names_custom(prop: Property) -> bool:
    if any(isinstance(c, Custom) for c in prop.constraints):
        return True
    if isinstance(prop.schema, Property):
        return _property_names_custom(prop.schema)
    return isinstance(prop.schema, Mapping) and names_custom(prop.schema)


def _bind_property(prop: Property, lookup: Callable[[str], CustomCheck]) -> Property:
    inner: Mapping[str, Property] | Property | None = prop.schema
    if isinstance(inner, Property):
        inner = _bind_property(inner, lookup)
    elif isinstance(inner, Mapping):
        inner = bind_schema(inner, lookup)
    return dataclasses.replace(prop, constraints=bind_constraints(prop.constraints, lookup),
                               schema=inner)


def _bounds(low: float | None, high: float | None) -> dict[str, Any]:
    return {k: v for k, v in (("min", low), ("max", high)) if v is not None}


@dataclasses.dataclass(frozen=True)
class Property:
    """One property of a resource type."""

    type: str
    description: str = ""
    default: Any = None
    required: bool = False
    update_allowed: bool = False
    constraints: tuple[Constraint, ...] = ()
    schema: Mapping[str, Property] | Property | None = None

    def coerce(self, value: Any, path: str) -> Any:
        typed = _coerce_type(self.type, value, path)
        if isinstance(self.schema, Property) and self.type == LIST:
            typed = [self.schema.coerce(item, f"{path}[{i}]") for i, item in enumerate(typed)]
        elif isinstance(self.schema, Mapping):
            if self.type == LIST:
                typed = [coerce_properties(self.schema, item, f"{path}[{i}]")
                         for i, item in enumerate(typed)]
            elif self.type == MAP:
                typed = coerce_properties(self.schema, typed, path)
        for constraint in self.constraints:
            reason = constraint.check(typed)
            if reason:
                raise StackValidationFailed(reason=f"Property error: {path}: {reason}")
        return typed

    def describe(self) -> dict[str, Any]:
        """Heat's wire form (``GET /resource_types/{type}``), keys in Heat's order: an
        empty description, a null default and no constraints are left out, as Heat leaves
        out what a schema does not set; a list's item schema is keyed ``"*"``."""
        doc: dict[str, Any] = {"type": self.type}
        if self.description:
            doc["description"] = self.description
        if self.default is not None:
            doc["default"] = self.default
        if isinstance(self.schema, Property):
            doc["schema"] = {"*": self.schema.describe()}
        elif isinstance(self.schema, Mapping):
            fields = {k: v.describe() for k, v in self.schema.items()}
            # NOTE: a list of maps given as the maps' fields is Heat's list whose item is
            # a map schema, and is described as that.
            doc["schema"] = ({"*": {"type": MAP, "schema": fields, **_NESTED_FLAGS}}
                             if self.type == LIST else fields)
        doc["required"] = self.required
        # A constraint Heat does not have describes itself as nothing.
        described = [d for d in (c.describe() for c in self.constraints) if d]
        if described:
            doc["constraints"] = described
        doc["update_allowed"] = self.update_allowed
        # Kiln has no immutable properties; Heat's clients read the key all the same.
        doc["immutable"] = False
        return doc


# What Heat gives an item schema nobody set flags on.
_NESTED_FLAGS: Mapping[str, bool] = {"required": False, "update_allowed": False,
                                     "immutable": False}


@dataclasses.dataclass(frozen=True)
class Attribute:
    description: str = ""
    type: str | None = None

    def describe(self) -> dict[str, Any]:
        """Heat's wire form: ``description`` and ``type``, each only when set."""
        doc: dict[str, Any] = {}
        if self.description:
            doc["description"] = self.description
        if self.type:
            doc["type"] = self.type
        return doc


UNKNOWN, SUPPORTED, DEPRECATED, UNSUPPORTED, HIDDEN = (
    "UNKNOWN", "SUPPORTED", "DEPRECATED", "UNSUPPORTED", "HIDDEN",
)
#: Every support status Heat knows, in Heat's order (its error messages list them so).
SUPPORT_STATUSES = (UNKNOWN, SUPPORTED, DEPRECATED, UNSUPPORTED, HIDDEN)


@dataclasses.dataclass(frozen=True)
class SupportStatus:
    """Heat's support status of a resource type: since which Heat ``version`` it has had
    ``status``, why (``message``), and the status it had before (``previous_status``),
    e.g. a type DEPRECATED in 9.0.0 that was SUPPORTED since 5.0.0."""

    status: str = SUPPORTED
    version: str | None = None
    message: str | None = None
    previous_status: SupportStatus | None = None

    def describe(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message, "version": self.version,
                "previous_status": (self.previous_status.describe()
                                    if self.previous_status is not None else None)}


def coerce_properties(
    schema: Mapping[str, Property], values: Any, path: str, *, allow_unknown: bool = False
) -> dict[str, Any]:
    """Validate and type ``values`` against ``schema``; defaults fill what is missing."""
    # NOTE: the worker passes an empty path and pins the location on afterwards.
    where = f"{path}: " if path else ""
    if values is None:
        values = {}
    if not isinstance(values, Mapping):
        raise StackValidationFailed(reason=f"Property error: {where}must be a map")
    unknown = sorted(set(values) - set(schema))
    if unknown and not allow_unknown:
        raise StackValidationFailed(
            reason=f"Property error: {where}Unknown Property {unknown[0]}"
        )
    result: dict[str, Any] = {}
    for name, prop in schema.items():
        value = values.get(name)
        if value is None:
            if prop.required:
                raise StackValidationFailed(
                    reason=f"Property error: {where}Property {name} not assigned"
                )
            # NOTE: a copy, so no resource can mutate the default every other one shares.
            result[name] = copy.deepcopy(prop.default)
            continue
        result[name] = prop.coerce(value, f"{path}.{name}" if path else name)
    if allow_unknown:
        result.update({k: values[k] for k in unknown})
    return result


def _coerce_type(kind: str, value: Any, path: str) -> Any:
    def fail(expected: str) -> StackValidationFailed:
        return StackValidationFailed(
            reason=f"Property error: {path}: Value '{value}' is not {expected}"
        )

    if kind == ANY:
        return value
    if kind == STRING:
        if isinstance(value, (Mapping, list)):
            raise fail("a string")
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)
    if kind in (NUMBER, INTEGER):
        return to_number(value, integer=kind == INTEGER, on_error=fail)
    if kind == BOOLEAN:
        return to_boolean(value, on_error=fail)
    if kind == MAP:
        if isinstance(value, str):
            try:
                value = load_json(value)
            except ValueError:
                raise fail("a map") from None
        if not isinstance(value, Mapping):
            raise fail("a map")
        return dict(value)
    if kind == LIST:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",")] if value else []
        if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
            return list(value)
        raise fail("a list")
    raise StackValidationFailed(reason=f"{path}: unknown schema type {kind}")


def to_number(value: Any, *, integer: bool = False, on_error: Any) -> int | float:
    if isinstance(value, bool):
        raise on_error("an integer" if integer else "a number")
    if isinstance(value, (int, float)):
        number: int | float = value
    else:
        try:
            number = int(str(value))
        except ValueError:
            try:
                number = float(str(value))
            except ValueError:
                raise on_error("an integer" if integer else "a number") from None
    if isinstance(number, float) and not math.isfinite(number):
        # "1e400" and "nan" read as floats no database column or JSON document holds.
        raise on_error("an integer" if integer else "a finite number")
    if integer:
        if isinstance(number, float) and not number.is_integer():
            raise on_error("an integer")
        return int(number)
    return number


def to_boolean(value: Any, *, on_error: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1", "t", "y"):
        return True
    if text in ("false", "no", "off", "0", "f", "n"):
        return False
    raise on_error("a boolean")


# --- Heat's request values ------------------------------------------------------------

#: Heat's longest tag, in characters.
MAX_TAG_CHARS = 80


def extract_bool(value: Any, name: str) -> bool:
    """Heat's ``extract_bool``, for bodies and query strings alike: ``true`` or ``false``
    in any case, as text or a JSON boolean; anything else is a 400 naming ``name``."""
    text = str(value).lower()
    if text not in ("true", "false"):
        raise BadRequest(reason=f'Unrecognized value "{value}" for "{name}", acceptable '
                                "values are: true, false.")
    return text == "true"


def extract_int(value: Any, name: str, maximum: int) -> int:
    """Heat's ``extract_int``, for bodies and query strings alike: a value whose text is
    an integer's (``5``, ``"5"``; not ``5.0``, ``" 5"``, ``1e3`` or ``true``), at least 0.
    Kiln adds ``maximum``, what the database can hold or compare."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not _int_like(value):
        raise BadRequest(reason=f"Only integer is acceptable by '{name}'.")
    number = int(value)
    if number < 0:
        raise BadRequest(reason=f"Value '{value}' is invalid for '{name}' which only accepts "
                                "non-negative integer.")
    if number > maximum:
        raise BadRequest(reason=f"Value '{value}' is invalid for '{name}' which only accepts "
                                f"integers up to {maximum}.")
    return number


def _int_like(value: int | str) -> bool:
    """oslo's ``is_int_like``: the text of the integer the value reads as is the value's."""
    if isinstance(value, int):
        return True
    try:
        return str(int(value)) == value
    except ValueError:  # not a number, or past int()'s 4300 digits
        return False


def check_tags(tags: Iterable[str]) -> None:
    """Heat's ``extract_tags`` rule: no tag longer than ``MAX_TAG_CHARS``. How a list of
    tags is split (and whether trimmed) is the caller's."""
    for tag in tags:
        if len(tag) > MAX_TAG_CHARS:
            raise BadRequest(reason=f'Invalid tag, "{tag}" is longer than {MAX_TAG_CHARS} '
                                    "characters")


# --- JSON text ------------------------------------------------------------------------

#: How deep a value read from JSON text may nest: a template's own limit
#: (``engine.template.parse.MAX_DEPTH`` is this one), so that a json parameter, a map
#: property given as text or ``Fn::Select``'s text is no deeper than a template, and every
#: walk of the values it reaches stays far from Python's recursion limit.
MAX_DEPTH = 64
# PostgreSQL's text and jsonb refuse NUL; an unpaired surrogate cannot be written as UTF-8.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def load_json(text: str) -> Any:
    """JSON text from a tenant as a value Kiln can store and walk: a ``ValueError``
    (as for text that is not JSON) for nesting past ``MAX_DEPTH``, ``NaN`` and the
    infinities (JSON has none; Python's decoder takes them), and text with a NUL or an
    unpaired surrogate. Python's decoder recurses once per level: thousands of brackets
    are its ``RecursionError``, read here as too deep."""
    try:
        value = strict_loads(text)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    for item, depth in _levels(value):
        if depth > MAX_DEPTH:
            raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, str) and _UNSTORABLE.search(item):
            raise ValueError("a NUL character or an unpaired surrogate cannot be stored")
    return value


def nested_deeper(value: Any, limit: int) -> bool:
    """True if ``value`` (plain data) has anything more than ``limit`` levels down."""
    return any(depth > limit for _, depth in _levels(value))


def _levels(value: Any) -> Iterator[tuple[Any, int]]:
    """Every value in ``value``, map keys included, with its depth (the root's is 0).
    Iterative: this is the walk that makes the recursive ones safe."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        yield item, depth
        if isinstance(item, Mapping):
            pending.extend((key, depth + 1) for key in item)
            pending.extend((inner, depth + 1) for inner in item.values())
        elif isinstance(item, (list, tuple)):
            pending.extend((inner, depth + 1) for inner in item)


def strict_loads(text: str | bytes) -> Any:
    """``json.loads`` of JSON as it is: Python's decoder also takes NaN and Infinity,
    and reads a float past its range as infinity, none of which JSON has nor any
    database column of Kiln's holds (PostgreSQL's jsonb refuses them): a ``ValueError``
    names each. The request bodies and the JSON text in tenants' values."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is out of range for a number")
    return number


# --- software config inputs and outputs (Heat's software_config_io) ----------------------
#
# One owner for both writers of software configs: the config resource types declare
# their ``inputs`` and ``outputs`` properties with these schemas, and
# ``POST /software_configs`` checks its body with them (engine/services/software_configs.py).

#: Heat's software-config I/O types: template parameter types, CFN spelling.
IO_TYPES = ("String", "Number", "CommaDelimitedList", "Json", "Boolean")

CONFIG_INPUT_SCHEMA: Mapping[str, Property] = {
    "name": Property(STRING, "Name of the input.", required=True),
    "description": Property(STRING, "Description of the input."),
    "type": Property(STRING, "Type of the value of the input.", default="String",
                     constraints=(AllowedValues(IO_TYPES),)),
    "default": Property(ANY, "Default value for the input if none is specified."),
    "replace_on_change": Property(
        BOOLEAN, "Replace the deployment instead of updating it when the input value "
                 "changes.", default=False),
}

CONFIG_OUTPUT_SCHEMA: Mapping[str, Property] = {
    "name": Property(STRING, "Name of the output.", required=True),
    "description": Property(STRING, "Description of the output."),
    "type": Property(STRING, "Type of the value of the output.", default="String",
                     constraints=(AllowedValues(IO_TYPES),)),
    "error_output": Property(
        BOOLEAN, "Denotes that the deployment is in an error state if this output has a "
                 "value.", default=False),
}


def config_input_record(item: Mapping[str, Any], path: str = "default") -> dict[str, Any]:
    """A typed input (``CONFIG_INPUT_SCHEMA``) as Heat persists it: unset keys left out,
    ``replace_on_change`` only when true, the default converted to the input's type."""
    record = {k: v for k, v in item.items() if v is not None and k != "replace_on_change"}
    if "default" in record:
        record["default"] = typed_config_default(item, path)
    if item.get("replace_on_change"):
        record["replace_on_change"] = True
    return record


def config_output_record(item: Mapping[str, Any]) -> dict[str, Any]:
    """A typed output (``CONFIG_OUTPUT_SCHEMA``) as Heat persists it: unset keys left out."""
    return {k: v for k, v in item.items() if v is not None}


def config_io_records(items: Any, inputs: bool, path: str) -> list[dict[str, Any]]:
    """A request's ``inputs`` (or ``outputs``) checked and typed as Heat's config API
    takes them (none given: none), each item in its persisted form."""
    if items is None:
        return []
    if not isinstance(items, list):
        raise BadRequest(reason="Software Config I/O Schema must be in a list")
    if not all(isinstance(item, Mapping) for item in items):
        raise BadRequest(reason="Software Config I/O Schema must be a dict")
    schema = CONFIG_INPUT_SCHEMA if inputs else CONFIG_OUTPUT_SCHEMA
    records = []
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        # An input may carry its value (a derived config's do), kept as given.
        fields = {k: v for k, v in item.items() if not (inputs and k == "value")}
        typed = coerce_properties(schema, fields, where)
        if not inputs:
            records.append(config_output_record(typed))
            continue
        record = config_input_record(typed, f"{where}.default")
        if "value" in item:
            record["value"] = item["value"]
        records.append(record)
    return records


def typed_config_default(item: Mapping[str, Any], path: str) -> Any:
    """An input's default converted to the input's type; raises when it cannot be."""
    value, kind = item.get("default"), item.get("type") or "String"
    # NOTE: Heat once typed every default as a string, and still lets "" through for any
    # type so that old configs keep working.
    if value is None or (value == "" and kind != "String"):
        return value
    if kind == "String":
        return Property(STRING).coerce(value, path)
    if kind == "Number":
        return Property(NUMBER).coerce(value, path)
    if kind == "Boolean":
        return Property(BOOLEAN).coerce(value, path)
    if kind == "CommaDelimitedList":
        # Heat splits on commas and keeps the spaces.
        if isinstance(value, str):
            return value.split(",")
        if isinstance(value, Sequence):
            return list(value)
        raise StackValidationFailed(
            reason=f"Property error: {path}: Value '{value}' is not a list")
    # Json: a map, or a string or list kept as JSON text, as Heat converts them.
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        return json.dumps(value)
    raise StackValidationFailed(reason=f"Property error: {path}: Value '{value}' is not a map")
