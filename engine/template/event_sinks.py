"""An environment's ``event_sinks``: where a stack's events are sent, and how a sink is
checked and shown (specs/event-sinks.rst).

Heat's only sink type is ``zaqar-queue``; Kiln has no Zaqar, so its one type is its own,
``webhook``: every event is POSTed to ``target``, signed with ``secret``. Any other type
is refused with a 400 naming the sink, never stored and silently ignored. The secret is a
hidden value: :func:`masked` is what every view of an environment shows.

Pure: plain data in, plain data out (the operator's rules, :class:`SinkRules`, are given
by the caller that has the configuration, :func:`check_rules`).
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from engine import config
from engine.errors import BadRequest
from engine.template.parameters import MASK

WEBHOOK = "webhook"
#: The keys a webhook sink takes.
WEBHOOK_KEYS = ("type", "target", "secret")
#: The schemes Kiln can send to at all; ``[event_sinks] allowed_schemes`` narrows them.
SCHEMES = ("http", "https")
MAX_TARGET_CHARS = 2048
MAX_SECRET_CHARS = 1024


@dataclasses.dataclass(frozen=True)
class SinkRules:
    """The operator's ``[event_sinks]`` rules a stack's sinks are held to when it is
    created or updated (the proposal's, ``engine.services.proposals``)."""

    schemes: tuple[str, ...] = SCHEMES
    max_per_stack: int = config.declared_default("event_sinks", "max_per_stack")


def check(sinks: Sequence[Any], name: str) -> None:
    """Each sink of an environment's ``event_sinks`` (``name``: the environment's name in
    messages): a map with a supported type and that type's keys."""
    for index, sink in enumerate(sinks):
        _check_sink(sink, f"event_sinks[{index}] in {name}", name)


def _check_sink(sink: Any, where: str, name: str) -> None:
    if not isinstance(sink, Mapping) or not isinstance(sink.get("type"), str):
        raise BadRequest(reason=f"Each event sink in {name} must be a map with a type")
    if sink["type"] != WEBHOOK:
        raise BadRequest(reason=f'The event sink type "{sink["type"]}" ({where}) is not '
                                f'supported by Kiln, which has no Zaqar; use "{WEBHOOK}"')
    unknown = sorted(str(key) for key in sink if key not in WEBHOOK_KEYS)
    if unknown:
        raise BadRequest(reason=f"Unknown key(s) {', '.join(unknown)} in {where}; a "
                                f"webhook sink takes {', '.join(WEBHOOK_KEYS)}")
    _check_target(sink.get("target"), where)
    secret = sink.get("secret")
    if not isinstance(secret, str) or not secret or len(secret) > MAX_SECRET_CHARS:
        raise BadRequest(reason=f"{where} needs a secret: a string of 1 to "
                                f"{MAX_SECRET_CHARS} characters to sign its requests with")
    if secret == MASK:
        # What every view shows in its place (abandon data, GET …/environment).
        raise BadRequest(reason=f"The secret of {where} is the mask shown in its place; "
                                "give the secret itself")


def _check_target(target: Any, where: str) -> None:
    if not isinstance(target, str) or len(target) > MAX_TARGET_CHARS:
        raise BadRequest(reason=f"{where} needs a target: an http or https URL of at most "
                                f"{MAX_TARGET_CHARS} characters")
    try:
        parts = urllib.parse.urlsplit(target)
        parts.port  # noqa: B018 -- raises ValueError for a port that is no number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in SCHEMES or not parts.hostname:
        raise BadRequest(reason=f'The target "{shown_target(target)}" of {where} is not an '
                                "http or https URL with a host")
    if parts.username is not None or parts.password is not None:
        # It would be shown by every read of the environment, where the secret is masked.
        raise BadRequest(reason=f"The target of {where} may not carry a user name or "
                                "password; the receiver checks the secret's signature")


def check_rules(sinks: Sequence[Any], rules: SinkRules) -> None:
    """Refuse more sinks than a stack may have, or a target whose scheme the operator
    does not allow (sinks :func:`check` has passed)."""
    if len(sinks) > rules.max_per_stack:
        raise BadRequest(reason=f"Too many event sinks (event_sinks in environment): "
                                f"{len(sinks)} given, at most {rules.max_per_stack} per "
                                "stack")
    for index, sink in enumerate(sinks):
        _check_scheme(sink, f"event_sinks[{index}]", rules)


def _check_scheme(sink: Mapping[str, Any], where: str, rules: SinkRules) -> None:
    scheme = urllib.parse.urlsplit(str(sink.get("target", ""))).scheme
    if scheme not in rules.schemes:
        raise BadRequest(reason=f'The scheme "{scheme}" of {where} is not allowed here; '
                                f"allowed: {', '.join(rules.schemes)}")


def carried(sinks: Any, rules: SinkRules) -> tuple[list[Any], list[str]]:
    """The stored sinks an update that does not name its own keeps: (those still valid,
    the reason each other one is dropped). A stack stored before sinks were checked (or
    before the operator narrowed the rules) may hold sinks a request would be refused
    for; the tenant did not send them again, so they are dropped, not refused."""
    kept: list[Any] = []
    dropped: list[str] = []
    for index, sink in enumerate(sinks if isinstance(sinks, list) else ()):
        where = f"event_sinks[{index}] of the stored environment"
        try:
            _check_sink(sink, where, "the stored environment")
            _check_scheme(sink, where, rules)
        except BadRequest as exc:
            dropped.append(exc.message)
            continue
        if len(kept) >= rules.max_per_stack:
            dropped.append(f"{where} is beyond the {rules.max_per_stack} a stack may have")
            continue
        kept.append(sink)
    return kept, dropped


def masked(sinks: Any) -> Any:
    """``sinks`` as every view shows them: each sink's secret masked."""
    if not isinstance(sinks, list):
        return sinks
    return [{**sink, "secret": MASK} if isinstance(sink, Mapping) and "secret" in sink
            else sink for sink in sinks]


def shown_target(target: str) -> str:
    """A target as a log line or an error may show it: scheme, host and port, path;
    never a user name, password or query (which may carry a credential)."""
    try:
        parts = urllib.parse.urlsplit(target)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<not a URL>"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}{port}{parts.path}"
