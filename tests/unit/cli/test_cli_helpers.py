"""kiln-manage's pure parts: ages, the dependency tree and DOT, the progress bar, and
that every command explains itself with an example."""

from __future__ import annotations

import argparse
import datetime
from typing import Any

import pytest

from engine.cli import app
from engine.cli.base import age, positive, span
from engine.cli.commands.stack_graph import dot_lines, tree_lines
from engine.cli.commands.tenants import TokenCreate
from engine.cli.follow import progress_bar


def row(name: str, *requires: str) -> dict[str, Any]:
    return {"resource_name": name, "type": "T", "status": "CREATE_COMPLETE",
            "requires": list(requires)}


def test_ages_and_spans() -> None:
    assert age("30d") == datetime.timedelta(days=30)
    assert age("2w") == datetime.timedelta(weeks=2)
    assert age(" 90m ") == datetime.timedelta(minutes=90)
    assert age("0s") == datetime.timedelta(0)
    for bad in ("30", "d", "1.5h", "-3d", "3y"):
        with pytest.raises(ValueError, match="is not an age"):
            age(bad)
    assert [span(s) for s in (0, 59, 61, 3600, 3725, 90061, -5)] == [
        "0s", "59s", "1m1s", "1h", "1h2m", "1d1h", "0s"]
    assert positive("3") == 3
    with pytest.raises(ValueError):
        positive("0")


def test_the_tree_follows_creation_order_and_shows_a_shared_subtree_once() -> None:
    rows = [row("net"), row("subnet", "net"), row("port", "net", "subnet"),
            row("server", "port"), row("alone")]
    assert tree_lines(rows) == [
        "alone (T, CREATE_COMPLETE)",
        "net (T, CREATE_COMPLETE)",
        "    port (T, CREATE_COMPLETE)",
        "        server (T, CREATE_COMPLETE)",
        "    subnet (T, CREATE_COMPLETE)",
        "        port (T, CREATE_COMPLETE)  [see above]",
    ]


def test_a_requirement_outside_the_stack_does_not_hide_a_resource() -> None:
    assert tree_lines([row("a", "gone")]) == ["a (T, CREATE_COMPLETE)"]


def test_dot_has_one_node_per_resource_and_one_edge_per_requirement() -> None:
    lines = dot_lines([row("a"), row('b"q', "a")], title="s")
    assert lines[0] == 'digraph "s" {' and lines[-1] == "}"
    assert '  "b\\"q" -> "a";' in lines
    assert '  "a" [label="a\\nT\\nCREATE_COMPLETE"];' in lines


def test_progress_bar() -> None:
    assert progress_bar(0, 4, width=8) == "[........] 0/4"
    assert progress_bar(3, 4, width=8) == "[######..] 3/4"
    assert progress_bar(4, 4, width=8) == "[########] 4/4"
    assert progress_bar(0, 0, width=4) == "[....] 0/0"


def test_a_token_lifetime_is_an_age_above_zero_else_a_usage_error() -> None:
    parser = TokenCreate(app.KilnManage(lambda _args: None), argparse.Namespace()
                         ).get_parser("kiln-manage token create")
    parsed = parser.parse_args(["--tenant", "t", "--expires-in", "12h"])
    assert parsed.expires_in == datetime.timedelta(hours=12)
    assert parser.parse_args(["--tenant", "t"]).expires_in is None
    for bad in ("0s", "12", "1.5h", "3y", "-1d"):
        with pytest.raises(SystemExit) as exited:
            parser.parse_args(["--tenant", "t", "--expires-in", bad])
        assert exited.value.code == 2


@pytest.mark.parametrize("name", sorted(app.COMMANDS))
def test_every_command_has_a_summary_and_an_example(name: str) -> None:
    command = app.COMMANDS[name](app.KilnManage(lambda _args: None), argparse.Namespace())
    parser = command.get_parser(f"kiln-manage {name}")
    summary = (command.__doc__ or "").strip().splitlines()[0]
    assert summary.endswith(".") and len(summary) <= 90, summary
    assert parser.epilog and parser.epilog.startswith("example:\n  ")
    assert f"kiln-manage {name}" in parser.epilog
