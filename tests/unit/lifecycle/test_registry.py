"""engine.lifecycle.registry: order, settings and the startup errors that name a plugin.

Extensions are built the way stevedore builds them (an ``Extension`` around a real
``EntryPoint``), so no package has to be installed for these tests.
"""

from __future__ import annotations

import datetime
import pathlib
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from typing import Any

import pytest
from oslo_config import cfg
from stevedore.extension import Extension

from engine.db.session import Database
from engine.distributions import Origin
from engine.errors import PluginConfigInvalid, PluginLoadFailed, PluginOrderInvalid
from engine.lifecycle.base import DEFAULT_ORDINAL, LifecyclePlugin, PluginServices
from engine.lifecycle.registry import (
    NAMESPACE,
    LifecycleRegistry,
    LifecycleSettings,
    LoadedPlugin,
)

NOW = datetime.datetime(2026, 11, 22, 12, 0, tzinfo=datetime.UTC)


@pytest.fixture
def services(tmp_path: pathlib.Path) -> Iterator[PluginServices]:
    database = Database(f"sqlite:///{tmp_path}/unused.sqlite")
    yield PluginServices(conf=cfg.ConfigOpts(), database=database, clock=lambda: NOW)
    database.dispose()


def plugin(ordinal: int = DEFAULT_ORDINAL, before: Any = (), after: Any = ()
           ) -> type[LifecyclePlugin]:
    """A plugin class of its own (so two of them are never the same class)."""
    run_before, run_after = before, after

    class Plugin(LifecyclePlugin):
        before = run_before
        after = run_after

        def get_ordinal(self) -> int:
            return ordinal

    return Plugin


def ext(name: str, plugin_class: Any) -> Extension[Any]:
    entry_point = EntryPoint(name=name, value=f"tests.fake.{name}:Plugin", group=NAMESPACE)
    return Extension(name, entry_point, plugin_class, None)


def load(services: PluginServices, settings: LifecycleSettings | None = None,
         **classes: Any) -> LifecycleRegistry:
    return LifecycleRegistry.from_extensions(
        [ext(name, cls) for name, cls in classes.items()], settings or LifecycleSettings(),
        services)


# --- order --------------------------------------------------------------------------------


def test_plugins_run_by_ordinal_and_ties_by_name(services: PluginServices) -> None:
    registry = load(services, zeta=plugin(10), alpha=plugin(50), beta=plugin(10),
                    default=plugin())
    assert registry.names() == ["beta", "zeta", "alpha", "default"]
    assert [loaded.ordinal for loaded in registry.plugins] == [10, 10, 50, DEFAULT_ORDINAL]


def test_the_loaded_plugin_carries_the_defaults_and_is_found_by_name(
        services: PluginServices) -> None:
    registry = load(services, only=plugin())
    loaded = registry.find("only")
    assert loaded is not None
    assert isinstance(loaded.plugin, LifecyclePlugin)
    assert (loaded.name, loaded.timeout_seconds, loaded.on_timeout, loaded.distribution) == (
        "only", 30.0, "fail", "")  # an entry point built here belongs to no distribution
    assert registry.find("missing") is None


def test_after_moves_a_plugin_behind_one_with_a_higher_ordinal(
        services: PluginServices) -> None:
    registry = load(services, x=plugin(100), early=plugin(1, after=("x",)), mid=plugin(50))
    assert registry.names() == ["mid", "x", "early"]


def test_before_moves_a_plugin_ahead_of_one_with_a_lower_ordinal(
        services: PluginServices) -> None:
    registry = load(services, first=plugin(10), late=plugin(200, before=("first",)))
    assert registry.names() == ["late", "first"]


def test_a_held_back_plugin_does_not_hold_back_the_free_ones(
        services: PluginServices) -> None:
    # "late" must precede "first" (10), so it runs early too, just ahead of it; "other"
    # keeps its own place.
    registry = load(services, first=plugin(10), late=plugin(200, before=("first",)),
                    other=plugin(100))
    assert registry.names() == ["late", "first", "other"]


def test_constraints_only_refine_the_ordinal_order(services: PluginServices) -> None:
    # y moves just behind x, w just ahead of z; everything else keeps (ordinal, name).
    registry = load(services, x=plugin(100), y=plugin(1, after=("x",)), z=plugin(50),
                    w=plugin(200, before=("z",)), a=plugin(150))
    assert registry.names() == ["w", "z", "x", "y", "a"]


def test_a_lone_name_is_read_as_a_one_element_tuple(services: PluginServices) -> None:
    registry = load(services, x=plugin(100), y=plugin(1, after="x"))
    assert registry.names() == ["x", "y"]


def test_a_plugin_naming_itself_is_not_a_cycle(services: PluginServices) -> None:
    registry = load(services, solo=plugin(after=("solo",)), other=plugin(1))
    assert registry.names() == ["other", "solo"]


def test_a_cycle_is_a_startup_error_naming_its_plugins(services: PluginServices) -> None:
    with pytest.raises(PluginOrderInvalid) as caught:
        load(services, a=plugin(after=("b",)), b=plugin(after=("c",)), c=plugin(after=("a",)),
             free=plugin())
    assert str(caught.value) == ("Lifecycle plugins cannot be ordered: the before/after "
                                 "constraints of a, b, c form a cycle")


def test_before_and_after_of_each_other_is_a_cycle(services: PluginServices) -> None:
    with pytest.raises(PluginOrderInvalid, match="constraints of one, two form a cycle"):
        load(services, one=plugin(before=("two",)), two=plugin(before=("one",)))


@pytest.mark.parametrize("relation", ["before", "after"])
def test_naming_no_installed_plugin_in_an_order_constraint_fails(
        services: PluginServices, relation: str) -> None:
    with pytest.raises(PluginOrderInvalid) as caught:
        constraint: dict[str, Any] = {relation: ("licence",)}
        load(services, quota=plugin(**constraint))
    assert str(caught.value) == (
        f"Lifecycle plugins cannot be ordered: plugin quota is to run {relation} 'licence', "
        "which is not an installed lifecycle plugin")


def test_an_order_constraint_must_be_names(services: PluginServices) -> None:
    with pytest.raises(PluginOrderInvalid, match=r"quota\.after must be a tuple of plugin"):
        load(services, quota=plugin(after=(1,)))


def test_a_constraint_on_an_installed_but_disabled_plugin_is_ignored(
        services: PluginServices) -> None:
    classes = {"a": plugin(1, after=("b",)), "b": plugin(200, before=("c",)), "c": plugin(2)}
    disabled = load(services, LifecycleSettings(disabled=("b",)), **classes)
    assert disabled.names() == ["a", "c"]
    not_enabled = load(services, LifecycleSettings(enabled=("c", "a")), **classes)
    assert not_enabled.names() == ["a", "c"]


# --- settings -----------------------------------------------------------------------------


def test_enabled_selects_a_subset_and_does_not_decide_the_order(
        services: PluginServices) -> None:
    classes = {"a": plugin(30), "b": plugin(20), "c": plugin(10)}
    for enabled in (("a", "c"), ("c", "a")):
        registry = load(services, LifecycleSettings(enabled=enabled), **classes)
        assert registry.names() == ["c", "a"]


def test_disabled_removes_a_plugin_even_when_enabled(services: PluginServices) -> None:
    classes = {"a": plugin(), "b": plugin(), "c": plugin()}
    assert load(services, LifecycleSettings(disabled=("b",)), **classes).names() == ["a", "c"]
    assert load(services, LifecycleSettings(enabled=("a", "b"), disabled=("b",)),
                **classes).names() == ["a"]


def test_a_disabled_plugin_is_never_instantiated(services: PluginServices) -> None:
    class Broken(LifecyclePlugin):
        def __init__(self) -> None:
            raise RuntimeError("must not be built")

    registry = load(services, LifecycleSettings(disabled=("broken",)), broken=Broken,
                    fine=plugin())
    assert registry.names() == ["fine"]


def test_per_plugin_timeouts_override_the_defaults(services: PluginServices) -> None:
    settings = LifecycleSettings(timeout_seconds=5, on_timeout="warn",
                                 plugin_timeout_seconds={"slow": 60.0},
                                 plugin_on_timeout={"slow": "fail"})
    registry = load(services, settings, slow=plugin(), quick=plugin())
    slow, quick = registry.find("slow"), registry.find("quick")
    assert slow is not None and quick is not None
    assert (slow.timeout_seconds, slow.on_timeout) == (60.0, "fail")
    assert (quick.timeout_seconds, quick.on_timeout) == (5, "warn")


@pytest.mark.parametrize("option, settings", [
    ("enabled", LifecycleSettings(enabled=("a", "nope"))),
    ("disabled", LifecycleSettings(disabled=("nope",))),
    ("plugin_timeout_seconds", LifecycleSettings(plugin_timeout_seconds={"nope": 3.0})),
    ("plugin_on_timeout", LifecycleSettings(plugin_on_timeout={"nope": "warn"})),
])
def test_a_setting_naming_no_installed_plugin_is_a_startup_error(
        services: PluginServices, option: str, settings: LifecycleSettings) -> None:
    with pytest.raises(PluginConfigInvalid) as caught:
        load(services, settings, a=plugin(), b=plugin())
    assert str(caught.value) == (
        f"Lifecycle plugin configuration [lifecycle_plugins] {option}: nope: no such "
        "lifecycle plugin is installed (installed: a, b)")


def test_naming_a_plugin_when_none_is_installed_says_so(services: PluginServices) -> None:
    with pytest.raises(PluginConfigInvalid, match=r"\(installed: none\)"):
        load(services, LifecycleSettings(enabled=("policy",)))


@pytest.mark.parametrize("option, settings, reason", [
    ("on_timeout", LifecycleSettings(on_timeout="ignore"), "'ignore' is not one of fail, warn"),
    ("plugin_on_timeout", LifecycleSettings(plugin_on_timeout={"a": "skip"}),
     "'skip' is not one of fail, warn"),
    ("plugin_timeout_seconds", LifecycleSettings(plugin_timeout_seconds={"a": 0}),
     "a: 0 is not a positive number"),
])
def test_bad_timeout_settings_are_startup_errors(
        services: PluginServices, option: str, settings: LifecycleSettings,
        reason: str) -> None:
    with pytest.raises(PluginConfigInvalid) as caught:
        load(services, settings, a=plugin())
    assert caught.value.details == {"option": option, "reason": reason}


# --- loading ------------------------------------------------------------------------------


class NotAPlugin:
    def do_pre_op(self, *args: Any) -> None:
        return None


def not_even_a_class() -> None:
    return None


@pytest.mark.parametrize("target", [NotAPlugin, not_even_a_class])
def test_an_entry_point_that_is_not_a_lifecycle_plugin_fails(
        services: PluginServices, target: Any) -> None:
    with pytest.raises(PluginLoadFailed) as caught:
        load(services, good=plugin(), odd=target)
    assert str(caught.value) == (
        "Plugin odd in namespace kiln.lifecycle_plugins could not be loaded: not a subclass "
        "of engine.lifecycle.base.LifecyclePlugin")


def test_two_plugins_with_one_name_fail(services: PluginServices) -> None:
    extensions = [ext("quota", plugin()), ext("quota", plugin())]
    with pytest.raises(PluginLoadFailed) as caught:
        LifecycleRegistry.from_extensions(extensions, LifecycleSettings(), services)
    assert caught.value.details["name"] == "quota"
    assert "two installed plugins declare this name" in str(caught.value)


def test_one_class_seen_twice_under_its_name_is_one_plugin(services: PluginServices) -> None:
    cls = plugin()
    registry = LifecycleRegistry.from_extensions([ext("quota", cls), ext("quota", cls)],
                                                 LifecycleSettings(), services)
    assert registry.names() == ["quota"]


class FailsToBuild(LifecyclePlugin):
    def __init__(self) -> None:
        raise RuntimeError("licence server unreachable")


class FailsToConfigure(LifecyclePlugin):
    def configure(self, services: PluginServices) -> None:
        raise ValueError("[lifecycle_licence] server: not a URL")


@pytest.mark.parametrize("cls, reason", [
    (FailsToBuild, "RuntimeError: licence server unreachable"),
    (FailsToConfigure, "ValueError: [lifecycle_licence] server: not a URL"),
])
def test_a_plugin_that_cannot_be_built_or_configured_stops_the_start(
        services: PluginServices, cls: type[LifecyclePlugin], reason: str) -> None:
    with pytest.raises(PluginLoadFailed) as caught:
        load(services, licence=cls, fine=plugin())
    assert str(caught.value) == (
        f"Plugin licence in namespace kiln.lifecycle_plugins could not be loaded: {reason}")
    assert isinstance(caught.value.__cause__, RuntimeError | ValueError)


def test_configure_is_given_the_services(services: PluginServices) -> None:
    seen: list[PluginServices] = []

    class Configured(LifecyclePlugin):
        def configure(self, services: PluginServices) -> None:
            seen.append(services)

    load(services, configured=Configured)
    assert seen == [services]


@pytest.mark.parametrize("value", ["5", 2.5, None, True])
def test_an_ordinal_that_is_not_an_integer_fails(services: PluginServices, value: Any) -> None:
    class Odd(LifecyclePlugin):
        def get_ordinal(self) -> Any:
            return value

    with pytest.raises(PluginLoadFailed) as caught:
        load(services, odd=Odd)
    assert str(caught.value) == (
        "Plugin odd in namespace kiln.lifecycle_plugins could not be loaded: "
        f"get_ordinal() returned {value!r}, not an integer")


def test_the_tree_scope_is_read_at_load_and_every_stack_by_default(
        services: PluginServices) -> None:
    class RootOnly(LifecyclePlugin):
        tree_scope = "root"

    registry = load(services, root=RootOnly, every=plugin())
    root, every = registry.find("root"), registry.find("every")
    assert root is not None and every is not None
    assert (root.tree_scope, every.tree_scope) == ("root", "every")
    assert (root.wants(0), root.wants(1), every.wants(0), every.wants(2)) == (
        True, False, True, True)


@pytest.mark.parametrize("value", ["all", "ROOT", None, 0])
def test_a_tree_scope_other_than_every_or_root_fails(
        services: PluginServices, value: Any) -> None:
    class Odd(LifecyclePlugin):
        tree_scope = value

    with pytest.raises(PluginLoadFailed) as caught:
        load(services, odd=Odd)
    assert str(caught.value) == (
        "Plugin odd in namespace kiln.lifecycle_plugins could not be loaded: "
        f"tree_scope {value!r} is not one of every, root")


def test_an_ordinal_that_raises_fails(services: PluginServices) -> None:
    class Raising(LifecyclePlugin):
        def get_ordinal(self) -> int:
            raise KeyError("ordinal")

    with pytest.raises(PluginLoadFailed, match=r"Plugin raising .*get_ordinal\(\) failed"):
        load(services, raising=Raising)


def test_a_registry_can_be_built_from_loaded_plugins(services: PluginServices) -> None:
    loaded = LoadedPlugin(name="p", plugin=LifecyclePlugin(), ordinal=1, timeout_seconds=1.0,
                          on_timeout="warn", origin=Origin("", ""))
    registry = LifecycleRegistry([loaded])
    assert registry.plugins == (loaded,)
    assert registry.find("p") is loaded


def test_loading_a_namespace_without_plugins_gives_an_empty_registry(
        services: PluginServices) -> None:
    registry = LifecycleRegistry.load(LifecycleSettings(), services,
                                      namespace="kiln.tests.no_lifecycle_plugins")
    assert registry.plugins == ()
    assert registry.names() == []


def test_naming_a_plugin_of_an_empty_namespace_fails(services: PluginServices) -> None:
    with pytest.raises(PluginConfigInvalid, match="enabled: quota: no such lifecycle plugin"):
        LifecycleRegistry.load(LifecycleSettings(enabled=("quota",)), services,
                               namespace="kiln.tests.no_lifecycle_plugins")
