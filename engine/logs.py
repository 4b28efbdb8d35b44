"""Kiln's logging: where log lines go, their two formats, and the context each one carries.

:func:`configure` sets up the process's root logger once from plain settings (the
composition root reads them from ``[DEFAULT] log_*``). The log context is what a line is
about: the request that started the work, its tenant, the stack by name and id, the
operation. Code that starts work on something binds it for a block (:func:`bound`), and
:class:`ContextFilter`, on every handler, copies it onto each record made in that block,
third-party libraries' included, so that one grep for a request id follows it from the
API's access line into every worker line about the operation it created
(specs/logging.rst).

Secrets bound with the context (a stack's hidden parameter values, while a worker acts
on one of its resources) are masked in every line of the block, tracebacks included.

Nothing here knows a request, a stack or a database: callers bind plain strings.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import datetime
import errno
import logging
import logging.config
import logging.handlers
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping

from pythonjsonlogger.json import JsonFormatter as _LibraryJsonFormatter

#: The context fields, in the order the text format shows them; record attributes and
#: JSON keys of the same names.
FIELDS = ("request_id", "tenant_id", "stack_name", "stack_id", "operation_id")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
FORMATS = ("text", "json")
#: The logger of the API's one line per request (``engine.api.middleware.AccessLog``).
ACCESS_LOGGER = "kiln.access"
# The mask of hidden values everywhere Kiln shows a stack (engine.template.parameters
# MASK); written again here because this module sits below the template layer.
MASK = "******"
# Third-party loggers whose lines below this level carry what must never be logged:
# botocore's and urllib3's DEBUG lines hold whole request bodies (template values, hidden
# ones included), signed headers and credential lookups. DEBUG elsewhere stays DEBUG.
# The AWS plugin holds the same floor itself when it makes its clients, for a process
# that never called configure (plugins/resources/aws/clients.py).
FLOORS = {"botocore": logging.INFO, "boto3": logging.INFO, "s3transfer": logging.INFO,
          "urllib3": logging.INFO}
# A hidden value shorter than this is masked only where it stands alone (``mask_secret``).
SHORT_SECRET = 8
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
TEXT_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s %(context)s %(message)s"
# The name of the handler configure() installs, so that a second call (kiln-api's
# workers configure again after gunicorn's fork) replaces it instead of adding one.
_HANDLER_NAME = "kiln"


@dataclasses.dataclass(frozen=True)
class LogSettings:
    """Where and how a process logs; paths are absolute (``engine.config`` resolves them)."""

    level: str = "INFO"
    #: A file (watched, so that logrotate may move it); None: standard error.
    file: str | None = None
    format: str = "text"
    #: A ``logging.config.fileConfig`` file that replaces the three settings above.
    config_file: str | None = None


@dataclasses.dataclass(frozen=True)
class _Context:
    fields: Mapping[str, str]
    secrets: frozenset[str]


# The one piece of module state: a context variable is how a value follows the code
# that runs for one request or one step (each thread, and each copied context, sees its
# own), which is what a log line needs and what no argument list could carry into
# third-party code.
_CONTEXT: contextvars.ContextVar[_Context] = contextvars.ContextVar("kiln_log_context")
_NOTHING = _Context({}, frozenset())


def bind(*, secrets: Iterable[str] = (), **fields: str | None) -> contextvars.Token[_Context]:
    """Add ``fields`` (names of :data:`FIELDS`; None or "" leaves a field as it is) and
    ``secrets`` to the current context until :func:`unbind` is given the token. For a
    block, :func:`bound` is simpler; this pair is for work whose start and end are two
    calls (a Falcon middleware's request and response)."""
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise TypeError(f"not log context fields: {', '.join(sorted(unknown))}")
    current = _CONTEXT.get(_NOTHING)
    merged = {**current.fields, **{name: value for name, value in fields.items() if value}}
    added = frozenset(secret for secret in secrets if secret)
    return _CONTEXT.set(_Context(merged, current.secrets | added))


def unbind(token: contextvars.Token[_Context]) -> None:
    _CONTEXT.reset(token)


@contextlib.contextmanager
def bound(*, secrets: Iterable[str] = (), **fields: str | None) -> Iterator[None]:
    """The block's log lines carry ``fields`` and have ``secrets`` masked (see
    :func:`bind`)."""
    token = bind(secrets=secrets, **fields)
    try:
        yield
    finally:
        unbind(token)


def current() -> Mapping[str, str]:
    """The fields bound now (for tests and for code that hands work to a new thread:
    ``contextvars.copy_context`` carries the whole context)."""
    return dict(_CONTEXT.get(_NOTHING).fields)


class ContextFilter(logging.Filter):
    """Copies the bound context onto every record a handler receives (a field not bound
    is None) and masks the bound secrets in its message and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = _CONTEXT.get(_NOTHING)
        for name in FIELDS:
            if getattr(record, name, None) is None:  # a caller's ``extra`` wins
                setattr(record, name, context.fields.get(name))
        if context.secrets:
            _mask(record, sorted(context.secrets, key=len, reverse=True))
        return True


def _mask(record: logging.LogRecord, secrets: list[str]) -> None:
    """Mask ``secrets`` (longest first) in the record's text, made final here: the
    message with its arguments merged, and the traceback formatted (the formatters show
    ``exc_text`` when ``exc_info`` is gone). Never raises: a filter's error would reach
    the code that logged."""
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 -- arguments that do not fit the message
        # The handler would report it on stderr with the arguments unmasked.
        message = f"{record.msg!s} (arguments that do not fit it: {record.args!r})"
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    record.exc_info = None
    for secret in secrets:
        message = mask_secret(message, secret)
        if record.exc_text:
            record.exc_text = mask_secret(record.exc_text, secret)
    record.msg, record.args = message, None


def mask_secret(text: str, secret: str) -> str:
    """``text`` with ``secret`` masked. A short secret (a hidden "1" or "yes") is masked
    where it stands alone, not inside every word or number that holds it, which would
    leave the line unreadable and show where the value is not. ``redact``
    (``engine.template.parameters``) masks the short leaves of a json value this way."""
    if len(secret) >= SHORT_SECRET:
        return text.replace(secret, MASK)
    return re.sub(rf"(?<![\w-]){re.escape(secret)}(?![\w-])", MASK, text)


class TextFormatter(logging.Formatter):
    """``2026-11-26 04:00:00,123 1234 INFO engine.worker.operation [req-… tenant=…
    stack=web/… op=…] message``; ``[-]`` for a line about nothing bound. Control
    characters in the message (a newline in a resource name, say) are escaped, so that
    one record is one line and no text a tenant chose can start a line of its own; a
    traceback keeps its lines."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 -- logging's name
        message = _CONTROL.sub(lambda found: repr(found.group())[1:-1], record.message)
        return TEXT_FORMAT % {**record.__dict__, "message": message,
                              "context": context_text(record)}


def context_text(record: logging.LogRecord) -> str:
    values = {name: getattr(record, name, None) for name in FIELDS}
    if not any(values.values()):
        return "[-]"
    stack = (f"{values['stack_name'] or '-'}/{values['stack_id'] or '-'}"
             if values["stack_name"] or values["stack_id"] else "-")
    return (f"[{values['request_id'] or '-'} tenant={values['tenant_id'] or '-'} "
            f"stack={stack} op={values['operation_id'] or '-'}]")


class JsonFormatter(_LibraryJsonFormatter):
    """One JSON object per line: time (ISO 8601, UTC), level, logger, message, process,
    thread, the context fields (null when not bound), ``exc_info`` when there is a
    traceback, and whatever ``extra`` a line was logged with (the access line's method,
    path, status, duration_ms, remote_addr)."""

    def __init__(self) -> None:
        super().__init__(
            ["asctime", "levelname", "name", "message", "process", "threadName", *FIELDS],
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger",
                           "threadName": "thread"})

    def formatTime(self, record: logging.LogRecord,  # noqa: N802 -- logging's name
                   datefmt: str | None = None) -> str:
        moment = datetime.datetime.fromtimestamp(record.created, datetime.UTC)
        return moment.isoformat(timespec="milliseconds")


def configure(settings: LogSettings) -> None:
    """Set up the root logger: one handler (standard error, or the file), the format,
    the level, the context filter, and the floors of :data:`FLOORS`. Called again, it
    replaces what it set up before; with ``config_file``, that file's handlers get the
    context filter instead."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
        old.close()
    if settings.config_file is not None:
        if not os.path.isfile(settings.config_file):  # fileConfig would say KeyError
            raise FileNotFoundError(errno.ENOENT, "No such file", settings.config_file)
        # Loggers made before (at import) must keep logging: the file names few of them.
        logging.config.fileConfig(settings.config_file, disable_existing_loggers=False)
        for configured in root.handlers:
            adopt(configured)
        return
    handler: logging.Handler = (logging.handlers.WatchedFileHandler(settings.file)
                                if settings.file else logging.StreamHandler(sys.stderr))
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if settings.format == "json" else TextFormatter())
    root.setLevel(settings.level)  # first: the floors are measured against it
    adopt(handler)
    root.addHandler(handler)


def adopt(handler: logging.Handler) -> None:
    """Give a handler that someone else set up (cliff's, in kiln-manage; a
    ``config_file``'s) the context filter, and hold the floors of :data:`FLOORS`."""
    if not any(isinstance(f, ContextFilter) for f in handler.filters):
        handler.addFilter(ContextFilter())
    for name, floor in FLOORS.items():
        logger = logging.getLogger(name)
        if logger.getEffectiveLevel() < floor:
            logger.setLevel(floor)

