"""engine.resources.base is the resource plugin API: what plugins outside this tree import
from it must keep importing, with the values they were written against."""

from __future__ import annotations

import engine.resources.base as base
from engine.vocabulary import Action


def test_the_action_names_plugins_import_are_the_vocabularys_members() -> None:
    names = ("CREATE", "UPDATE", "DELETE", "SUSPEND", "RESUME", "CHECK", "ADOPT")

    assert [getattr(base, name) for name in names] == [Action[name] for name in names]
    # Plugins compare them with plain strings (``self.action == "CREATE"``) and store them.
    assert [getattr(base, name) == name for name in names] == [True] * len(names)


def test_snapshot_and_restore_do_nothing_by_default() -> None:
    resource = base.Resource("r", {"size": 1}, runtime=None)  # type: ignore[arg-type]
    start, check = base.action_methods(resource, Action.SNAPSHOT)

    assert check(start()) is True
    assert resource.data == {}
    assert resource.handle_restore({"resource_data": {"x": 1}}) == {"size": 1}
