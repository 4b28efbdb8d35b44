"""engine.vocabulary: the stack action an operation shows."""

from __future__ import annotations

from engine.vocabulary import Action, stack_action


def test_an_abandon_shows_as_a_delete_and_other_actions_as_themselves() -> None:
    assert stack_action(Action.ABANDON) == "DELETE"
    assert stack_action(Action.UPDATE) == "UPDATE"


def test_a_word_no_action_names_is_shown_as_it_is() -> None:
    assert stack_action("SOMETHING_OLD") == "SOMETHING_OLD"
