"""A stack's outputs resolved from its stored state: the one place that evaluates them.

Heat resolves a stack's outputs whenever it shows them (a stack's show unless
``resolve_outputs=false``, ``GET …/outputs/{key}``), so an output whose resource learns
its value later (``OS::Heat::TestResource``'s ``attr_wait_secs``, a deployment's
signalled result) shows it then. Kiln does the same: the API resolves them on each such
read (``engine.services.stack_reads``), and the worker resolves them once more when an
operation ends and stores them (``stacks.outputs``: what a parent's nested-stack
resource copies, and what a stack whose template no longer builds still shows).

Every resource is built from its row on a :class:`ReadOnlyRuntime`, as its attributes
are read for the resource views: an output never changes a resource nor calls a
backend. Each output that fails carries ``output_error`` (Heat's words: its value is
null), hidden parameter values masked in both; the outputs of one stack are one
evaluation of the budget (``engine.budget``), so an output that blows it is an
``output_error``, not a failed request.

:class:`OutputCache` keeps what the API resolved, keyed by what it was resolved from
(specs/live-outputs.rst says why that is safe across processes).
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import weakref
from collections.abc import Callable, Collection, Mapping
from typing import Any, NotRequired, Protocol, TypedDict

import cachetools

from engine import budget
from engine.clock import Clock
from engine.errors import Unavailable
from engine.ir.model import ResolvedStack
from engine.resources.base import Resource
from engine.resources.nested import ChildStackResource
from engine.resources.read_only import ReadOnlyRuntime, RowFacts, StackFacts
from engine.resources.registry import ResourceTypeRegistry
from engine.resources.scope import InstanceScope
from engine.template.parameters import hidden_values, redact


class StackOutput(TypedDict):
    """One output as Heat shows it (``format_stack_output``) and ``stacks.outputs``
    stores it."""

    output_key: str
    description: str
    output_value: Any  # None when it failed
    output_error: NotRequired[str]  # why it failed, hidden values masked


class OutputRow(RowFacts, Protocol):
    """What an output reads of a resource's row (a ``Resource`` row satisfies it)."""

    @property
    def type(self) -> str: ...
    @property
    def physical_id(self) -> str | None: ...
    @property
    def properties(self) -> Any: ...
    @property
    def data(self) -> Mapping[str, Any] | None: ...


@dataclasses.dataclass(frozen=True)
class Resolved:
    outputs: list[StackOutput]
    #: Whether the values may change with nothing stored changing: the evaluation read
    #: the clock (an attribute that shows after a while), its own or a nested stack's
    #: read through it. Not an evaluation that ran out of time: the cache keeps that for
    #: its age alone, or an output past the budget would cost the whole budget on every
    #: read (the console polls every 2 s).
    volatile: bool


#: A nested stack's outputs (by its id) resolved now, as its parent's resource reads
#: them; None when there is no such stack to read (the resource keeps its copy).
ChildOutputs = Callable[[str], Resolved | None]


# NOTE: the template functions are imported where outputs are resolved, not
# with this module: they cost some 60 ms of CPU (yaql among them), which every
# kiln-manage command would pay for the services it wires and never calls.


def output_resources(ir: ResolvedStack, keys: Collection[str] | None = None
                     ) -> frozenset[str]:
    """The resources the stack's outputs (those of ``keys`` when given) read: the only
    rows resolving them needs."""
    from engine.template.functions import resource_dependencies  # see the NOTE above

    found: set[str] = set()
    for key, output in ir.outputs.items():
        if keys is None or key in keys:
            found |= resource_dependencies(output.value)
    return frozenset(found)


# One evaluation: the outputs share one time budget (engine.budget).
@budget.within_evaluation
def resolve_outputs(ir: ResolvedStack, stack: StackFacts, rows: Mapping[str, OutputRow],
                    registry: ResourceTypeRegistry, clock: Clock, *,
                    keys: Collection[str] | None = None,
                    children: ChildOutputs | None = None) -> Resolved:
    """Every output of ``ir`` (those of ``keys`` when given, as Heat's ``show_output``
    resolves one alone) resolved against ``rows`` (by resource name; a resource without
    one, or never created, reads as null, as in Heat). ``children``, when given, answers
    a nested-stack resource's outputs live instead of the copy its row holds."""
    from engine.template.functions import resolve  # see the NOTE above

    scope = _StoredRows(ir.parameters, stack, rows, registry, _WatchedClock(clock), children)
    secrets = hidden_values(ir.parameter_schemas, ir.parameters)
    outputs: list[StackOutput] = []
    for name, output in ir.outputs.items():
        if keys is not None and name not in keys:
            continue
        item: StackOutput = {"output_key": name, "description": output.description,
                             "output_value": None}
        try:
            item["output_value"] = _as_json(redact(resolve(output.value, scope), secrets))
        except Unavailable:
            raise  # the database failed reading a nested stack: the read fails (503)
        except Exception as exc:  # noqa: BLE001 -- Heat shows a failing output's error
            item["output_error"] = redact(str(exc), secrets)
        outputs.append(item)
    return Resolved(outputs, scope.clock.read or scope.volatile_children)


def nested_stack_id(type_name: str, physical_id: str | None,
                    registry: ResourceTypeRegistry) -> str | None:
    """The id of the nested stack a resource of this type and physical id is (a
    template resource, ``OS::Heat::Stack``, a group), whose outputs its attributes
    read; None for any other resource."""
    cls = registry.for_stored(type_name)
    if physical_id is None or cls is None or not issubclass(cls, ChildStackResource):
        return None
    return physical_id


def _as_json(value: Any) -> Any:
    """``value`` when JSON holds it (the API shows it, ``stacks.outputs`` stores it);
    else a ValueError: an attribute that gives another kind of value (a plugin's set)
    makes that output's error, not a failed read or a failed operation."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"The output value cannot be represented as JSON: {exc}") from None
    return value


class _WatchedClock:
    """The clock the resources read, noting whether any did."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.read = False

    def __call__(self) -> Any:
        self.read = True
        return self._clock()


class _StoredRows(InstanceScope):
    """Answers get_param, get_resource and get_attr from stored rows, read only; each
    resource is built once however many outputs read it."""

    def __init__(self, parameters: Mapping[str, Any], stack: StackFacts,
                 rows: Mapping[str, OutputRow], registry: ResourceTypeRegistry,
                 clock: _WatchedClock, children: ChildOutputs | None) -> None:
        self.clock = clock
        self.volatile_children = False
        self._parameters = parameters
        self._stack = stack
        self._rows = rows
        self._registry = registry
        self._children = children
        self._built: dict[str, Resource | None] = {}

    def param(self, name: str) -> Any:
        return self._parameters[name]

    def _instance(self, name: str) -> Resource | None:
        if name not in self._built:
            self._built[name] = self._build(name)
        return self._built[name]

    def _build(self, name: str) -> Resource | None:
        row = self._rows.get(name)
        if row is None or row.properties is None:
            return None  # never created: Heat resolves such references to null
        cls = self._registry.get(row.type)  # uninstalled since: that output's error
        data = dict(row.data or {})
        child = nested_stack_id(row.type, row.physical_id, self._registry)
        live = None if self._children is None or child is None else self._children(child)
        if live is not None:
            # A failed output reads as null, as Heat's StackResource.get_output.
            data["outputs"] = {o["output_key"]: o["output_value"] for o in live.outputs}
            self.volatile_children = self.volatile_children or live.volatile
        return cls(name, row.properties, ReadOnlyRuntime(self._stack, row, self.clock),
                   physical_id=row.physical_id, data=data)


# --- the API's cache -----------------------------------------------------------------

#: How long a resolved value is kept at most, whatever it was resolved from: a bound on
#: what an attribute might read besides its row and the runtime's clock (a plugin's own
#: clock), which no key can see.
MAX_AGE_SECONDS = 5.0
#: What the kept outputs may come to in all, in budget units (about characters of JSON).
CACHE_SIZE = 8_000_000


#: IRs whose outputs' resources are remembered (as many as ``StoredIrs`` keeps).
NAMES_CACHE_SIZE = 256


@dataclasses.dataclass(frozen=True)
class _Entry:
    # The very IR they were resolved from, weakly: the same object is the same
    # definition, and a collected one can never be mistaken for another.
    ir: weakref.ref[ResolvedStack]
    outputs: list[StackOutput]
    size: int


class OutputCache:
    """Outputs the API resolved, by stack and a digest of the rows they were resolved
    from; an entry counts only for the IR it was resolved from (the same object, so the
    same definition). Thread-safe. Volatile results (:class:`Resolved`) are not kept."""

    def __init__(self, *, max_age: float = MAX_AGE_SECONDS, size: int = CACHE_SIZE,
                 timer: Callable[[], float] = time.monotonic) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._entries: cachetools.TTLCache[tuple[str, str], _Entry] = cachetools.TTLCache(
            size, max_age, timer=timer, getsizeof=lambda entry: entry.size)
        self._names: cachetools.LRUCache[
            int, tuple[weakref.ref[ResolvedStack], dict[str | None, tuple[str, ...]]]
        ] = cachetools.LRUCache(NAMES_CACHE_SIZE)

    def resources(self, ir: ResolvedStack, key: str | None = None) -> tuple[str, ...]:
        """:func:`output_resources` of the IR's outputs (``key``'s alone when given), by
        name, remembered for the IR: walking the outputs cost a show as much as its
        rows' read."""
        with self._lock:
            known = self._names.get(id(ir))
            if known is None or known[0]() is not ir:
                known = self._names[id(ir)] = (weakref.ref(ir), {})
            names = known[1].get(key)
        if names is None:
            names = tuple(sorted(output_resources(ir, None if key is None else (key,))))
            with self._lock:
                known[1][key] = names
        return names

    def get(self, stack_id: str, ir: ResolvedStack, digest: str) -> list[StackOutput] | None:
        with self._lock:
            entry = self._entries.get((stack_id, digest))
        return entry.outputs if entry is not None and entry.ir() is ir else None

    def put(self, stack_id: str, ir: ResolvedStack, digest: str, resolved: Resolved) -> None:
        if resolved.volatile:
            return
        size = budget.value_size(resolved.outputs, self._size) + 1
        if size > self._size:
            return  # larger than the whole cache: resolved again next time
        with self._lock:
            self._entries[(stack_id, digest)] = _Entry(weakref.ref(ir), resolved.outputs,
                                                       size)
