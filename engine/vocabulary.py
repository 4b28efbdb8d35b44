"""Kiln's one vocabulary of actions and states, used by every layer.

``StrEnum`` members are their own strings: they are stored in the database, compared with
rows read back and written into Heat's API bodies as they are, so no layer converts them.
Heat's words are used for stacks and resources (``Action``, ``Status``); operations and
steps have Kiln's own (``OperationState``, ``StepState``)."""

from __future__ import annotations

import enum


class Action(enum.StrEnum):
    """What a stack operation, a step or a resource is doing (Heat's stack and resource
    actions, plus Kiln's own operation and step kinds noted below)."""

    INIT = "INIT"  # a resource row planned but not yet acted on (Heat's INIT_COMPLETE)
    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    SUSPEND = "SUSPEND"
    RESUME = "RESUME"
    CHECK = "CHECK"
    ADOPT = "ADOPT"
    ROLLBACK = "ROLLBACK"
    SNAPSHOT = "SNAPSHOT"
    RESTORE = "RESTORE"
    SIGNAL = "SIGNAL"  # a resource event only: a signal taken
    # An operation kind only: Heat has no ABANDON stack state, the stack shows DELETE.
    ABANDON = "ABANDON"
    # A step kind only: delete what a replacement left behind.
    CLEANUP = "CLEANUP"


class Change(enum.StrEnum):
    """What an operation is planned to do to one resource, as lifecycle plugins see it
    (``StackView.changes``): an update decides between UPDATE (in place), REPLACE and
    NONE per resource; a create creates and a delete deletes every one."""

    CREATE = "CREATE"
    UPDATE = "UPDATE"  # in place: the physical resource stays
    REPLACE = "REPLACE"  # a new physical resource; the old one is deleted
    DELETE = "DELETE"
    NONE = "NONE"  # no property differs: nothing is done


class Verdict(enum.StrEnum):
    """How one lifecycle plugin call went, as recorded with the operation and shown in
    its events (``engine.lifecycle.runner``)."""

    # A pre-op's.
    ALLOW = "allow"
    WARN = "warn"
    DENY = "deny"
    ERROR = "error"  # a post-op's too
    TIMEOUT = "timeout"  # a post-op's too
    # Not called: in a dry run by a plugin without dry-run support, on update because the
    # plugin's cache key is unchanged, or for a nested stack by a root-only plugin.
    SKIPPED = "skipped"
    # An approval gate: the pre-op asked for a person's approval and the operation is
    # parked; the record then takes the decision (rejected and expired fail the operation).
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"
    # A post-op's.
    DONE = "done"
    NOT_CALLED = "not_called"  # owed, and the operation ended without it


class Hook(enum.StrEnum):
    """A breakpoint an environment sets on a resource (``resource_registry.resources.<name>
    .hooks``): the resource pauses before (pre) or after (post) its action until a signal
    clears the hook. Heat's names, in Heat's order (its messages list them so)."""

    PRE_CREATE = "pre-create"
    PRE_UPDATE = "pre-update"
    PRE_DELETE = "pre-delete"
    POST_CREATE = "post-create"
    POST_UPDATE = "post-update"
    POST_DELETE = "post-delete"


class RestrictedAction(enum.StrEnum):
    """What an environment may forbid an update to do to a resource
    (``resource_registry.resources.<name>.restricted_actions``): change it in place, or
    replace it. Heat's names, in Heat's order (its message lists them so)."""

    UPDATE = "update"
    REPLACE = "replace"


class Status(enum.StrEnum):
    """How a stack's or a resource's action stands (Heat's statuses)."""

    IN_PROGRESS = "IN_PROGRESS"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class SignalTransport(enum.StrEnum):
    """How a resource's signaller reaches Kiln (Heat's ``signal_transport`` values, of a
    software deployment and of a wait condition handle, in Heat's order)."""

    CFN_SIGNAL = "CFN_SIGNAL"
    TEMP_URL_SIGNAL = "TEMP_URL_SIGNAL"
    HEAT_SIGNAL = "HEAT_SIGNAL"
    NO_SIGNAL = "NO_SIGNAL"
    ZAQAR_SIGNAL = "ZAQAR_SIGNAL"
    TOKEN_SIGNAL = "TOKEN_SIGNAL"  # a wait condition handle's only


class OperationState(enum.StrEnum):
    """Pre-ops and plan, then steps, then the final stack state, then post-ops.

    NOTIFYING operations are finished for the stack (``finished_at`` is set, so the next
    operation can be accepted) but still owe post-op calls; the next one waits for them."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    FINISHING = "FINISHING"
    NOTIFYING = "NOTIFYING"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class StepState(enum.StrEnum):
    """A step waits for its prerequisites, becomes ready, is run under a lease."""

    WAITING = "WAITING"
    READY = "READY"
    RUNNING = "RUNNING"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class CancelReason(enum.StrEnum):
    """Who had an operation ended early: the operation payload's ``cancelled``."""

    CANCEL_UPDATE = "cancel_update"  # a tenant's (Heat's action name): a rollback follows
    CANCEL_WITHOUT_ROLLBACK = "cancel_without_rollback"  # a tenant's (Heat's action name)
    DELETE = "delete"  # a delete of the busy stack, which follows it
    OPERATOR = "operator"  # kiln-manage operation cancel


#: Steps not yet closed.
OPEN_STEP_STATES = (StepState.WAITING, StepState.READY, StepState.RUNNING)

#: The update-like operations: each takes the stack to the definition its payload's
#: ``target`` holds, through the update's machinery (an update, the rollback of one, and
#: the restore of a snapshot, which Heat runs as an update too). The rollback of a
#: create has no target: it deletes what the create made.
UPDATE_LIKE = (Action.UPDATE, Action.ROLLBACK, Action.RESTORE)

#: The stack action shown for an operation action (Heat has no ABANDON stack state).
STACK_ACTION: dict[str, str] = {Action.ABANDON: Action.DELETE}


def stack_action(operation_action: str) -> str:
    """The action a stack shows while ``operation_action`` runs on it. Any other word is
    shown as it is: an operator's reset or an old row may carry one no member names, and
    showing it must not fail."""
    return STACK_ACTION.get(operation_action, operation_action)
