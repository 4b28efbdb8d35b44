"""Requests on one resource of a stack: its metadata, mark-unhealthy, and signals.

Mark-unhealthy changes only the resource row (Heat's ``CHECK_FAILED`` and back to
``CHECK_COMPLETE``) and records an event; the next update replaces an unhealthy resource.
A signal is handed to the resource type's ``handle_signal`` and what it returns is
inserted into ``resource_signals`` with a ``SIGNAL`` event; the resource row is never
written, so a worker busy with the resource loses nothing (``engine.db.signals``). A
signal whose body holds ``unset_hook`` clears a breakpoint instead, whatever the type
(``engine.db.hooks``).
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from engine import reasons
from engine.clock import Clock
from engine.db import event_rows, hooks, signals, transitions
from engine.db.leases import wake_step
from engine.db.models import Resource, Stack
from engine.db.session import DbSession
from engine.errors import (
    BadRequest,
    InvalidBreakPointHook,
    KilnError,
    NotSupported,
    PhysicalResourceIDAmbiguity,
    ResourceActionNotSupported,
    ResourceNotAvailable,
    ResourceNotFound,
)
from engine.ir.build import StaticScope
from engine.resources.base import Signal
from engine.resources.read_only import ReadOnlyRuntime
from engine.resources.registry import ResourceTypeRegistry
from engine.schema import extract_bool
from engine.template.functions import Deferred, ParseContext, parse_value, resolve
from engine.template.parameters import redact
from engine.template.parse import from_data
from engine.template.versions import HOT_KEY, find_hot_version
from engine.vocabulary import Action, Hook, Status

MARK_UNHEALTHY = "mark_unhealthy"
STATUS_REASON = "resource_status_reason"
# Actions during which a resource refuses any signal, as in Heat.
NO_SIGNAL_ACTIONS = (Action.SUSPEND, Action.DELETE)


# --- metadata ---------------------------------------------------------------------------


def static_metadata(template: Mapping[str, Any], metadata: Any,
                    parameters: Mapping[str, Any], secrets: tuple[str, ...]) -> Any:
    """A resource's template metadata with every function that needs only parameters
    evaluated; a function that needs a resource (``get_resource``, ``get_attr``) stays as
    written, its arguments evaluated where they can be. Hidden values are masked."""
    version = find_hot_version(template.get(HOT_KEY))
    if version is None:
        return redact(metadata, secrets)
    doc = from_data(template)
    scope = StaticScope(parameters)

    def walk(value: Any) -> Any:
        if isinstance(value, Mapping):
            if len(value) == 1:
                (key, argument), = value.items()
                if key in version.functions:
                    try:
                        return resolve(parse_value(ParseContext(doc, version), value, ()),
                                       scope)
                    except (Deferred, KilnError):
                        return {key: walk(argument)}
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    return redact(walk(metadata), secrets)


# --- mark unhealthy ---------------------------------------------------------------------


def mark_unhealthy_request(body: Mapping[str, Any]) -> tuple[bool, str]:
    """(unhealthy, reason) from a PATCH body, refused with Heat's messages."""
    unknown = set(body) - {MARK_UNHEALTHY, STATUS_REASON}
    if unknown:
        shown = "{" + ", ".join(repr(key) for key in sorted(unknown)) + "}"
        raise BadRequest(reason=f"Invalid keys in resource mark unhealthy {shown}")
    if MARK_UNHEALTHY not in body:
        raise BadRequest(reason=f"Missing mandatory ({MARK_UNHEALTHY}) key from mark "
                                "unhealthy request")
    unhealthy = extract_bool(body[MARK_UNHEALTHY], MARK_UNHEALTHY)
    reason = body.get(STATUS_REASON)
    return unhealthy, str(reason) if reason else reasons.MARKED_UNHEALTHY


def find_resource(rows: Sequence[Resource], stack_name: str, name_or_physical_id: str
                  ) -> Resource:
    """The resource named so, else the one whose physical id it is."""
    for row in rows:
        if row.name == name_or_physical_id:
            return row
    matches = [row for row in rows if row.physical_id == name_or_physical_id]
    if len(matches) > 1:
        raise PhysicalResourceIDAmbiguity(phys_id=name_or_physical_id)
    if not matches:
        raise ResourceNotFound(resource_name=name_or_physical_id, stack_name=stack_name)
    return matches[0]


def mark_unhealthy(session: DbSession, stack: Stack, row: Resource, unhealthy: bool,
                   reason: str, now: datetime.datetime) -> None:
    """Heat's rules: unhealthy -> CHECK_FAILED unless the resource is being (or was)
    deleted; healthy -> CHECK_COMPLETE only from CHECK_FAILED; anything else changes
    nothing. An event is written when the state changes."""
    if unhealthy and row.action != Action.DELETE:
        action, status = Action.CHECK, Status.FAILED
    elif not unhealthy and (row.action, row.status) == (Action.CHECK, Status.FAILED):
        action, status = Action.CHECK, Status.COMPLETE
    else:
        return
    transitions.mark_resource(session, stack, row, action, status, reason, now)


# --- signals ----------------------------------------------------------------------------


def signal_target(stack: Stack, rows: Sequence[Resource], resource_name: str,
                  registry: ResourceTypeRegistry | None = None) -> Resource:
    """The resource a signal goes to, or Heat's refusal, in Heat's order: an unknown
    resource (404), one not created yet (404), one suspended or deleted (400) unless its
    type takes signals then (``Resource.no_signal_actions``, with ``registry``)."""
    row = next((r for r in rows if r.name == resource_name), None)
    template = stack.template if isinstance(stack.template, Mapping) else {}
    if row is None and resource_name not in (template.get("resources") or {}):
        raise ResourceNotFound(resource_name=resource_name, stack_name=stack.name)
    if row is None or row.action == Action.INIT:
        raise ResourceNotAvailable(resource_name=resource_name)
    cls = registry.for_stored(row.type) if registry is not None else None
    if row.action in (cls.no_signal_actions if cls is not None else NO_SIGNAL_ACTIONS):
        raise NotSupported(feature=f"Signal resource during {row.action}")
    return row


@dataclasses.dataclass(frozen=True)
class _Physical:
    """One generation of a resource row: what a signal is delivered to."""

    id: int
    name: str
    generation: int
    type: str
    properties: Mapping[str, Any]
    physical_id: str | None
    data: Mapping[str, Any]


def _signalled(session: DbSession, row: Resource, token_id: str | None) -> _Physical:
    """The physical resource a signal goes to: the row's current one, or the one an
    update replaced when the signal comes with a token issued for that one while its
    cleanup runs (a software deployment's ``DELETE`` run waits for its agent then)."""
    replaced = row.replaced
    generation = signals.token_generation(session, token_id) if token_id else None
    if replaced is not None and generation is not None and generation != row.generation \
            and generation == replaced.get("generation", 0):
        return _Physical(row.id, row.name, generation, replaced["type"],
                         replaced.get("properties") or {}, replaced.get("physical_id"),
                         replaced.get("data") or {})
    return _Physical(row.id, row.name, row.generation, row.type, row.properties or {},
                     row.physical_id, row.data or {})


def deliver_signal(session: DbSession, stack: Stack, row: Resource,
                   details: Mapping[str, Any] | None, registry: ResourceTypeRegistry,
                   clock: Clock, token_id: str | None = None) -> None:
    """Let the resource's type accept ``details`` (400 ``signal is not supported for
    resource.`` by default) and store what it makes of it, with a ``SIGNAL`` event.
    ``token_id``: the signal token that sent it, which tells which generation of the
    resource it is for (:func:`_signalled`)."""
    signals.lock_resource(session, row)  # signals to one resource, one at a time
    target = _signalled(session, row, token_id)
    cls = registry.for_stored(target.type)
    if cls is None:  # the type was uninstalled: it takes nothing
        raise ResourceActionNotSupported(action="signal")
    instance = cls(target.name, target.properties, ReadOnlyRuntime(stack, target, clock),
                   physical_id=target.physical_id, data=dict(target.data))
    accepted: Signal = instance.handle_signal(details, signals.list_signals(
        session, target.id, target.generation))
    now = clock()
    signals.add_signal(session, target.id, target.generation, dict(accepted.stored), now)
    event_rows.add_event(session, stack_id=stack.id, resource_name=row.name,
                         physical_resource_id=target.physical_id or "",
                         resource_type=target.type, action=Action.SIGNAL,
                         status=row.status,
                         reason=reasons.signal_taken(accepted.summary, details), now=now)


# --- breakpoints ------------------------------------------------------------------------

#: The key of a signal's body that clears a breakpoint instead of signalling the type.
UNSET_HOOK = "unset_hook"


def clears_hook(details: Any) -> bool:
    """Whether a signal's body asks to clear a hook (Heat: before any type sees it, so
    a type that takes no signals still has its hooks cleared)."""
    return isinstance(details, Mapping) and UNSET_HOOK in details


def unset_hook(session: DbSession, stack: Stack, rows: Sequence[Resource],
               resource_name: str, hook: Any, registry: ResourceTypeRegistry,
               clock: Clock) -> None:
    """Clear the breakpoint ``hook`` the resource waits at, with Heat's event, and wake
    its step (``engine.worker.breakpoints``). Heat's refusals in Heat's order: an
    unknown resource (404), one not planned yet (404), one suspended or deleted (400),
    a hook that is no hook type, then one not set (400 ``InvalidBreakPointHook``).

    Unlike Heat, a resource being deleted takes the clear of the hook it waits at:
    Heat refuses every signal during DELETE, so its ``post-delete`` hook could never be
    cleared, only outlasted by the stack's timeout."""
    row = next((r for r in rows if r.name == resource_name), None)
    template = stack.template if isinstance(stack.template, Mapping) else {}
    if row is None and resource_name not in (template.get("resources") or {}):
        raise ResourceNotFound(resource_name=resource_name, stack_name=stack.name)
    if row is None:
        raise ResourceNotAvailable(resource_name=resource_name)
    known = isinstance(hook, str) and hook in set(Hook)
    waiting = hooks.pending(session, row.id, hook) if known else None
    cls = registry.for_stored(row.type)
    refused = getattr(cls, "no_signal_actions", NO_SIGNAL_ACTIONS)
    if waiting is None and row.action in refused:
        raise NotSupported(feature=f"Signal resource during {row.action}")
    if not known:
        raise InvalidBreakPointHook(
            message=f'Invalid hook type "{hook}" for {_described(stack, row, cls)}')
    if waiting is None:
        raise InvalidBreakPointHook(
            message=f'The "{hook}" hook is not defined on {_described(stack, row, cls)}')
    now = clock()
    waiting.cleared_at = now
    event_rows.add_resource_event(session, stack, row, reasons.hook_cleared(str(hook)), now)
    wake_step(session, waiting.step_id)


def _described(stack: Stack, row: Resource, cls: type | None) -> str:
    """A resource as Heat's messages show one (``str(Resource)``): its class, its name,
    its physical id once it has one, and its stack."""
    kind = cls.__name__ if cls is not None else row.type
    physical = f" [{row.physical_id}]" if row.physical_id is not None else ""
    return f'{kind} "{row.name}"{physical} Stack "{stack.name}" [{stack.id}]'
