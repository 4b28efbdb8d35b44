"""Lifecycle plugins as the API and the admin CLI see them: the ordered list, what each
holds for a stack, and dry-run verdicts for preview, validate and the door of a create or
update (refused when one would fail the operation)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from engine.config import OptionValue
from engine.context import RequestContext
from engine.errors import LifecycleDenied, OperatorViewForbidden
from engine.ir.model import ResolvedStack
from engine.lifecycle.planned import with_changes
from engine.lifecycle.registry import LifecycleRegistry
from engine.lifecycle.runner import DENY, TIMEOUT, Call, dry_run
from engine.lifecycle.snapshot import ResourceFacts, StackFacts, TreeMemberFacts, stack_view
from engine.lifecycle.view import ResourceChange
from engine.template.parameters import MASK, hidden_values
from engine.vocabulary import Action, Status

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class PluginRecord:
    """An installed lifecycle plugin; enabled ones have a position (1 runs first)."""

    name: str
    enabled: bool
    reason: str  # why it is disabled; "" when enabled
    entry_point: str  # "module:Class"
    distribution: str
    version: str
    position: int | None = None
    ordinal: int | None = None
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    timeout_seconds: float | None = None
    on_timeout: str | None = None
    supports_dry_run: bool | None = None
    tree_scope: str | None = None  # "every" stack of a nested tree, or the "root" only


@dataclasses.dataclass(frozen=True)
class ProposedStack:
    """A stack that does not exist yet (preview, validate), shaped like a stored one."""

    name: str
    tenant_id: str
    template: Mapping[str, Any]
    parameters: Mapping[str, Any]
    environment: Mapping[str, Any]
    files: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    facade: Mapping[str, Any] | None = None  # a proposed nested stack's resource_facade
    id: str = "None"  # what Heat's preview shows as the id
    action: str = Action.CREATE
    status: str = Status.IN_PROGRESS
    status_reason: str = ""
    tags: tuple[str, ...] = ()
    timeout_mins: int | None = None
    disable_rollback: bool = True


@dataclasses.dataclass(frozen=True)
class UpdateTarget:
    """The new side of an update, for a dry run of it."""

    stack: StackFacts  # the new definition
    ir: ResolvedStack
    stored: Mapping[str, ResourceFacts]  # the resources as they are
    stored_secrets: tuple[str, ...]  # hidden values of the stored definition


def _names(value: Any) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


class LifecycleService:
    def __init__(self, plugins: LifecycleRegistry,
                 options: Mapping[str, Sequence[OptionValue]] | None = None) -> None:
        """``options``: each plugin's configuration options by its name, read once when
        the API starts (``engine.config.plugin_options``); none by default."""
        self._plugins = plugins
        self._options = dict(options or {})

    def with_options(self, options: Mapping[str, Sequence[OptionValue]]) -> LifecycleService:
        """The same plugins, ``options`` their settings."""
        return LifecycleService(self._plugins, options)

    def at_the_door(self, timeout_seconds: float) -> LifecycleService:
        """The same plugins for the dry runs a create or update makes before it is stored:
        none may take longer than ``timeout_seconds`` (its own timeout when shorter), and
        one that times out refuses nothing (``on_timeout`` warn), since the door bounds the
        request's latency and passes no judgement of its own: the worker's real pre-op,
        with the plugin's whole timeout, decides."""
        return LifecycleService(LifecycleRegistry(
            [dataclasses.replace(loaded, on_timeout="warn",
                                 timeout_seconds=min(loaded.timeout_seconds, timeout_seconds))
             for loaded in self._plugins.plugins], self._plugins.disabled), self._options)

    @property
    def judges_dry_runs(self) -> bool:
        """Whether any enabled plugin supports dry runs (and so a dry run asks anyone)."""
        return any(type(loaded.plugin).supports_dry_run for loaded in self._plugins.plugins)

    def list_plugins(self, ctx: RequestContext | None = None) -> list[PluginRecord]:
        """Every installed plugin: the enabled ones in the order their pre-ops run, then
        the disabled ones by name. ``ctx`` (a request) must be an admin's; the operator's
        CLI passes none."""
        if ctx is not None and not ctx.is_admin:
            raise OperatorViewForbidden(what="the lifecycle plugins")
        records = []
        for position, loaded in enumerate(self._plugins.plugins, start=1):
            cls = type(loaded.plugin)
            records.append(PluginRecord(
                name=loaded.name, enabled=True, reason="",
                entry_point=loaded.entry_point or f"{cls.__module__}:{cls.__qualname__}",
                distribution=loaded.origin.distribution, version=loaded.origin.version,
                position=position, ordinal=loaded.ordinal,
                before=_names(cls.before), after=_names(cls.after),
                timeout_seconds=loaded.timeout_seconds, on_timeout=loaded.on_timeout,
                supports_dry_run=cls.supports_dry_run, tree_scope=loaded.tree_scope))
        records += [PluginRecord(name=off.name, enabled=False, reason=off.reason,
                                 entry_point=off.entry_point,
                                 distribution=off.origin.distribution,
                                 version=off.origin.version)
                    for off in self._plugins.disabled]
        return records

    def settings(self, name: str) -> list[dict[str, Any]]:
        """Plugin ``name``'s configuration options and their values, secret ones masked
        (whether set or not)."""
        return [{"group": option.group, "name": option.name, "secret": option.secret,
                 "value": MASK if option.secret else option.value}
                for option in self._options.get(name, ())]

    def describe(self, stack_id: str) -> list[dict[str, Any]]:
        """What each plugin holds for the stack (placements, reserved quota, ...)."""
        reports = []
        for loaded in self._plugins.plugins:
            item: dict[str, Any] = {"plugin": loaded.name}
            try:
                item["report"] = loaded.plugin.describe_stack(stack_id)
            except Exception as exc:  # noqa: BLE001 -- one broken report must not hide the rest
                LOG.warning("lifecycle plugin %s: describe_stack failed", loaded.name,
                            exc_info=True)
                item["report"] = None
                item["error"] = f"{type(exc).__name__}: {exc}"
            reports.append(item)
        return reports

    def dry_run(self, ctx: RequestContext, stack: StackFacts, ir: ResolvedStack | None,
                action: str = Action.CREATE, *, current: UpdateTarget | None = None,
                lineage: Sequence[TreeMemberFacts] = (),
                changes: Mapping[str, ResourceChange] | None = None
                ) -> list[dict[str, Any]]:
        """The verdict every plugin would give, reserving nothing. An update passes
        ``current`` (the new side); ``stack`` is then the stored definition, and the
        plugins see both as the update's pre-op will. ``changes`` are the planned
        changes (``planned.view_changes``), on both views; None: not made. A stored stack passes its
        ``lineage`` (``stack_trees.lineage``), so the views place it in its tree."""
        if current is not None:
            secrets = current.stored_secrets
        else:
            secrets = hidden_values(ir.parameter_schemas, ir.parameters) if ir else ()
        stored = current.stored if current is not None else {}
        view = stack_view(stack, action=action, ir=ir, stored=stored, secrets=secrets,
                          dry_run=True, lineage=lineage)
        current_view = None if current is None else stack_view(
            current.stack, action=action, ir=current.ir, stored=stored, dry_run=True,
            target=True, lineage=lineage, secrets=hidden_values(current.ir.parameter_schemas,
                                               current.ir.parameters))
        call = with_changes(
            Call(context=ctx, stack=view, action=action, current_stack=current_view), changes)
        return [record.as_dict() for record in dry_run(self._plugins.plugins, call)]


def refuse_blocked(verdicts: Sequence[Mapping[str, Any]]) -> None:
    """Raise ``LifecycleDenied`` naming each plugin whose dry-run verdict is blocking (a
    deny, an error, a timeout that fails): the operation it judged would fail on it.
    ``verdicts`` are ``LifecycleService.dry_run``'s records, hidden values already masked;
    warnings and allows pass."""
    refusals = [_refusal(v) for v in verdicts if v.get("blocking")]
    if refusals:
        raise LifecycleDenied(refusals="; ".join(refusals))


def _refusal(verdict: Mapping[str, Any]) -> str:
    how = {DENY: "denied", TIMEOUT: "timed out on"}.get(verdict["verdict"], "failed on")
    text = f"Lifecycle plugin {verdict['plugin']} {how} {verdict['action']}"
    if verdict.get("path"):  # a nested stack's verdict: its place in the tree
        text += f" of nested stack {verdict['path']}"
    return f"{text}: {verdict['message']}" if verdict.get("message") else text
