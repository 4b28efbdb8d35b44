"""The lifecycle-plugin registry: stevedore namespace ``kiln.lifecycle_plugins``, ordered.

Built once by ``engine.bootstrap`` and passed down. Every failure is a startup error that
names the plugin (Heat logs and skips, so a policy can silently stop being enforced):
a plugin that fails to import, instantiate or configure; two plugins with one name; a
``before``/``after`` naming no installed plugin; a ``tree_scope`` other than ``every`` or
``root``; an order that contradicts itself; an
``enabled``/``disabled``/per-plugin setting naming no installed plugin.

Order: a topological sort of the ``before``/``after`` constraints that, among the plugins
free to go next, always takes the lowest ``(effective ordinal, ordinal, name)``. Without
constraints that is simply "by ordinal, ties by name". A constraint moves the plugin that
declares it, never the one it names: ``before = ("x",)`` lowers the declaring plugin's
effective ordinal to x's, so it runs just ahead of x; ``after = ("x",)`` raises it to
x's, so it runs just behind x. Everything else keeps its place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import EntryPoint
from typing import Any

from stevedore import ExtensionManager
from stevedore.extension import Extension

from engine.distributions import Origin, origins
from engine.errors import PluginConfigInvalid, PluginLoadFailed, PluginOrderInvalid
from engine.ir.graph import topological_order
from engine.lifecycle.base import (
    EVERY_STACK,
    ROOT_STACK,
    TREE_SCOPES,
    LifecyclePlugin,
    PluginServices,
)

NAMESPACE = "kiln.lifecycle_plugins"
ON_TIMEOUT = ("fail", "warn")


@dataclasses.dataclass(frozen=True)
class LifecycleSettings:
    """``[lifecycle_plugins]``, as plain values."""

    enabled: tuple[str, ...] = ()  # empty: every installed plugin
    disabled: tuple[str, ...] = ()
    timeout_seconds: float = 30.0
    on_timeout: str = "fail"
    plugin_timeout_seconds: Mapping[str, float] = dataclasses.field(default_factory=dict)
    plugin_on_timeout: Mapping[str, str] = dataclasses.field(default_factory=dict)
    approval_window_seconds: float = 86400.0


@dataclasses.dataclass(frozen=True)
class LoadedPlugin:
    name: str
    plugin: LifecyclePlugin
    ordinal: int
    timeout_seconds: float
    on_timeout: str  # "fail" | "warn"
    origin: Origin  # the package that declared it
    entry_point: str = ""  # "module:Class", as declared
    tree_scope: str = EVERY_STACK  # the plugin's ``tree_scope``, checked at load
    # How long an operation this plugin parks (``Pending``) waits for a decision, unless
    # the verdict says.
    approval_window_seconds: float = 86400.0

    @property
    def distribution(self) -> str:
        """"<name> <version>" of the package that declared it, or ""."""
        return str(self.origin)

    def wants(self, nested_depth: int) -> bool:
        """Whether the plugin is called for a stack this deep in its tree (0: the root)."""
        return self.tree_scope != ROOT_STACK or nested_depth == 0


@dataclasses.dataclass(frozen=True)
class DisabledPlugin:
    """An installed lifecycle plugin the configuration leaves out, and why."""

    name: str
    entry_point: str
    origin: Origin
    reason: str


@dataclasses.dataclass(frozen=True)
class _Declared:
    plugin_class: type[LifecyclePlugin]
    entry_point: str
    origin: Origin


class LifecycleRegistry:
    def __init__(self, plugins: Sequence[LoadedPlugin],
                 disabled: Sequence[DisabledPlugin] = ()) -> None:
        self._plugins = tuple(plugins)
        self._disabled = tuple(disabled)
        self._by_name = {loaded.name: loaded for loaded in self._plugins}

    @classmethod
    def load(cls, settings: LifecycleSettings, services: PluginServices,
             namespace: str = NAMESPACE) -> LifecycleRegistry:
        def fail(_manager: ExtensionManager[Any], entry_point: EntryPoint,
                 error: BaseException) -> None:
            name = getattr(entry_point, "name", str(entry_point))
            raise PluginLoadFailed(name=name, namespace=namespace, reason=error) from error

        manager: ExtensionManager[Any] = ExtensionManager(
            namespace, invoke_on_load=False, on_load_failure_callback=fail)
        return cls.from_extensions(manager.extensions, settings, services, namespace)

    @classmethod
    def from_extensions(cls, extensions: Iterable[Extension[Any]], settings: LifecycleSettings,
                        services: PluginServices,
                        namespace: str = NAMESPACE) -> LifecycleRegistry:
        classes = _classes_by_name(extensions, namespace)
        selected = _select(classes, settings)
        loaded = {}
        for name in selected:
            declared = classes[name]
            plugin = _instantiate(name, declared.plugin_class, services, namespace)
            loaded[name] = LoadedPlugin(
                name=name, plugin=plugin, ordinal=_ordinal(name, plugin, namespace),
                timeout_seconds=settings.plugin_timeout_seconds.get(
                    name, settings.timeout_seconds),
                on_timeout=settings.plugin_on_timeout.get(name, settings.on_timeout),
                origin=declared.origin, entry_point=declared.entry_point,
                tree_scope=_tree_scope(name, plugin, namespace),
                approval_window_seconds=settings.approval_window_seconds)
        disabled = [
            DisabledPlugin(name=name, entry_point=declared.entry_point, origin=declared.origin,
                           reason=("listed in [lifecycle_plugins] disabled"
                                   if name in settings.disabled else
                                   "not listed in [lifecycle_plugins] enabled"))
            for name, declared in sorted(classes.items()) if name not in loaded]
        return cls(order(loaded.values(), set(classes)), disabled)

    @property
    def plugins(self) -> tuple[LoadedPlugin, ...]:
        """Enabled plugins in pre-op order."""
        return self._plugins

    @property
    def disabled(self) -> tuple[DisabledPlugin, ...]:
        """Installed plugins the configuration leaves out, by name."""
        return self._disabled

    def names(self) -> list[str]:
        return [loaded.name for loaded in self._plugins]

    def find(self, name: str) -> LoadedPlugin | None:
        return self._by_name.get(name)

    def placement_of(self, stack_id: str, resource_name: str) -> Mapping[str, Any] | None:
        """Where the first plugin (in pre-op order) that placed the resource put it."""
        for loaded in self._plugins:
            placed = loaded.plugin.placement_of(stack_id, resource_name)
            if placed is not None:
                return placed
        return None


def order(plugins: Iterable[LoadedPlugin], installed: set[str]) -> list[LoadedPlugin]:
    """Pre-op order; see the module documentation. Raises PluginOrderInvalid."""
    by_name = {loaded.name: loaded for loaded in plugins}
    follows: dict[str, set[str]] = {name: set() for name in by_name}  # name -> must precede
    declared: dict[str, dict[str, list[str]]] = {
        name: {"before": [], "after": []} for name in by_name}
    for name, loaded in by_name.items():
        plugin_class = type(loaded.plugin)
        for relation, others in (("before", plugin_class.before),
                                 ("after", plugin_class.after)):
            for other in _names(others, f"{name}.{relation}"):
                if other not in installed:
                    raise PluginOrderInvalid(
                        reason=f"plugin {name} is to run {relation} {other!r}, which is "
                               f"not an installed lifecycle plugin")
                if other not in by_name or other == name:
                    continue  # installed but disabled: the constraint has nothing to order
                declared[name][relation].append(other)
                if relation == "before":
                    follows[other].add(name)
                else:
                    follows[name].add(other)
    plain = _sorted(follows, {name: (p.ordinal, name) for name, p in by_name.items()})
    effective = {name: loaded.ordinal for name, loaded in by_name.items()}
    for name in plain:  # the plugins it follows are settled first
        effective[name] = max([effective[name],
                               *(effective[other] for other in declared[name]["after"])])
    for name in reversed(plain):  # the plugins it precedes are settled first
        effective[name] = min([effective[name],
                               *(effective[other] for other in declared[name]["before"])])
    keys = {name: (effective[name], p.ordinal, name) for name, p in by_name.items()}
    return [by_name[name] for name in _sorted(follows, keys)]


def _sorted(follows: Mapping[str, set[str]], keys: Mapping[str, tuple[Any, ...]]) -> list[str]:
    """A topological sort taking the lowest key among the free plugins."""
    result = topological_order(follows, key=keys.__getitem__)
    if len(result) < len(follows):
        stuck = sorted(set(follows) - set(result))
        raise PluginOrderInvalid(
            reason=f"the before/after constraints of {', '.join(stuck)} form a cycle")
    return result


def _classes_by_name(extensions: Iterable[Extension[Any]],
                     namespace: str) -> dict[str, _Declared]:
    classes: dict[str, _Declared] = {}
    declared_by = origins(namespace)
    for ext in extensions:
        plugin_class = ext.plugin
        if ext.name in classes and classes[ext.name].plugin_class is not plugin_class:
            raise PluginLoadFailed(name=ext.name, namespace=namespace,
                                   reason="two installed plugins declare this name")
        if not (isinstance(plugin_class, type) and issubclass(plugin_class, LifecyclePlugin)):
            raise PluginLoadFailed(
                name=ext.name, namespace=namespace,
                reason="not a subclass of engine.lifecycle.base.LifecyclePlugin")
        value = str(getattr(ext.entry_point, "value", ""))
        classes[ext.name] = _Declared(
            plugin_class, value, declared_by.get((ext.name, value), Origin("", "")))
    return classes


def _select(classes: Mapping[str, Any], settings: LifecycleSettings) -> list[str]:
    for option, names in (("enabled", settings.enabled), ("disabled", settings.disabled),
                          ("plugin_timeout_seconds", settings.plugin_timeout_seconds),
                          ("plugin_on_timeout", settings.plugin_on_timeout)):
        unknown = sorted(set(names) - set(classes))
        if unknown:
            raise PluginConfigInvalid(
                option=option, reason=f"{', '.join(unknown)}: no such lifecycle plugin "
                f"is installed (installed: {', '.join(sorted(classes)) or 'none'})")
    for name, value in {"": settings.on_timeout, **settings.plugin_on_timeout}.items():
        if value not in ON_TIMEOUT:
            option = "plugin_on_timeout" if name else "on_timeout"
            raise PluginConfigInvalid(option=option,
                                      reason=f"{value!r} is not one of fail, warn")
    for name, seconds in settings.plugin_timeout_seconds.items():
        if not seconds > 0:
            raise PluginConfigInvalid(option="plugin_timeout_seconds",
                                      reason=f"{name}: {seconds!r} is not a positive number")
    names = settings.enabled or tuple(sorted(classes))
    return [name for name in names if name not in settings.disabled]


def _instantiate(name: str, plugin_class: type[LifecyclePlugin], services: PluginServices,
                 namespace: str) -> LifecyclePlugin:
    try:
        plugin = plugin_class()
        plugin.configure(services)
    except Exception as exc:  # noqa: BLE001 -- any failure here stops the process, named
        raise PluginLoadFailed(name=name, namespace=namespace,
                               reason=f"{type(exc).__name__}: {exc}") from exc
    return plugin


def _ordinal(name: str, plugin: LifecyclePlugin, namespace: str) -> int:
    try:
        ordinal = plugin.get_ordinal()
    except Exception as exc:  # noqa: BLE001
        raise PluginLoadFailed(name=name, namespace=namespace,
                               reason=f"get_ordinal() failed: {exc}") from exc
    if not isinstance(ordinal, int) or isinstance(ordinal, bool):
        raise PluginLoadFailed(name=name, namespace=namespace,
                               reason=f"get_ordinal() returned {ordinal!r}, not an integer")
    return ordinal


def _tree_scope(name: str, plugin: LifecyclePlugin, namespace: str) -> str:
    scope = plugin.tree_scope
    if not isinstance(scope, str) or scope not in TREE_SCOPES:
        raise PluginLoadFailed(name=name, namespace=namespace,
                               reason=f"tree_scope {scope!r} is not one of "
                                      f"{', '.join(TREE_SCOPES)}")
    return scope


def _names(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)  # a lone name is a common slip for a one-element tuple
    if not all(isinstance(item, str) for item in value):
        raise PluginOrderInvalid(reason=f"{where} must be a tuple of plugin names")
    return tuple(value)
