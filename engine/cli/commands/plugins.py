"""``kiln-manage plugins list|check|describe`` and ``resource-types list``: what is
installed, from which package, and in which order lifecycle plugins run."""

from __future__ import annotations

import argparse
from typing import Any

from cliff.command import Command

from engine.cli.base import KilnCommand, KilnLister, Structured

PLUGIN_FIELDS = ("position", "name", "enabled", "reason", "entry_point", "distribution",
                 "version", "ordinal", "before", "after", "timeout_seconds", "on_timeout",
                 "dry_run", "tree_scope")


class PluginsList(KilnLister):
    """List the lifecycle plugins in the order they run, then the disabled ones and why.

    Enabled plugins are in the exact order their pre-ops run (post-ops run in reverse).
    Listing loads them as the engines do at start, so a broken registry fails here too
    (see plugins check)."""

    example = "kiln-manage plugins list -c position -c name -c distribution"

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        rows = [(p.position, p.name, p.enabled, p.reason, p.entry_point, p.distribution,
                 p.version, p.ordinal, ", ".join(p.before), ", ".join(p.after),
                 p.timeout_seconds, p.on_timeout, p.supports_dry_run, p.tree_scope)
                for p in self.kiln.lifecycle_service.list_plugins()]
        return PLUGIN_FIELDS, rows


class PluginsCheck(KilnCommand):
    """Load every plugin as an engine would at start; exit 1 with the reason if one fails.

    Resource types and lifecycle plugins both: a plugin that fails to import or
    configure, an order that contradicts itself, or a setting naming no plugin."""

    example = "kiln-manage plugins check && systemctl restart kiln-engine"

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        types = self.kiln.registry.names()
        plugins = self.kiln.lifecycle.names()
        print(f"OK: {len(types)} resource types; {len(plugins)} lifecycle plugins enabled, "
              f"in order: {', '.join(plugins) or 'none'}")
        return 0


class PluginsDescribe(KilnLister):
    """Show what each lifecycle plugin holds for a stack, as it reports it.

    For the built-in ones: placement's placements and quota's reserved counts."""

    of_stack = True
    example = "kiln-manage plugins describe web -f yaml"


    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        ref = self.stack_ref(parsed_args)
        reports = self.kiln.lifecycle_service.describe(ref.id)
        return (("plugin", "report", "error"),
                [(r["plugin"], Structured(r["report"]), r.get("error")) for r in reports])


class ResourceTypesList(KilnLister):
    """List the resource types the engines load, with the package providing each."""

    example = "kiln-manage resource-types list -f csv"

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        return (("name", "support_status", "distribution", "version", "entry_point"),
                [(t.name, t.support_status, t.distribution, t.version, t.entry_point)
                 for t in self.kiln.resource_types.installed_resource_types()])


COMMANDS: dict[str, type[Command]] = {
    "plugins list": PluginsList, "plugins check": PluginsCheck,
    "plugins describe": PluginsDescribe, "resource-types list": ResourceTypesList,
}
