"""engine.db.software_configs on PostgreSQL (a real server), in real concurrent
transactions: a config's row lock puts a delete of it and a deployment naming it one after
the other, so the one that waits gets Heat's refusal (409, 400 or 404), never the
database's IntegrityError or the ORM's StaleDataError (a 500)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy.orm import Session

from engine.db import software_configs
from engine.db.models import SoftwareDeployment
from engine.db.session import Database
from engine.errors import (
    Conflict,
    Invalid,
    InvalidRestrictedAction,
    SoftwareConfigNotFound,
)
from tests.unit.db.conftest import NOW, add_tenant

pytestmark = pytest.mark.postgresql


def new_config(db: Database) -> tuple[str, str]:
    """A new tenant's config: (tenant id, config id)."""
    with db.transaction() as session:
        tenant_id = add_tenant(session).id
        row = software_configs.add_config(session, tenant_id, str(uuid.uuid4()), name="c",
                                          group="script", body={"config": "echo"}, now=NOW)
        return tenant_id, row.id


def deploy(session: Session, tenant_id: str, config_id: str) -> SoftwareDeployment:
    return software_configs.add_deployment(
        session, tenant_id, str(uuid.uuid4()), config_id=config_id, server_id="srv",
        input_values={}, action="CREATE", status="IN_PROGRESS", status_reason="", now=NOW)


def waits_then(db: Database, holding: Callable[[Session], object],
               waiting: Callable[[Session], object]) -> BaseException | None:
    """``waiting`` in a transaction of its own, begun while ``holding``'s is open and
    uncommitted: it must wait for that commit. What it raised, if anything."""
    raised: list[BaseException | None] = []

    def run() -> None:
        try:
            with db.transaction() as session:
                waiting(session)
        except BaseException as exc:  # noqa: BLE001 -- handed to the test to judge
            raised.append(exc)
        else:
            raised.append(None)

    with db.transaction() as session:
        holding(session)
        other = threading.Thread(target=run)
        other.start()
        other.join(0.3)
        assert other.is_alive(), "it waits on the config's row lock"
    other.join(10)
    assert not other.is_alive()
    return raised[0]


def config_exists(db: Database, tenant_id: str, config_id: str) -> bool:
    with db.read() as session:
        return software_configs.find_config(session, tenant_id, config_id) is not None


def test_a_delete_waits_for_a_deployment_being_added_then_refuses(
        postgresql_database: Database) -> None:
    db = postgresql_database
    tenant_id, config_id = new_config(db)
    raised: Any = waits_then(
        db, lambda session: deploy(session, tenant_id, config_id),
        lambda session: software_configs.delete_config(session, tenant_id, config_id))
    assert isinstance(raised, InvalidRestrictedAction) and isinstance(raised, Conflict), (
        repr(raised))
    assert config_exists(db, tenant_id, config_id)


def test_a_deployment_waits_for_a_delete_of_its_config_then_refuses(
        postgresql_database: Database) -> None:
    db = postgresql_database
    tenant_id, config_id = new_config(db)
    raised: Any = waits_then(
        db, lambda session: software_configs.delete_config(session, tenant_id, config_id),
        lambda session: deploy(session, tenant_id, config_id))
    assert isinstance(raised, Invalid), repr(raised)
    assert raised.message == (f"Data supplied was not valid: Config with id {config_id} "
                              "not found")
    assert not config_exists(db, tenant_id, config_id)


def test_of_two_deletes_of_a_config_the_second_finds_none(
        postgresql_database: Database) -> None:
    db = postgresql_database
    tenant_id, config_id = new_config(db)
    def delete(session: Session) -> None:
        software_configs.delete_config(session, tenant_id, config_id)

    raised = waits_then(db, delete, delete)
    assert isinstance(raised, SoftwareConfigNotFound), repr(raised)
    assert not config_exists(db, tenant_id, config_id)

    # Two at once, neither holding back: one deletes it, the other is a 404.
    tenant_id, config_id = new_config(db)
    start = threading.Barrier(2)
    outcomes: list[BaseException | None] = []

    def racing() -> None:
        start.wait(5)
        try:
            with db.transaction() as session:
                software_configs.delete_config(session, tenant_id, config_id)
        except BaseException as exc:  # noqa: BLE001 -- judged below
            outcomes.append(exc)
        else:
            outcomes.append(None)

    racers = [threading.Thread(target=racing) for _ in range(2)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(10)
    assert len(outcomes) == 2 and outcomes.count(None) == 1, repr(outcomes)
    [error] = [exc for exc in outcomes if exc is not None]
    assert isinstance(error, SoftwareConfigNotFound), repr(error)
