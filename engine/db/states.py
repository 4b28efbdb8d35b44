"""The states of the work rows. Heat's words are used for stacks and resources; these are
Kiln's own, for operations and steps."""

from __future__ import annotations

# Operation: pre-ops and plan, then steps, then the final stack state, then post-ops.
# NOTIFYING operations are finished for the stack (``finished_at`` is set, so the next
# operation can be accepted) but still owe post-op calls; the next one waits for them.
OP_PENDING, OP_RUNNING, OP_FINISHING, OP_NOTIFYING, OP_COMPLETE, OP_FAILED = (
    "PENDING", "RUNNING", "FINISHING", "NOTIFYING", "COMPLETE", "FAILED")

# Heat has no ABANDON stack state: the stack of an abandon operation shows as a delete.
STACK_ACTION = {"ABANDON": "DELETE"}

# Step: waits for its prerequisites, becomes ready, is run under a lease.
STEP_WAITING, STEP_READY, STEP_RUNNING, STEP_COMPLETE, STEP_FAILED, STEP_CANCELLED = (
    "WAITING", "READY", "RUNNING", "COMPLETE", "FAILED", "CANCELLED")
STEP_OPEN = (STEP_WAITING, STEP_READY, STEP_RUNNING)
