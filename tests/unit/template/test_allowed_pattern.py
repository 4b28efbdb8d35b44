"""``allowed_pattern`` (HOT) and ``AllowedPattern`` (CFN): Heat's matching rule, Python's
``re`` syntax, and a time budget, so that a pattern that backtracks for ever is a 400 at
its line instead of a request that never ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine import budget
from engine.errors import EvaluationTooLong, StackValidationFailed
from engine.template.loader import load
from engine.template.parameters import resolve_values
from engine.template.parse import document

BOMB, BOMB_INPUT = r"(a|aa)+$", "a" * 40 + "b"

HOT = f"""heat_template_version: 2021-04-16
parameters:
  name:
    type: string
    constraints:
      - allowed_pattern: "{BOMB}"
        description: letters only
"""

CFN = f"""AWSTemplateFormatVersion: 2010-09-09
Parameters:
  Name:
    Type: String
    AllowedPattern: "{BOMB}"
"""


@pytest.fixture(autouse=True)
def short() -> Iterator[None]:
    with budget.evaluation(budget.Budget(evaluation_timeout_seconds=0.05)):
        yield


@pytest.mark.timeout(60)
def test_a_backtracking_hot_pattern_is_refused_at_the_constraints_line() -> None:
    template = load(document(HOT))

    with pytest.raises(EvaluationTooLong) as raised:
        resolve_values(template.parameters, {"name": BOMB_INPUT})

    # The constraint's line, and not its description: the value may well be fine.
    assert str(raised.value).startswith(
        f'template:6 parameters.name.constraints[0]: Matching the pattern "{BOMB}" took '
        "too long")


@pytest.mark.timeout(60)
def test_a_backtracking_cfn_pattern_is_refused_at_its_line() -> None:
    template = load(document(CFN))

    with pytest.raises(EvaluationTooLong) as raised:
        resolve_values(template.parameters, {"Name": BOMB_INPUT})

    assert str(raised.value).startswith("template:5 Parameters.Name.AllowedPattern: ")


@pytest.mark.timeout(60)
def test_a_default_is_checked_with_the_same_budget_when_the_template_is_read() -> None:
    with pytest.raises(EvaluationTooLong):
        load(document(HOT.replace("    type: string\n",
                                  f"    type: string\n    default: {BOMB_INPUT}\n")))


def test_the_match_is_heats_first_match_reaching_the_end() -> None:
    template = load(document(HOT.replace(BOMB, "a|ab")))

    assert resolve_values(template.parameters, {"name": "a"}) == {"name": "a"}
    with pytest.raises(StackValidationFailed, match="Parameter 'name' is invalid: letters only"):
        resolve_values(template.parameters, {"name": "ab"})


def test_a_pattern_too_deep_to_compile_is_an_invalid_constraint() -> None:
    deep = "(" * 2000 + ")" * 2000

    with pytest.raises(StackValidationFailed,
                       match='Invalid "allowed_pattern" constraint: the pattern is too '
                             "complex"):
        load(document(HOT.replace(BOMB, deep)))
    with pytest.raises(StackValidationFailed, match="Invalid AllowedPattern: the pattern"):
        load(document(CFN.replace(BOMB, deep)))
