"""engine.db.backlog: the operations no worker has started, counted up to a bound, and
when the longest-waiting one was queued."""

from __future__ import annotations

from engine.db import backlog
from engine.db.session import Database
from engine.vocabulary import Action, OperationState
from tests.unit.db.conftest import NOW, add_operation, add_stack, later


def test_only_operations_never_claimed_are_counted_and_only_up_to_the_bound(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        for i in range(4):  # new: never claimed
            add_operation(session, add_stack(session, tenant_id), created_at=later(i))
        # A worker began it (pre-ops, plan), or it is parked at an approval gate, or
        # its worker died and gave it back: work in hand, not backlog.
        add_operation(session, add_stack(session, tenant_id), attempt=1, lease_owner="w1")
        add_operation(session, add_stack(session, tenant_id), attempt=1,
                      lease_expires_at=later(3600))
        add_operation(session, add_stack(session, tenant_id), attempt=2)
        add_operation(session, add_stack(session, tenant_id), state=OperationState.RUNNING,
                      attempt=1)
        add_operation(session, add_stack(session, tenant_id), state=OperationState.COMPLETE,
                      attempt=1, finished_at=later(5))

    with db.read() as session:
        assert backlog.count_unstarted(session, 100) == 4
        assert backlog.count_unstarted(session, 3) == 3  # no further than the bound
        assert backlog.count_unstarted(session, 0) == 0
        assert backlog.oldest_unstarted(session) == NOW


def test_an_operation_queued_behind_its_stacks_previous_one_is_unstarted(
        db: Database, tenant_id: str) -> None:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id)
        add_operation(session, stack, state=OperationState.NOTIFYING, attempt=1,
                      finished_at=NOW)
        add_operation(session, stack, Action.DELETE, created_at=later(30))

    with db.read() as session:
        assert backlog.count_unstarted(session, 10) == 1
        assert backlog.oldest_unstarted(session) == later(30)


def test_no_backlog_has_no_oldest(db: Database) -> None:
    with db.read() as session:
        assert backlog.count_unstarted(session, 10) == 0
        assert backlog.oldest_unstarted(session) is None
