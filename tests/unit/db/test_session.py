"""The database session factory."""

from __future__ import annotations

import pathlib

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from engine.db.session import Database


def test_a_failed_statement_s_error_does_not_carry_its_values(tmp_path: pathlib.Path) -> None:
    # Errors are logged (the poison rule logs every unexpected one): a hidden parameter
    # bound into a statement must not reach that text.
    database = Database(f"sqlite:///{tmp_path / 'kiln.sqlite'}")
    try:
        with pytest.raises(DBAPIError) as caught, database.engine.connect() as connection:
            connection.execute(text("INSERT INTO no_such_table VALUES (:secret)"),
                               {"secret": "hunter2"})
    finally:
        database.dispose()

    assert "no_such_table" in str(caught.value)
    assert "hunter2" not in str(caught.value)
