"""What ``GET .../stacks/{name}/{id}`` and the lookup that redirects to it
(engine.api.endpoints.stacks) ask the database, through the real app: one statement for
the token and one for the stack, each a plain indexed read with no transaction around it
(``Database.lookups``), whatever the stack holds; an admin's request for another tenant
adds one for that tenant. What they answer is in tests/functional/api/test_reads.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from engine.context import ADMIN_ROLE
from engine.db.session import Database
from engine.resources.registry import ResourceTypeRegistry
from tests.unit.api.endpoints.console_api import ConsoleApi
from tests.unit.conftest import Clock

TEMPLATE = """\
heat_template_version: 2018-08-31
parameters:
  password: {type: string, hidden: true, default: s3cret}
resources:
  word: {type: OS::Heat::RandomString}
outputs:
  value: {value: {get_attr: [word, value]}}
"""


@pytest.fixture
def api(db: Database, registry: ResourceTypeRegistry, clock: Clock) -> ConsoleApi:
    return ConsoleApi(db, registry, clock)


@pytest.fixture
def statements() -> Iterator[list[str]]:
    """Each statement sent from here on, through any engine (``Database.lookups`` on
    SQLite has one of its own): its verb and its first table."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        table = re.search(r"\bFROM (\w+)", statement)
        seen.append(f"{statement.split()[0]} {table.group(1) if table else ''}".strip())

    event.listen(Engine, "before_cursor_execute", record)
    yield seen
    event.remove(Engine, "before_cursor_execute", record)


def test_a_stack_is_shown_with_one_read_of_its_token_and_one_of_it(
        api: ConsoleApi, statements: list[str]) -> None:
    path = api.create("web", TEMPLATE)
    statements.clear()

    shown = api.call("GET", path)

    assert shown.status_code == 200, shown.text
    assert shown.json["stack"]["parameters"]["password"] == "******"
    assert [o["output_key"] for o in shown.json["stack"]["outputs"]] == ["value"]
    # No BEGIN, no other read but the rows its outputs read, resolved now.
    assert statements == ["SELECT tokens", "SELECT stacks", "SELECT resources"]


def test_the_lookup_by_name_reads_the_name_and_id_alone(
        api: ConsoleApi, statements: list[str]) -> None:
    path = api.create("web", TEMPLATE)
    statements.clear()

    found = api.call("GET", "/stacks/web")

    assert found.status_code == 302
    assert found.headers["location"].endswith(path)
    assert statements == ["SELECT tokens", "SELECT stacks"]


def test_an_admin_showing_another_tenant_s_stack_adds_a_read_of_that_tenant(
        api: ConsoleApi, statements: list[str]) -> None:
    path = api.create("web", TEMPLATE)
    admin = api.tokens[(api.b.id, ADMIN_ROLE)]
    api.call("GET", "/stacks", tenant=api.b.id, token=admin)  # its last_used_at written
    statements.clear()

    shown = api.call("GET", path, token=admin)

    assert shown.status_code == 200, shown.text
    assert statements == ["SELECT tokens", "SELECT tenants", "SELECT stacks",
                          "SELECT resources"]
