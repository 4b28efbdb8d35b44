"""engine.config: options from the environment and config files, and the database URL."""

from __future__ import annotations

import os
import pathlib

import pytest

from engine import config


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    """No OS_* variable or ~/.kiln/kiln.conf of the machine running the tests leaks in."""
    for name in list(os.environ):
        if name.startswith("OS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def test_defaults() -> None:
    conf = config.load([])

    assert conf.api.bind_port == 8004
    assert conf.api.bind_host == "127.0.0.1"
    assert conf.database.connection is None
    assert conf.debug is False


def test_environment_variable_overrides_an_option(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OS_API__BIND_PORT", "18004")

    assert config.load([]).api.bind_port == 18004


def test_environment_variable_beats_the_config_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    conf_file = tmp_path / "kiln.conf"
    conf_file.write_text("[api]\nbind_port = 9000\nworkers = 5\n")
    monkeypatch.setenv("OS_API__BIND_PORT", "18004")

    conf = config.load(["--config-file", str(conf_file)])

    assert conf.api.bind_port == 18004
    assert conf.api.workers == 5


def test_environment_variable_for_the_default_group(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    monkeypatch.setenv("OS_DEFAULT__STATE_PATH", str(tmp_path / "st"))

    conf = config.load([])

    assert conf.state_path == str(tmp_path / "st")
    assert config.database_url(conf) == f"sqlite:///{tmp_path}/st/kiln.sqlite"


def test_database_url_defaults_to_sqlite_under_state_path(tmp_path: pathlib.Path) -> None:
    conf = config.load([])
    conf.set_override("state_path", str(tmp_path / "state"))

    assert config.database_url(conf) == f"sqlite:///{tmp_path}/state/kiln.sqlite"


def test_database_url_makes_a_relative_state_path_absolute() -> None:
    conf = config.load([])
    conf.set_override("state_path", "relative/dir")

    assert config.database_url(conf) == (
        "sqlite:///" + os.path.join(os.getcwd(), "relative", "dir", "kiln.sqlite")
    )


def test_database_url_uses_the_configured_connection() -> None:
    conf = config.load([])
    conf.set_override("connection", "postgresql+psycopg://kiln@127.0.0.1/kiln",
                      group="database")

    assert config.database_url(conf) == "postgresql+psycopg://kiln@127.0.0.1/kiln"


def test_list_opts_covers_every_group() -> None:
    listed = dict(config.list_opts())

    assert set(listed) == {None, "database", "api", "engine", "template", "yaql",
                           "lifecycle_plugins"}
    assert "bind_port" in {opt.name for opt in listed["api"]}
    assert "connection" in {opt.name for opt in listed["database"]}
