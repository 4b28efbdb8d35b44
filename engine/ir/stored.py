"""The IR of a stored stack: built from the stack's stored definition, once, and shared.

The API's reads (parameters, resource descriptions, metadata), its update checks and the
worker (the pre-ops' views, the plan, the steps, the outputs) all need the IR of a stack
as stored. Building one parses and checks the whole template, so every IR built here is
kept in one bounded LRU cache; ``engine.bootstrap`` builds one :class:`StoredIrs` per
process, so in ``kiln-all`` the API and the worker share it, and an operation's pre-ops
and its plan get the same IR object.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import cachetools

from engine.errors import StackValidationFailed
from engine.ir.model import ResolvedStack
from engine.template.parse import document

if TYPE_CHECKING:
    from engine.ir.build import ConstraintLookup, TypeLookup

IR_CACHE_SIZE = 256
# Operations whose IR is found by their id, and stored definitions by a digest of their
# text; an entry is a key, not an IR, so only IR_CACHE_SIZE IRs are ever kept.
OPERATION_CACHE_SIZE = 4096
STORED_TEXT_CACHE_SIZE = 4096

# (stack id, name, tenant id, digest of the definition); see _key.
Key = tuple[str, str, str, str]


class StoredStack(Protocol):
    """What an IR is built from: a stack's identity and its definition (a ``Stack`` row
    and the lifecycle plugins' ``Redefined`` both satisfy it; the plugins'
    ``StackFacts`` adds the stack's state to it)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def tenant_id(self) -> str: ...
    @property
    def template(self) -> Any: ...
    @property
    def parameters(self) -> Any: ...
    @property
    def environment(self) -> Any: ...
    @property
    def files(self) -> Any: ...
    @property
    def facade(self) -> Any: ...


class Redefinition(NamedTuple):
    """The definition a stack takes from an update's payload (its ``target``, or for the
    plugins' view of the stack before the update its ``previous``)."""

    template: Any
    parameters: Any
    environment: Any
    files: Any


class StoredText(NamedTuple):
    """A stack's identity and its definition as the database holds it: each definition
    column's JSON text, None for a NULL (``engine.db.stack_rows.shown_stack``)."""

    id: str
    name: str
    tenant_id: str
    template: str | None
    parameters: str | None
    environment: str | None
    files: str | None
    facade: str | None


class _Decoded(NamedTuple):
    """A ``StoredText`` decoded, as the ORM would have loaded it: a ``StoredStack``."""

    id: str
    name: str
    tenant_id: str
    template: Any
    parameters: Any
    environment: Any
    files: Any
    facade: Any


def redefinition(definition: Mapping[str, Any], files: Any) -> Redefinition:
    """The values a stack takes from ``definition``, the one shape both the worker's plan
    (which stores them on the stack row) and the pre-ops' views (built before the plan)
    use, so both find one IR for it. ``files`` are the stack's own, kept when the
    definition has none: operations stored before files were recorded lack them. A null
    environment is an empty one."""
    return Redefinition(definition["template"], definition["parameters"],
                        definition.get("environment") or {}, definition.get("files", files))


class StoredIrs:
    """IRs of stored stacks, by definition. Thread-safe: the API serves from many threads
    and the worker from its operation threads."""

    def __init__(self, lookup: TypeLookup, constraints: ConstraintLookup,
                 size: int = IR_CACHE_SIZE) -> None:
        self._lookup = lookup
        self._constraints = constraints
        # Both guarded by the lock: cachetools' caches are not thread-safe.
        self._lock = threading.Lock()
        self._cache: cachetools.LRUCache[Key, ResolvedStack] = cachetools.LRUCache(size)
        self._operations: cachetools.LRUCache[str, Key] = cachetools.LRUCache(
            OPERATION_CACHE_SIZE)
        self._texts: cachetools.LRUCache[str, Key] = cachetools.LRUCache(
            STORED_TEXT_CACHE_SIZE)

    def of(self, stack: StoredStack) -> ResolvedStack:
        """The stack's IR. Raises what building it raises, such as StackValidationFailed
        for a type uninstalled since the stack was stored; a failure is not kept, so the
        next call tries again."""
        return self._of(stack, _key(stack))

    def for_operation(self, operation_id: str, stack: StoredStack) -> ResolvedStack:
        """The IR of the stack an operation runs on, once it is planned. From its plan to
        its end the stack's definition is fixed (one operation per stack at a time), so
        after the first call the IR is found by the operation's id without reading the
        definition: a worker's step loads the stack without its large columns, and would
        otherwise read and digest the whole template on every step."""
        with self._lock:
            key = self._operations.get(operation_id)
            cached = self._cache.get(key) if key is not None else None
        if cached is not None:
            return cached
        key = _key(stack)
        ir = self._of(stack, key)
        if key is not None:
            with self._lock:
                self._operations[operation_id] = key
        return ir

    def if_valid(self, stack: StoredStack) -> ResolvedStack | None:
        """The stack's IR, or None when it no longer validates (a type uninstalled since):
        reads show such a stack without its schema."""
        try:
            return self.of(stack)
        except StackValidationFailed:
            return None

    def if_valid_stored(self, stored: StoredText) -> ResolvedStack | None:
        """:meth:`if_valid` for a definition read as text: found by a digest of the text,
        so a stack's show neither decodes its template nor pickles it to find the IR it
        had before; decoded (as the ORM decodes it) only the first time."""
        digest = _text_digest(stored)
        cached = self._built_text(digest)
        if cached is not None:
            return cached
        decoded = _Decoded(stored.id, stored.name, stored.tenant_id,
                           *(None if text is None else json.loads(text)
                             for text in stored[3:]))
        key = _key(decoded)
        try:
            ir = self._of(decoded, key)
        except StackValidationFailed:
            return None
        if key is not None:
            with self._lock:
                self._texts[digest] = key
        return ir

    def built_stored(self, stored: StoredText) -> ResolvedStack | None:
        """What :meth:`if_valid_stored` gives when it was built already, else None (not
        built yet, or it does not validate): a reader holding a pooled connection builds
        no IR, which for a large template takes a while."""
        return self._built_text(_text_digest(stored))

    def _built_text(self, digest: str) -> ResolvedStack | None:
        with self._lock:
            key = self._texts.get(digest)
            return self._cache.get(key) if key is not None else None

    def _of(self, stack: StoredStack, key: Key | None) -> ResolvedStack:
        if key is not None:
            with self._lock:
                cached = self._cache.get(key)
            if cached is not None:
                return cached
        # Built outside the lock: a large template takes a while, and no other stack's
        # read should wait for it.
        ir = self._build(stack)
        if key is None:
            return ir
        with self._lock:
            # Two threads may have built it at once: both hand out the one kept first.
            return self._cache.setdefault(key, ir)

    def _build(self, stack: StoredStack) -> ResolvedStack:
        # Imported on the first build, not with this module: the template functions (yaql
        # among them) cost some 60 ms of CPU, which every kiln-manage command would pay,
        # and most build no IR.
        from engine.ir.build import build_from_document, pseudo_parameters

        # The stored object, not the text: it was validated with its lines when accepted,
        # and parsing JSON is far cheaper than parsing YAML.
        return build_from_document(document(stack.template), stack.parameters,
                                   pseudo_parameters(stack.id, stack.name, stack.tenant_id),
                                   self._lookup, files=stack.files,
                                   constraints=self._constraints, facade=stack.facade,
                                   environment=stack.environment)


def _text_digest(stored: StoredText) -> str:
    return hashlib.sha256(pickle.dumps(tuple(stored), protocol=5)).hexdigest()


def _key(stack: StoredStack) -> Key | None:
    """Everything the IR is built from: the pseudo parameters' id, name and tenant, and a
    digest of the definition (template, parameters, environment, files and, for a nested
    stack, the facade). None when the definition cannot be serialised (not a stored one):
    such a stack is built every time.

    Not the stack's ``updated_at``: the definition does not always change with it. An
    update request stores the new files at once but the new template only when a worker
    plans the update (``OperationDriver._plan``), and each side writes ``updated_at`` from
    its own clock, so two definitions may share one time (as they do under a test clock).
    Pickled rather than JSON-encoded because a pickle loads back to what was dumped, so
    one digest is never two definitions (JSON writes a key 1 and a key "1" alike)."""
    definition = (stack.template, stack.parameters, stack.environment, stack.files,
                  stack.facade)
    try:
        data = pickle.dumps(definition, protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None
    return stack.id, stack.name, stack.tenant_id, hashlib.sha256(data).hexdigest()
