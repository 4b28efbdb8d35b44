"""engine.services.backlog, as the writes use it: while [api] max_pending_operations
operations wait for their first worker, every write that would queue another (create,
adopt, update, delete, suspend, resume, check, abandon) is refused with BacklogFull and
nothing is stored, whichever tenant asks and whatever stack it names; the cancels pass;
once a worker has started the waiting ones the writes are accepted again. On a migrated
SQLite file with a real worker."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from engine.context import MEMBER_ROLE, RequestContext
from engine.db.models import Operation, Stack
from engine.db.session import Database
from engine.errors import BacklogFull, EntityNotFound
from engine.ir.stored import StoredIrs
from engine.resources.registry import ResourceTypeRegistry
from engine.services.backlog import Backlog
from engine.services.proposals import StackLimits
from engine.services.stack_actions import StackActions
from engine.services.stack_reads import StackReads
from engine.services.stack_writes import StackWrites
from engine.services.tenants import TenantService
from tests.unit.conftest import Clock
from tests.unit.worker.running import run, worker

PLAIN = "heat_template_version: 2018-08-31\nresources:\n  r: {type: OS::Heat::None}\n"
BOUND = 2
MESSAGE = ("Kiln is busy: the most operations it lets wait for a worker (2, [api] "
           "max_pending_operations) are waiting. Nothing was changed; try again in {} "
           "seconds.")


@pytest.fixture
def writes(db: Database, registry: ResourceTypeRegistry, clock: Clock,
           irs: StoredIrs) -> StackWrites:
    return StackWrites(db, registry, StackLimits(max_pending_operations=BOUND), clock, irs)


@pytest.fixture
def actions(db: Database, clock: Clock) -> StackActions:
    return StackActions(db, clock, 3600, backlog=Backlog(db, clock, BOUND))


@pytest.fixture
def other(db: Database, clock: Clock) -> RequestContext:
    tenant = TenantService(db, clock).create_tenant("other")
    return RequestContext(tenant_id=tenant.id, token_tenant_id=tenant.id, role=MEMBER_ROLE)


def create(writes: StackWrites, ctx: RequestContext, name: str) -> str:
    return writes.create(ctx, {"stack_name": name, "template": PLAIN}).id


def rows(db: Database) -> tuple[int, int]:
    """(stacks, operations) stored."""
    with db.read() as session:
        return (session.query(Stack).count(), session.query(Operation).count())


def refused(call: Callable[[], Any]) -> BacklogFull:
    with pytest.raises(BacklogFull) as caught:
        call()
    return caught.value


@pytest.fixture
def busy(writes: StackWrites, ctx: RequestContext, db: Database,
         registry: ResourceTypeRegistry, clock: Clock) -> str:
    """A finished stack "done" (its id), then BOUND creates no worker has started."""
    done = create(writes, ctx, "done")
    run(worker(db, registry, clock))
    for n in range(BOUND):
        create(writes, ctx, f"waiting-{n}")
    return done


def test_a_create_past_the_bound_is_refused_and_stores_nothing(
        busy: str, writes: StackWrites, ctx: RequestContext, db: Database,
        clock: Clock, irs: StoredIrs, registry: ResourceTypeRegistry) -> None:
    before = rows(db)
    clock.advance(12.3)  # how long the oldest has waited: ceil, the Retry-After

    error = refused(lambda: create(writes, ctx, "late"))

    assert error.retry_after == 13
    assert error.message == MESSAGE.format(13)
    assert rows(db) == before
    with pytest.raises(EntityNotFound):
        StackReads(db, irs, registry, clock).lookup(ctx, "late")


@pytest.mark.parametrize("write", [
    "create", "adopt", "put", "patch", "delete", "suspend", "resume", "check", "abandon"])
def test_every_write_that_queues_an_operation_is_refused(
        write: str, busy: str, writes: StackWrites, actions: StackActions,
        ctx: RequestContext, db: Database) -> None:
    body = {"template": PLAIN}
    calls: dict[str, Callable[[], Any]] = {
        "create": lambda: create(writes, ctx, "late"),
        "adopt": lambda: writes.create(ctx, {"stack_name": "late", "adopt_stack_data":
                                             json.dumps({"template": {}, "resources": {}})}),
        "put": lambda: writes.update(ctx, "done", busy, body, patch=False),
        "patch": lambda: writes.update(ctx, "done", busy, {}, patch=True),
        "delete": lambda: writes.delete(ctx, "done", busy),
        "suspend": lambda: actions.act(ctx, "done", busy, {"suspend": None}),
        "resume": lambda: actions.act(ctx, "done", busy, {"resume": None}),
        "check": lambda: actions.act(ctx, "done", busy, {"check": None}),
        "abandon": lambda: actions.abandon(ctx, "done", busy),
    }
    before = rows(db)

    refused(calls[write])

    assert rows(db) == before


def test_a_cancel_queues_nothing_and_is_never_refused(
        busy: str, writes: StackWrites, actions: StackActions, ctx: RequestContext,
        irs: StoredIrs, db: Database, registry: ResourceTypeRegistry, clock: Clock) -> None:
    waiting = StackReads(db, irs, registry, clock).lookup(ctx, "waiting-0")[1]

    actions.act(ctx, "waiting-0", waiting, {"cancel_without_rollback": None})

    refused(lambda: create(writes, ctx, "late"))  # still full: the cancel added nothing


def test_every_tenant_is_refused_alike_and_learns_nothing_of_the_others(
        busy: str, writes: StackWrites, actions: StackActions, ctx: RequestContext,
        other: RequestContext) -> None:
    # The bound is the service's: the other tenant's operations wait behind these.
    theirs = refused(lambda: create(writes, other, "mine"))
    # Naming the first tenant's stack, or none at all, gets the same answer: not a 404
    # that would tell the stack exists, nor anything of it.
    on_foreign = refused(lambda: writes.delete(other, "done", busy))
    on_none = refused(lambda: actions.act(other, "nothing", busy, {"check": None}))

    assert theirs.message == on_foreign.message == on_none.message == MESSAGE.format(1)
    assert busy not in theirs.message and "done" not in theirs.message
    assert theirs.details == {"limit": BOUND, "retry_after": 1}  # no count, no names


def test_writes_are_accepted_again_once_a_worker_has_started_the_waiting_ones(
        busy: str, writes: StackWrites, actions: StackActions, ctx: RequestContext,
        db: Database, registry: ResourceTypeRegistry, clock: Clock) -> None:
    refused(lambda: create(writes, ctx, "late"))

    worker(db, registry, clock).run_once()  # claims them: started, no longer waiting

    create(writes, ctx, "late")
    actions.act(ctx, "done", busy, {"check": None})


def test_without_a_bound_nothing_is_refused(
        db: Database, registry: ResourceTypeRegistry, clock: Clock, irs: StoredIrs,
        ctx: RequestContext) -> None:
    unbounded = StackWrites(db, registry, StackLimits(), clock, irs)
    for n in range(5):
        create(unbounded, ctx, f"s{n}")
    Backlog(db, clock, -1).check()


def test_the_retry_after_is_how_long_the_oldest_waited_within_a_minute(
        busy: str, writes: StackWrites, ctx: RequestContext, clock: Clock) -> None:
    assert refused(lambda: create(writes, ctx, "late")).retry_after == 1  # at least 1
    clock.advance(600)
    assert refused(lambda: create(writes, ctx, "late")).retry_after == 60  # at most 60
