"""The states of the work rows. Heat's words are used for stacks and resources; these are
Kiln's own, for operations and steps."""

from __future__ import annotations

# Operation: planned by a worker, then run as steps, then finished by a worker.
OP_PENDING, OP_RUNNING, OP_FINISHING, OP_COMPLETE, OP_FAILED = (
    "PENDING", "RUNNING", "FINISHING", "COMPLETE", "FAILED")

# Step: waits for its prerequisites, becomes ready, is run under a lease.
STEP_WAITING, STEP_READY, STEP_RUNNING, STEP_COMPLETE, STEP_FAILED, STEP_CANCELLED = (
    "WAITING", "READY", "RUNNING", "COMPLETE", "FAILED", "CANCELLED")
STEP_OPEN = (STEP_WAITING, STEP_READY, STEP_RUNNING)
