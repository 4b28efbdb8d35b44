"""What a worker counts in engine.metrics, read back from prometheus_client's registry by
name and labels: operations started (loop.py) and ended with their outcome
(operation.py), steps closed by type and outcome (step.py, step_writes.py) and a step
taken over from a dead worker (engine/db/leases.py). Counters are process-wide, so each
test reads how much they moved."""

from __future__ import annotations

from typing import Any

import pytest

from engine.context import RequestContext
from engine.services.stack_actions import StackActions
from tests.stack_api import StackApi
from tests.templates import FAILING_ONE as FAILING
from tests.templates import TWO_IN_ORDER as TWO
from tests.unit.conftest import Clock
from tests.unit.metric_deltas import Moved
from tests.unit.worker.running import run, worker_for

# Its create waits a minute; its delete is immediate.
SLOW = """\
heat_template_version: 2018-08-31
resources:
  slow:
    type: OS::Heat::TestResource
    properties: {action_wait_secs: {create: 60, update: 60, delete: 0}}
"""

# A type named by a file of the tenant's (a provider template): any text a tenant writes.
PROVIDER = """\
heat_template_version: 2018-08-31
resources:
  mine: {type: my-thing.yaml}
"""
PROVIDER_FILES = {"my-thing.yaml": "heat_template_version: 2018-08-31\nresources: {}\n"}


def create(stacks: StackApi, ctx: RequestContext, template: str, **body: Any
           ) -> tuple[str, str]:
    record = stacks.create(ctx, {"stack_name": "s", "template": template, **body})
    return record.name, record.id


@pytest.fixture
def moved() -> Moved:
    return Moved()


def test_a_create_counts_its_start_its_end_and_each_step_by_type(
        stacks: StackApi, ctx: RequestContext, clock: Clock,
        moved: Moved) -> None:
    create(stacks, ctx, TWO)
    clock.advance(7)  # the duration runs from the request
    run(worker_for(stacks))

    assert moved("kiln_operations_started_total", action="CREATE") == 1
    assert moved("kiln_operations_finished_total", action="CREATE", outcome="COMPLETE") == 1
    assert moved("kiln_operation_duration_seconds_count", action="CREATE",
                 outcome="COMPLETE") == 1
    # A difference of two float sums: other tests' durations add to the same series.
    assert moved("kiln_operation_duration_seconds_sum", action="CREATE",
                 outcome="COMPLETE") == pytest.approx(7)
    assert moved("kiln_steps_finished_total", resource_type="OS::Heat::None",
                 outcome="COMPLETE") == 2
    assert moved("kiln_step_duration_seconds_count", resource_type="OS::Heat::None",
                 outcome="COMPLETE") == 2


def test_a_failed_step_and_its_operation_are_counted_failed(
        stacks: StackApi, ctx: RequestContext, moved: Moved) -> None:
    create(stacks, ctx, FAILING, disable_rollback=False)
    run(worker_for(stacks))

    assert moved("kiln_steps_finished_total", resource_type="OS::Heat::TestResource",
                 outcome="FAILED") == 1
    assert moved("kiln_operations_finished_total", action="CREATE", outcome="FAILED") == 1
    # The rollback is an operation of its own.
    assert moved("kiln_operations_started_total", action="ROLLBACK") == 1
    assert moved("kiln_operations_finished_total", action="ROLLBACK",
                 outcome="COMPLETE") == 1


def test_an_operation_a_delete_cancels_ends_cancelled_and_the_delete_completes(
        stacks: StackApi, ctx: RequestContext, clock: Clock,
        moved: Moved) -> None:
    name, stack_id = create(stacks, ctx, SLOW)
    worker = worker_for(stacks)
    run(worker, 2)
    stacks.delete(ctx, name, stack_id)
    clock.advance(1)
    run(worker)

    assert moved("kiln_operations_finished_total", action="CREATE", outcome="CANCELLED") == 1
    assert moved("kiln_operations_finished_total", action="CREATE", outcome="FAILED") == 0
    assert moved("kiln_operations_finished_total", action="DELETE", outcome="COMPLETE") == 1


def test_a_type_no_plugin_registers_by_that_name_is_counted_as_other(
        stacks: StackApi, ctx: RequestContext, clock: Clock,
        moved: Moved) -> None:
    create(stacks, ctx, PROVIDER, files=PROVIDER_FILES)
    worker = worker_for(stacks)
    run(worker)
    clock.advance(1)  # the parent's step looks at its nested stack again
    run(worker)

    assert moved("kiln_steps_finished_total", resource_type="other", outcome="COMPLETE") == 1
    assert moved("kiln_steps_finished_total", resource_type="my-thing.yaml",
                 outcome="COMPLETE") == 0


def test_a_dead_workers_step_taken_over_is_counted_once(
        stacks: StackApi, ctx: RequestContext, clock: Clock,
        moved: Moved) -> None:
    name, stack_id = create(stacks, ctx, SLOW)
    run(worker_for(stacks))
    clock.advance(31)  # the first worker died: its 30 s lease lapses
    second = worker_for(stacks)
    run(second)
    clock.advance(30)
    run(second)

    assert moved("kiln_lease_takeovers_total", kind="step") == 1
    assert moved("kiln_lease_takeovers_total", kind="operation") == 0
    assert moved("kiln_operations_started_total", action="CREATE") == 1
    assert moved("kiln_operations_finished_total", action="CREATE", outcome="COMPLETE") == 1


def test_a_cancel_by_the_tenant_counts_the_update_cancelled(
        stacks: StackApi, ctx: RequestContext, clock: Clock,
        moved: Moved) -> None:
    name, stack_id = create(stacks, ctx, "heat_template_version: 2018-08-31\nresources: {}\n")
    worker = worker_for(stacks)
    run(worker)
    stacks.update(ctx, name, stack_id, {"template": SLOW}, patch=False)
    run(worker, 2)
    StackActions(stacks.kiln.db, clock, 3600).act(ctx, name, stack_id,
                                                  {"cancel_without_rollback": None})
    clock.advance(1)
    run(worker)

    assert moved("kiln_operations_finished_total", action="UPDATE", outcome="CANCELLED") == 1
