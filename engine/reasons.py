"""Heat's status reasons for stacks, operations and resources: the sentences tenants read
in a stack's ``stack_status_reason``, a resource's ``resource_status_reason`` and their
events, and that Heat's clients match.

One function (or constant) per sentence, so each is written in one place, byte for byte
as Heat writes it; the few Kiln has no Heat model for say so. The database layer stores
these words; it never makes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Appended to a completed check's reason when some resource type has no real check.
CHECK_NOT_FULLY_SUPPORTED = ". 'CHECK' not fully supported (see resources)"


def stack_started(action: str) -> str:
    return f"Stack {action} started"


def stack_completed(action: str) -> str:
    return f"Stack {action} completed successfully"


def stack_failed(action: str, message: str) -> str:
    return f"Stack {action} failed: {message}"


def resource_failed(action: str, message: object) -> str:
    return f"Resource {action} failed: {message}"


def operation_cancelled(action: str) -> str:
    """A tenant's or an operator's cancel (or a delete) ended the operation."""
    return resource_failed(action, "Operation cancelled")


def timed_out(action: str) -> str:
    return f"{action.capitalize()} timed out"


def aborted(action: str) -> str:
    """A resource whose step was cut short when its operation ended."""
    return f"{action} aborted"


def reset_by_operator(actor: str) -> str:
    """An operation (and its resources mid-action) ended by ``kiln-manage``'s reset."""
    return f"Reset by operator {actor}"


def stack_reset(action: str, status: str, actor: str, reason: str) -> str:
    return f"Stack state reset to {action}_{status} by operator {actor}: {reason}"


# --- post-ops never called (Kiln's own: Heat never says) ---------------------------------


def post_ops_skipped_by_operator(actor: str) -> str:
    """Why an owed post-op was never called: the operator's reset asked so."""
    return f"skipped by operator {actor} (reset-state --skip-post-ops)"


def post_ops_given_up(tries: int) -> str:
    """Why an owed post-op was never called: the post-op phase kept failing."""
    return f"the post-op phase failed unexpectedly {tries} times and was given up"


#: Why an owed post-op was never called: the operation was ended with the fewest writes
#: after giving it up failed too.
POST_OPS_ABANDONED = "the operation was abandoned after repeated internal errors"


# --- approval gates (Kiln's own: Heat has none) -------------------------------------------


def awaiting_approval(plugin: str, message: str, expires_at: str) -> str:
    """The stack's reason while its operation is parked for a person's decision."""
    return (f"Waiting for approval (lifecycle plugin {plugin}): {message}; "
            f"rejected if not approved by {expires_at}")


def approval_decided(decision: str, by: str, comment: str, override: bool) -> str:
    """An approval or a rejection, naming who and why (an event and the stack reason)."""
    what = "override approved" if override and decision == "approved" else decision
    return f"Approval gate: {what} {approval_by(by, comment)}"


def approval_by(by: str, comment: str) -> str:
    """Who decided an approval gate, and why: the decided call record's message."""
    return f"by {by}" + (f": {comment}" if comment else "")


def approval_expired(plugin: str, expires_at: str) -> str:
    return (f"Approval gate of lifecycle plugin {plugin}: expired at {expires_at} "
            f"without a decision")


# --- resources ---------------------------------------------------------------------------

#: A resource's state moved as its action planned (Heat's ``state_set`` default).
STATE_CHANGED = "state changed"
#: A delete that leaves the physical resource where it is (``deletion_policy: Retain``).
RETAINED = "Retained"
#: Mark-unhealthy without a ``resource_status_reason`` of the tenant's.
MARKED_UNHEALTHY = "state changed by resource_mark_unhealthy api"
#: Kiln's: an update's cleanup deleted the physical resource a replacement replaced.
REPLACED_DELETED = "replaced resource deleted"
#: Kiln's: a rollback starts deleting a replacement, to take the replaced one back.
ROLLING_BACK = "rolling back"
#: Kiln's: that rollback took the replaced resource back.
RESTORED = "restored the resource the update replaced"


def resource_error(kind: str, name: str, message: str) -> str:
    """A failed resource's own reason: the error's class name, then its message."""
    return f"{kind}: resources.{name}: {message}"


def hook_reached(action: str, hook: str) -> str:
    """A resource paused at a breakpoint (Heat's ``Resource._break_if_required``); the
    CLI's ``stack hook poll`` looks for these words."""
    return f"{action} paused until Hook {hook} is cleared"


def hook_cleared(hook: str) -> str:
    """A signal's ``unset_hook`` cleared a breakpoint (Heat's ``Resource._unset_hook``)."""
    return f"Hook {hook} is cleared"


#: A paused resource's operation ended (timed out, cancelled) while it waited: Heat's.
HOOK_WAIT_FAILED = "Failure occurred while waiting."


def signal_taken(summary: str | None, details: Mapping[str, Any] | None) -> str:
    """The reason of a ``SIGNAL`` event (Heat's ``Resource._handle_signal``): the
    resource type's summary of the signal, else what Heat makes of its details."""
    if summary:
        return f"Signal: {summary}"
    if details is None:
        return "No signal details provided"
    if all(key in details for key in ("previous", "current", "reason")):  # from Ceilometer
        return ("alarm state changed from {previous} to {current} ({reason})"
                .format(**details))
    return "Unknown"
