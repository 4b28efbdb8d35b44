"""A proposed stack: from a request body to an unsaved stack row and its IR.

Every way of proposing a stack (create, adopt, update, and their dry runs: preview,
validate, update preview) goes through :meth:`Proposals.propose`, so each refuses bad
input exactly as a create does, naming the template path and line.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import Any

from engine import budget, reasons
from engine.clock import Clock
from engine.context import RequestContext
from engine.db.models import Stack
from engine.errors import BadRequest, RequestLimitExceeded, StackValidationFailed
from engine.ir.build import build, pseudo_parameters
from engine.ir.model import ResolvedStack
from engine.resources.registry import ResourceTypeRegistry
from engine.schema import extract_bool
from engine.services import stack_requests
from engine.template import event_sinks
from engine.template.environment import Environment, request_environment
from engine.template.loader import load, written_resources
from engine.template.parse import document
from engine.vocabulary import Action, Status

NAME_PATTERN = re.compile(r"^[a-zA-Z][a-zA-Z0-9_.-]{0,254}$")


@dataclasses.dataclass(frozen=True)
class StackLimits:
    max_template_bytes: int = 524288
    default_timeout_seconds: int = 3600
    max_stacks_per_tenant: int = -1  # -1: no limit
    # Operations let wait for their first worker before a write is refused
    # (engine.services.backlog); -1: no bound.
    max_pending_operations: int = -1
    # What an event sink may be ([event_sinks] allowed_schemes, max_per_stack).
    sink_rules: event_sinks.SinkRules = event_sinks.SinkRules()


@dataclasses.dataclass(frozen=True)
class Proposal:
    stack: Stack  # not added to any session: create stores it, the dry runs do not
    ir: ResolvedStack
    timeout_seconds: int


class Proposals:
    def __init__(self, registry: ResourceTypeRegistry, limits: StackLimits,
                 clock: Clock) -> None:
        self._registry = registry
        self._limits = limits
        self._clock = clock

    def propose(self, ctx: RequestContext, body: Mapping[str, Any], name: str,
                stack_id: str, *, require_parameters: bool = True) -> Proposal:
        """The checks every way of proposing a stack shares (create, preview, validate),
        from the request body to an unsaved stack row and its IR. Raises what create
        raises, naming the template path and line. The caller has checked the request's
        body (``check_body``); an update's, before it was merged with the stored one."""
        template = body.get("template")
        if template is None:
            raise BadRequest(reason="No template specified")
        size = len((template if isinstance(template, str) else json.dumps(template)).encode())
        if size > self._limits.max_template_bytes:
            raise RequestLimitExceeded(
                reason=f"Template size ({size} bytes) exceeds maximum allowed size "
                       f"({self._limits.max_template_bytes} bytes).")
        doc = document(template)
        # Counted as written, before any resource is read: a template past the limit
        # costs no more than its parse.
        # The limit is the budget's (one value for the API, groups and nested stacks).
        if written_resources(doc) > budget.limits().max_resources_per_stack:
            raise RequestLimitExceeded(reason="Maximum resources per stack exceeded.")
        files = stack_requests.files(body)
        timeout_mins = stack_requests.timeout_mins(body.get("timeout_mins"))
        hot = load(doc, files)
        environment = request_environment(
            body, {n: schema.type for n, schema in hot.parameters.items()})
        # The sinks the request brings: an update's stored ones that no longer pass were
        # dropped by ``update_body`` (``event_sinks.carried``).
        event_sinks.check_rules(environment.get("event_sinks") or (), self._limits.sink_rules)
        parameters = environment["parameters"]
        ir = build(hot, parameters, pseudo_parameters(stack_id, name, ctx.tenant_id),
                   self._registry.get, require_all=require_parameters,
                   constraints=self._registry.constraint,
                   environment=Environment.from_dict(environment))
        now = self._clock()
        timeout = timeout_mins * 60 if timeout_mins else self._limits.default_timeout_seconds
        stack = Stack(
            id=stack_id, tenant_id=ctx.tenant_id, name=name, action=Action.CREATE,
            status=Status.IN_PROGRESS, status_reason=reasons.stack_started(Action.CREATE),
            description=ir.description, template=doc.data,
            parameters=parameters, environment=environment, files=files,
            outputs=None, tags=stack_requests.tags(body.get("tags")),
            disable_rollback=extract_bool(body.get("disable_rollback", True), "disable_rollback"),
            timeout_mins=timeout_mins, owner=ctx.username, created_at=now)
        return Proposal(stack=stack, ir=ir, timeout_seconds=timeout)


def stack_name(body: Mapping[str, Any]) -> str:
    """The request's ``stack_name``, checked as Heat checks it."""
    name = body.get("stack_name")
    if not name:
        raise BadRequest(reason="No stack name specified")
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise StackValidationFailed(
            reason=f'Invalid stack name {name} must contain only alphanumeric or "_-." '
                   "characters, must start with alpha and must be 255 characters or less.")
    return name
