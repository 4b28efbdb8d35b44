"""Heat's status reasons for stacks and operations: the sentences tenants read in a
stack's ``stack_status_reason`` and in its events, and that Heat's clients match.

One function per sentence, so each is written in one place, byte for byte as Heat
writes it. The database layer stores these words; it never makes them."""

from __future__ import annotations

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
