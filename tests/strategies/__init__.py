"""Hypothesis strategies for HOT templates, shared by the unit and the functional property
tests of the template path (issue 17): well-formed templates (``templates``) and broken ones
(``mutations``), and the settings those tests share.

Every case records its ``features`` (functions, types, mutations used), so that a failure
names its class; ``KNOWN_FAILING`` leaves out the classes whose fixes are still landing.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import settings
from hypothesis import strategies as st

from tests.strategies.mutations import mutated
from tests.strategies.templates import Case, well_formed

__all__ = ["KNOWN_FAILING", "Case", "cases", "examples", "known_failing", "mutated",
           "well_formed"]


def examples(default: int) -> int:
    """``default`` examples in the CI profile, scaled by the loaded profile (``--slow``,
    see tests/conftest.py): a test's own ``max_examples`` would otherwise override it."""
    return max(1, default * settings().max_examples // 100)


# Classes of failure found by these strategies whose fixes are landing (issue 17): why ->
# which cases show it. The property tests leave such cases out (``known_failing``) so that
# the rest is checked; delete an entry once its fix is in.
KNOWN_FAILING: dict[str, Callable[[Case], bool]] = {}


def known_failing(case: Case) -> str | None:
    """Why ``case`` is left out of the property tests, or None."""
    return next((why for why, shows in KNOWN_FAILING.items() if shows(case)), None)


def cases(exclude: frozenset[str] = frozenset(), max_depth: int = 3
          ) -> st.SearchStrategy[Case]:
    """Well-formed, confused and mutated templates, a third each. ``exclude`` names
    functions, resource types, ``mutation:<kind>`` and ``oddity:<name>`` not to draw."""
    return st.one_of(well_formed(exclude, max_depth),
                     well_formed(exclude, max_depth, confused=True),
                     mutated(exclude, max_depth - 1))
