"""What an update step does to its resource, decided with live property values.

Pure: the caller hands in the stored resource and the new definition. The decision is
stored with the step (``steps.resource_action``) the first time it is made, so a step
resumed by another worker does the same thing. The worker's steps
(``engine.worker.step_decision``) and the update's forecast
(``engine.resources.update_forecast``) both decide with these functions.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from typing import Any

from engine.errors import NotSupported, ResourceActionRestricted
from engine.vocabulary import Action, RestrictedAction, Status


class Decision(enum.StrEnum):
    """What an update step does to its resource, as ``steps.resource_action`` stores it."""

    NONE = "NONE"  # nothing: no property changed
    CREATE = Action.CREATE  # never created (added by an update that failed before it)
    UPDATE = Action.UPDATE  # in place
    REPLACE = "REPLACE"  # a new physical resource; the old one goes once unused
    RESTORE = "RESTORE"  # take back the resource this one replaced (a rollback only)


class _Unknown:
    """A property value not known before an update runs (it comes from a resource the
    update creates, replaces or changes). It equals nothing, so a decision made before
    the update sees the property as changed: more disturbance, never less."""

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return "<not known before the update>"


UNKNOWN: Any = _Unknown()


@dataclasses.dataclass(frozen=True)
class Stored:
    type: str
    properties: Mapping[str, Any] | None
    physical_id: str | None
    action: str
    status: str
    replaced: Mapping[str, Any] | None


def decide(stored: Stored, new_type: str, new_properties: Mapping[str, Any],
           needs_replacement: Callable[[Mapping[str, Any]], bool],
           rolling_back: bool) -> Decision:
    if stored.properties is None and stored.physical_id is None:
        return Decision.CREATE
    if (rolling_back and stored.replaced is not None
            and stored.replaced.get("type") == new_type
            and stored.replaced.get("properties") == dict(new_properties)):
        return Decision.RESTORE  # the resource this one replaced still exists
    if stored.type != new_type:
        return Decision.REPLACE
    # A failed create or a mark-unhealthy is replaced; a failed update is replaced too,
    # except by the rollback, which changes it back in place to keep its physical id.
    unhealthy = stored.status == Status.FAILED and (
        stored.action in (Action.CREATE, Action.CHECK) or not rolling_back)
    diff = prop_diff(stored.properties or {}, new_properties)
    if not diff:
        return Decision.REPLACE if unhealthy else Decision.NONE
    if unhealthy or needs_replacement(diff):
        return Decision.REPLACE
    return Decision.UPDATE


# What each decision does that an environment may restrict.
_RESTRICTABLE = {Decision.UPDATE: RestrictedAction.UPDATE,
                 Decision.REPLACE: RestrictedAction.REPLACE}


def check_restricted(decision: Decision, restricted: frozenset[str]) -> None:
    """Raise ResourceActionRestricted when the environment restricts (``restricted``,
    its ``restricted_actions`` for the resource) what ``decision`` does, as Heat checks
    before it updates: an update in place with ``update`` restricted, a replacement
    (a changed type, a replacing property, a failed resource) with ``replace``. Nothing,
    a create of a never-created resource or a rollback's restore is never refused."""
    action = _RESTRICTABLE.get(decision)
    if action is not None and action in restricted:
        raise ResourceActionRestricted(action=str(action))


def external_update(external_id: str, physical_id: str | None, resource: str) -> Decision:
    """An update step of an external resource (``external_id``): NONE when it names the
    stored physical resource (Heat looks at an external resource, never changes it),
    CREATE when none is stored (the step adopts it). Another one is refused (raises
    NotSupported): ``resource`` says which, as ``<name> (<type>)``."""
    if physical_id is None:
        return Decision.CREATE
    if physical_id == external_id:
        return Decision.NONE
    raise NotSupported(feature=f"Update to property external_id of {resource}")


def converging(decision: Decision, converge: bool) -> Decision:
    """``decision`` in an update with ``converge`` (Heat's) of a resource that observes
    its backend (``converge`` true for it): its step reads the backend and puts back what
    drifted, so one whose properties did not change is updated all the same."""
    return Decision.UPDATE if converge and decision == Decision.NONE else decision


def retains(deletion_policy: str) -> bool:
    """Whether deleting a resource of this deletion policy leaves its physical resource
    where it is: it leaves the stack, and nothing is destroyed."""
    return deletion_policy == "Retain"


def prop_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The properties whose values differ, with their new values (None when removed)."""
    return {key: new.get(key) for key in sorted(set(old) | set(new))
            if old.get(key) != new.get(key)}
