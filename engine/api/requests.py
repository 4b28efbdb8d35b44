"""Reading requests the way Heat does: JSON bodies, Heat's boolean and integer rules."""

from __future__ import annotations

import re
from typing import Any

import falcon

from engine.context import RequestContext
from engine.errors import BadRequest, RequestLimitExceeded
from engine.schema import check_tags, extract_bool, extract_int, strict_loads

# Deep enough for a template sent as an object (its own limit is 64 levels, a few levels
# down the body); far below where a recursive walk of the values would fail.
MAX_BODY_DEPTH = 128
# The largest integer SQLite and PostgreSQL compare (a list's ``limit``).
MAX_QUERY_INTEGER = 2**63 - 1
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
_TOO_DEEP = "The request body nests too deeply."


def context(req: falcon.Request) -> RequestContext:
    ctx: RequestContext = req.context.kiln
    return ctx


def base_url(req: falcon.Request, tenant_id: str) -> str:
    """Absolute ``…/v1/<tenant>``: heatclient cannot follow a relative Location."""
    return f"{req.prefix}/v1/{tenant_id}"


def json_body(req: falcon.Request) -> dict[str, Any]:
    if req.content_length is None:
        # A chunked body has no length up front: the server decodes it, we bound it.
        limit: int = req.context.max_body_bytes
        raw = req.stream.read(limit + 1)
        if len(raw) > limit:
            raise RequestLimitExceeded(
                reason=f"JSON body size exceeds maximum allowed size ({limit} bytes).")
    else:
        raw = req.bounded_stream.read()
    if not raw.strip():
        raise BadRequest(reason="The request body is empty; a JSON object is required.")
    body = _decode(raw)
    if not isinstance(body, dict):
        raise BadRequest(reason="The request body must be a JSON object.")
    return body


def flag(req: falcon.Request, name: str, default: bool = False) -> bool:
    value = req.get_param(name)
    return default if value is None else extract_bool(value, name)


def integer(req: falcon.Request, name: str, maximum: int = MAX_QUERY_INTEGER) -> int | None:
    """A query integer, read as Heat's ``extract_int`` reads it, at most ``maximum`` (by
    default the largest integer a database compares)."""
    value = req.get_param(name)
    return None if value is None else extract_int(value, name, maximum)


def tags(req: falcon.Request, name: str) -> tuple[str, ...]:
    """A comma-separated tag list, split as Heat splits it (no trimming)."""
    value = req.get_param(name)
    if not value:
        return ()
    found = tuple(value.split(","))
    check_tags(found)
    return found


def signal_details(req: falcon.Request) -> dict[str, Any] | None:
    """A signal's body as Heat reads it: JSON only when the content type is JSON (or
    missing, or ``text/plain``) and the body starts with ``{``; any other body is read,
    dropped and given to the resource as no details at all. Malformed JSON is a 400."""
    limit: int = req.context.max_body_bytes
    raw = req.bounded_stream.read(limit + 1)
    if len(raw) > limit:  # chunked: no length to refuse up front (BodyLimit)
        raise RequestLimitExceeded(
            reason=f"JSON body size exceeds maximum allowed size ({limit} bytes).")
    content_type = (req.content_type or "").split(";", 1)[0].strip()
    if not content_type or content_type.startswith("text/plain"):
        content_type = "application/json"
    if content_type not in ("JSON", "application/json") or not raw.startswith(b"{"):
        return None
    body = _decode(raw)
    return body if isinstance(body, dict) else None


def _decode(raw: bytes) -> Any:
    try:
        body = strict_loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(reason=f"The request body is not valid JSON: {exc}") from None
    except RecursionError:
        # Thousands of nested brackets: the decoder's recursion ran out, not the body's
        # size. Refused like any other body too large to handle.
        raise RequestLimitExceeded(reason=_TOO_DEEP) from None
    _check_storable(body)
    return body


def _check_storable(body: Any) -> None:
    """Refuse what JSON allows but Kiln can neither store nor walk: nesting deeper than
    ``MAX_BODY_DEPTH`` (every walk of the values would pay for it, and the recursive
    ones would fail), and text with NUL characters or unpaired surrogates (PostgreSQL
    refuses both, and the latter cannot be written back as UTF-8). Iterative: this is
    the walk that makes the others safe."""
    # (value, depth, (key, parent link)): the path is rebuilt only for the message.
    pending: list[tuple[Any, int, Any]] = [(body, 0, None)]
    while pending:
        value, depth, link = pending.pop()
        if isinstance(value, dict):
            children: Any = value.items()
        elif isinstance(value, list):
            children = enumerate(value)
        else:
            if isinstance(value, str) and _UNSTORABLE.search(value):
                _refuse_text(link)
            continue
        if depth >= MAX_BODY_DEPTH:
            raise RequestLimitExceeded(reason=_TOO_DEEP)
        for key, child in children:
            if isinstance(key, str) and _UNSTORABLE.search(key):
                _refuse_text((key, link))
            pending.append((child, depth + 1, (key, link)))


def _refuse_text(link: Any) -> None:
    parts: list[str] = []
    while link is not None:
        key, link = link
        parts.append(f"[{key}]" if isinstance(key, int) else str(key))
    where = ".".join(reversed(parts)).replace(".[", "[") or "the body"
    raise BadRequest(reason=f"The request body has a NUL character or an unpaired "
                            f"surrogate in {where}; Kiln cannot store such text.")


def sort_dir(req: falcon.Request) -> str | None:
    value = req.get_param("sort_dir")
    if value is not None and value not in ("asc", "desc"):
        raise BadRequest(reason=f'Unknown sort direction "{value}", must be "asc" or "desc".')
    return value


def multi(req: falcon.Request, names: list[str] | set[str] | None = None,
          skip: set[str] | None = None) -> dict[str, list[str]]:
    """Query parameters as lists (a repeated key becomes several values)."""
    found: dict[str, list[str]] = {}
    for key in req.params:
        if (names is not None and key not in names) or (skip and key in skip):
            continue
        found[key] = req.get_param_as_list(key) or []
    return found
