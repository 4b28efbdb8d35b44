"""engine.services.lifecycle: the plugin list as the admin CLI shows it."""

from __future__ import annotations

import dataclasses

from engine.lifecycle.registry import LifecycleRegistry
from engine.services.lifecycle import LifecycleService
from tests.unit.worker.test_lifecycle_calls import Entry, Recording, loaded


def test_the_plugin_list_says_which_stacks_of_a_tree_each_plugin_is_called_for() -> None:
    log: list[Entry] = []
    every, root = Recording("every", log), Recording("root", log)
    service = LifecycleService(LifecycleRegistry(
        [loaded(every), dataclasses.replace(loaded(root), tree_scope="root")]))

    assert [(p.position, p.name, p.tree_scope) for p in service.list_plugins()] == [
        (1, "every", "every"), (2, "root", "root")]
