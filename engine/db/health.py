"""The database's side of ``GET /healthcheck``: one ``SELECT 1``, and error text an
operator may read without learning the database's password."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from engine.db.session import Database
from engine.errors import DatabaseUnavailable

HIDDEN = "***"


def ping(db: Database) -> str | None:
    """Run ``SELECT 1`` on a pooled connection in a read-only unit of work (no model is
    loaded, and on SQLite no write lock is taken); ``None`` when it answered, else why not:
    one line, with the URL and its password hidden."""
    try:
        with db.read() as session:
            session.execute(text("SELECT 1")).scalar_one()
    except DatabaseUnavailable as exc:
        return hide_url(db.url, str(exc.details.get("reason", exc.message)))
    except SQLAlchemyError as exc:
        return hide_url(db.url, _first_line(getattr(exc, "orig", None) or exc))
    return None


def hide_url(url: str, message: str) -> str:
    """``message`` without the URL or its password, whichever the driver put in it."""
    message = message.replace(url, "<database URL>")
    try:
        password = make_url(url).password
    except ArgumentError:
        return message
    return message.replace(str(password), HIDDEN) if password else message


def _first_line(error: object) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
