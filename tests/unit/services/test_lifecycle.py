"""engine.services.lifecycle: the plugin list as the admin CLI and the console show it,
with each plugin's settings."""

from __future__ import annotations

import dataclasses

import pytest

from engine.config import OptionValue
from engine.context import ADMIN_ROLE, MEMBER_ROLE, RequestContext
from engine.errors import OperatorViewForbidden
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


def test_a_plugins_settings_mask_the_secret_options_set_or_not() -> None:
    options = {"vault": [OptionValue("lifecycle_vault", "url", "https://vault", False),
                         OptionValue("lifecycle_vault", "token", "s3cret", True),
                         OptionValue("lifecycle_vault", "spare_token", None, True)]}
    service = LifecycleService(LifecycleRegistry([loaded(Recording("vault", []))]), options)

    assert service.settings("vault") == [
        {"group": "lifecycle_vault", "name": "url", "secret": False, "value": "https://vault"},
        {"group": "lifecycle_vault", "name": "token", "secret": True, "value": "******"},
        {"group": "lifecycle_vault", "name": "spare_token", "secret": True, "value": "******"}]
    assert service.settings("other") == []
    # The door's service (a dry run's) keeps them; the API's is given them.
    assert service.at_the_door(1.0).settings("vault") == service.settings("vault")
    bare = LifecycleService(LifecycleRegistry([loaded(Recording("vault", []))]))
    assert bare.settings("vault") == []
    assert bare.with_options(options).settings("vault") == service.settings("vault")


def test_a_request_lists_the_plugins_with_an_admins_token_only() -> None:
    service = LifecycleService(LifecycleRegistry([loaded(Recording("audit", []))]))
    admin = RequestContext(tenant_id="t", token_tenant_id="t", role=ADMIN_ROLE)

    assert [p.name for p in service.list_plugins(admin)] == ["audit"]
    with pytest.raises(OperatorViewForbidden):
        service.list_plugins(dataclasses.replace(admin, role=MEMBER_ROLE))
