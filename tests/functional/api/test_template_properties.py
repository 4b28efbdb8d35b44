"""Property-based tests of the template path on a real kiln-all (issue 17): random
templates from every HOT function, condition and parameter type, well-formed and broken
(``tests/strategies``), sent through python-heatclient's validate and create.

For every template:

* every request gets a 2xx, or a 4xx in Heat's fault shape with a message; never a 5xx
  or a dropped connection;
* when validate accepts a template with its parameters, create accepts it too (unless a
  parameter validate may leave out is missing);
* every created stack reaches ``*_COMPLETE`` or ``*_FAILED`` within its timeout, and its
  delete ends too;
* the server logs no traceback (a traceback is a bug the tenant may not see).

Few examples by default, to keep the suite fast; ``--slow`` runs twenty times as many.
The in-process twin with many more examples is ``tests/unit/ir/test_build_properties.py``.
"""

from __future__ import annotations

import json
import pathlib
import time
from typing import Any

import pytest
from heatclient import exc as heat_exc
from hypothesis import Phase, assume, example, given, note, settings

from tests.functional import servers
from tests.functional.conftest import heat_for, unique
from tests.strategies import Case, cases, examples, known_failing

TIMEOUT_MINS = 1
# The stack's own timeout, and a margin for the worker to notice it.
FINAL_WITHIN_SECONDS = TIMEOUT_MINS * 60 + 15
FINAL = ("COMPLETE", "FAILED")


class Log:
    """The server's log from a mark on: what one example made it write."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path
        self.offset = path.stat().st_size

    def since_mark(self) -> str:
        with self.path.open("rb") as log:
            log.seek(self.offset)
            text = log.read().decode(errors="replace")
        self.offset += len(text.encode(errors="replace"))
        return text


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln) -> Any:
    return heat_for(kiln_all, servers.new_tenant(kiln_all.env, unique("props-")))


@pytest.fixture(scope="module")
def log(kiln_all: servers.Kiln) -> Log:
    return Log(kiln_all.processes[0].log_path)


def fault(error: heat_exc.HTTPException) -> dict[str, Any]:
    """The fault body of a refused request, checked to be Heat's shape and a 4xx."""
    assert isinstance(error.code, int) and 400 <= error.code < 500, (
        f"HTTP {error.code}: {error.message}")
    body = json.loads(error.message)
    assert body["code"] == error.code, body
    assert body["error"]["type"], body
    assert body["error"]["message"].strip(), body
    fields: dict[str, Any] = body["error"]
    return fields


def request(call: Any, **fields: Any) -> tuple[Any, dict[str, Any] | None]:
    """``call(**fields)``: its answer, or the fault of a 4xx."""
    try:
        return call(**fields), None
    except heat_exc.HTTPException as error:
        return None, fault(error)


def wait_final(heat: Any, stack_id: str, action: str) -> Any:
    """The stack once ``action`` has ended (None once a delete removed it)."""
    deadline = time.monotonic() + FINAL_WITHIN_SECONDS
    while True:
        try:
            stack = heat.stacks.get(stack_id)
        except heat_exc.HTTPNotFound:
            if action == "DELETE":
                return None
            raise
        if stack.action == action and stack.status in FINAL:
            return stack
        assert time.monotonic() < deadline, (
            f"stack {stack_id} still {stack.stack_status} ({stack.stack_status_reason}) "
            f"after {FINAL_WITHIN_SECONDS}s")
        time.sleep(0.1)


def check(heat: Any, log: Log, case: Case) -> None:
    """Every invariant for one template; the server's log of it goes into the report of
    a failure, whatever failed."""
    note(case.describe())
    try:
        send(heat, case)
    finally:
        written = log.since_mark()
        note(f"server log:\n{written}")
    assert "Traceback" not in written, written


def send(heat: Any, case: Case) -> None:
    fields = {"template": case.body(), "files": case.files, "parameters": case.parameters}
    validated, refused = request(heat.stacks.validate, **fields)
    note(f"validate: {refused or 'accepted'}")
    created, create_refused = request(heat.stacks.create, stack_name=unique("prop"),
                                      timeout_mins=TIMEOUT_MINS, disable_rollback=True,
                                      **fields)
    note(f"create: {create_refused or 'accepted'}")
    if refused is not None:
        assert create_refused is not None, f"create accepted what validate refused: {refused}"
    elif create_refused is not None:
        # Validate may go without a parameter's value; create may not.
        assert create_refused["type"] == "UserParameterMissing", (
            f"validate accepted what create refused: {create_refused}")
    if created is None:
        return
    stack_id = created["stack"]["id"]
    try:
        stack = wait_final(heat, stack_id, "CREATE")
        note(f"stack: {stack.stack_status} {stack.stack_status_reason}")
        # What a tenant reads next: each answers too.
        heat.resources.list(stack_id)
        heat.events.list(stack_id)
    finally:
        heat.stacks.delete(stack_id)
    wait_final(heat, stack_id, "DELETE")


def regression(template: dict[str, Any]) -> Case:
    return Case(template=template, parameters={}, files={},
                features=frozenset({"regression"}))


# What these tests found once, kept so that it is tried on every run.
REGRESSIONS = (
    # A value failing to evaluate made the lifecycle view fail: create and delete ended as
    # internal errors, and validate refused what create accepted.
    regression({"heat_template_version": "2021-04-16", "resources": {"r": {
        "type": "OS::Heat::None",
        "properties": {"piece": {"str_split": [",", "a,b", 5]},
                       "data": {"yaql": {"expression": "$.data.m",
                                         "data": {"m": {"if": [False, 1]}}}}}}}}),
    # A parameter group naming a map: a TypeError, a 500.
    regression({"heat_template_version": "2018-08-31",
                "parameters": {"p": {"type": "string", "default": "x"}},
                "parameter_groups": [{"parameters": ["p", {"repeat": "p"}]}],
                "resources": {"r": {"type": "OS::Heat::None"}}}),
)


@settings(max_examples=examples(60), phases=(Phase.explicit, Phase.generate))
@given(case=cases(max_depth=2))
@example(case=REGRESSIONS[0])
@example(case=REGRESSIONS[1])
def test_any_template_gets_an_answer_and_every_stack_ends(heat: Any, log: Log,
                                                          case: Case) -> None:
    assume(known_failing(case) is None)
    check(heat, log, case)
