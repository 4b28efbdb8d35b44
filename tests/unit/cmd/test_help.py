"""The long-running commands' ``--help``: what each runs, and where its options come from."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from engine.cmd import all as kiln_all
from engine.cmd import api as kiln_api
from engine.cmd import engine as kiln_engine

COMMANDS: list[tuple[Callable[[Sequence[str]], int], str]] = [
    (kiln_all.main, kiln_all.DESCRIPTION),
    (kiln_api.main, kiln_api.DESCRIPTION),
    (kiln_engine.main, kiln_engine.DESCRIPTION),
]


@pytest.mark.parametrize(("main", "description"), COMMANDS)
def test_help_describes_the_command_and_the_environment_form(
        main: Callable[[Sequence[str]], int], description: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])

    assert exit_.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # argparse rewraps the paragraphs
    assert description in out
    assert "~/.kiln/kiln.conf and /etc/kiln/kiln.conf" in out
    assert "OS_<GROUP>__<OPTION>" in out
    assert "OS_API__BIND_PORT" in out


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_shell_completion_is_not_offered(shell: str, capsys: pytest.CaptureFixture[str]) -> None:
    # oslo.config's own option crashed: its wheel lacks the completion script's template.
    with pytest.raises(SystemExit) as exit_:
        kiln_all.main(["--shell_completion", shell])

    assert exit_.value.code == 2
    assert f"unrecognized arguments: --shell_completion {shell}" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        kiln_all.main(["--help"])
    assert "shell_completion" not in capsys.readouterr().out
