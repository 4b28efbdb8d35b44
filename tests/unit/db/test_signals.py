"""engine.db.signals: signals stored per resource generation, the resource a reference
names, and signal tokens kept as hashes and honoured for one resource generation of a
live stack only."""

from __future__ import annotations

import hashlib

from sqlalchemy import select

from engine.db import signals
from engine.db.models import Resource, SignalToken, Stack
from engine.db.session import Database
from engine.vocabulary import Action, Status
from tests.unit.db.conftest import NOW, add_resource, add_stack, later


def stack_with(db: Database, tenant_id: str, *names: str, name: str = "s") -> Stack:
    with db.transaction() as session:
        stack = add_stack(session, tenant_id, name)
        for resource in names:
            add_resource(session, stack, resource, physical_id=f"{resource}-id")
        return stack


def resource_id(db: Database, stack: Stack, name: str) -> int:
    with db.read() as session:
        return session.scalars(select(Resource.id).where(Resource.stack_id == stack.id,
                                                         Resource.name == name)).one()


# --- signals --------------------------------------------------------------------------------


def test_signals_are_listed_oldest_first_per_generation(db: Database, tenant_id: str) -> None:
    stack = stack_with(db, tenant_id, "wait", "other")
    wait, other = resource_id(db, stack, "wait"), resource_id(db, stack, "other")
    with db.transaction() as session:
        signals.add_signal(session, wait, 0, {"n": 1}, NOW)
        signals.add_signal(session, wait, 1, {"n": "replaced"}, NOW)
        signals.add_signal(session, other, 0, {"n": "other"}, NOW)
        signals.add_signal(session, wait, 0, {"n": 2}, later(1))

    with db.read() as session:
        assert signals.list_signals(session, wait, 0) == [{"n": 1}, {"n": 2}]
        assert signals.list_signals(session, wait, 1) == [{"n": "replaced"}]
        assert signals.list_signals(session, other, 5) == []


def test_locking_a_resource_reads_it_again(db: Database, tenant_id: str) -> None:
    stack = stack_with(db, tenant_id, "wait")
    with db.transaction() as session:
        row = session.get_one(Resource, resource_id(db, stack, "wait"))
        row.generation = 7  # not flushed: the lock's read replaces it
        signals.lock_resource(session, row)
        assert row.generation == 0


def test_a_reference_names_a_physical_id_before_a_resource_name(
        db: Database, tenant_id: str) -> None:
    stack = stack_with(db, tenant_id, "a", "b")
    with db.transaction() as session:
        session.get_one(Resource, resource_id(db, stack, "b")).physical_id = "a"

    with db.read() as session:
        found = signals.find_signalled_resource(session, stack.id, "a")
        old_id = signals.find_signalled_resource(session, stack.id, "b-id")
        missing = signals.find_signalled_resource(session, stack.id, "c")
    assert found is not None and found.name == "b"
    assert old_id is None and missing is None


def test_only_a_resource_in_a_referable_state_is_found(db: Database, tenant_id: str) -> None:
    stack = stack_with(db, tenant_id)
    states = [(Action.CREATE, Status.FAILED), (Action.SUSPEND, Status.COMPLETE),
              (Action.DELETE, Status.COMPLETE), *signals.REFERABLE_STATES]
    with db.transaction() as session:
        for i, (action, status) in enumerate(states):
            add_resource(session, stack, f"r{i}", action=action, status=status)

    with db.read() as session:
        found = [signals.find_signalled_resource(session, stack.id, f"r{i}") is not None
                 for i in range(len(states))]
    assert found == [False, False, False] + [True] * len(signals.REFERABLE_STATES)


# --- signal tokens --------------------------------------------------------------------------


def test_a_token_is_stored_as_its_hash(db: Database, tenant_id: str) -> None:
    stack = stack_with(db, tenant_id, "wait")
    with db.transaction() as session:
        token = signals.add_signal_token(session, resource_id(db, stack, "wait"), 0,
                                         "s3cret", NOW)

    with db.read() as session:
        stored = session.get_one(SignalToken, token.id)
    assert stored.token_hash == hashlib.sha256(b"s3cret").hexdigest()
    assert (stored.generation, stored.created_at) == (0, NOW)


def test_a_token_is_honoured_only_for_its_resource_of_its_live_stack(
        db: Database, tenant_id: str) -> None:
    stack = stack_with(db, tenant_id, "wait", "other", name="mine")
    with db.transaction() as session:
        token_id = signals.add_signal_token(session, resource_id(db, stack, "wait"), 0,
                                            "s3cret", NOW).id

    def find(secret: str = "s3cret", tenant: str = tenant_id, stack_name: str = "mine",
             resource: str = "wait") -> str | None:
        with db.read() as session:
            return signals.find_signal_token(session, secret, tenant_id=tenant,
                                             stack_name=stack_name, stack_id=stack.id,
                                             resource_name=resource)

    assert find() == token_id
    assert [find(secret="wrong"), find(tenant="someone"), find(stack_name="theirs"),
            find(resource="other")] == [None] * 4

    with db.transaction() as session:
        session.get_one(Resource, resource_id(db, stack, "wait")).generation = 1
    assert find() is None, "a replaced resource's tokens no longer count"

    with db.transaction() as session:
        session.get_one(Resource, resource_id(db, stack, "wait")).generation = 0
        session.get_one(Stack, stack.id).deleted_at = NOW
    assert find() is None, "nor do a deleted stack's"


def test_deleting_tokens_takes_those_of_one_generation(db: Database, tenant_id: str) -> None:
    stack = stack_with(db, tenant_id, "wait")
    wait = resource_id(db, stack, "wait")
    with db.transaction() as session:
        signals.add_signal_token(session, wait, 0, "zero", NOW)
        kept = signals.add_signal_token(session, wait, 1, "one", NOW).id

    with db.transaction() as session:
        signals.delete_signal_tokens(session, wait, 0)

    with db.read() as session:
        assert list(session.scalars(select(SignalToken.id))) == [kept]
