"""engine.config: options from the environment and config files, the state path and the
database URL; and engine.bootstrap's refusal of a database that does not exist."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib

import pytest
from oslo_config import cfg

from engine import bootstrap, config
from engine.db import migration
from engine.errors import DatabaseMissing


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
                           "lifecycle_plugins", "event_sinks"}
    assert "bind_port" in {opt.name for opt in listed["api"]}
    assert "connection" in {opt.name for opt in listed["database"]}


# --- finding the configuration and the database from any working directory ------------


def test_the_default_state_path_is_absolute_and_in_the_users_home(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    conf = config.load([])

    assert conf.state_path == str(tmp_path / "home" / ".kiln" / "state")
    assert config.database_url(conf) == f"sqlite:///{tmp_path}/home/.kiln/state/kiln.sqlite"


def test_a_relative_state_path_in_a_file_is_taken_from_the_files_directory(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf_file = tmp_path / "etc" / "kiln.conf"
    conf_file.parent.mkdir()
    conf_file.write_text("[DEFAULT]\nstate_path = ../var/kiln\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    conf = config.load(["--config-file", str(conf_file)])

    assert conf.state_path == str(tmp_path / "var" / "kiln")


def test_the_users_config_file_is_found_before_the_systems(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user, system = tmp_path / "home" / ".kiln" / "kiln.conf", tmp_path / "etc" / "kiln.conf"
    for path, port in ((user, 9001), (system, 9002)):
        path.parent.mkdir(parents=True)
        path.write_text(f"[api]\nbind_port = {port}\n")
    monkeypatch.setattr(config, "DEFAULT_CONFIG_FILES", ("~/.kiln/kiln.conf", str(system)))

    assert config.load([]).api.bind_port == 9001
    assert config.config_files(config.load([])) == [str(user)]
    user.unlink()
    assert config.load([]).api.bind_port == 9002  # only when the user has none
    given = tmp_path / "given.conf"
    given.write_text("[api]\nbind_port = 9003\n")
    conf = config.load(["--config-file", str(given)])
    assert conf.api.bind_port == 9003 and config.config_files(conf) == [str(given)]


def test_a_missing_database_is_refused_with_its_path_and_created_only_on_request(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OS_DEFAULT__STATE_PATH", str(tmp_path / "state"))
    conf = config.load([])
    database = tmp_path / "state" / "kiln.sqlite"

    with pytest.raises(DatabaseMissing) as refused:
        bootstrap.build(conf, check_schema=False)
    assert str(database) in refused.value.message
    assert "kiln-manage db upgrade" in refused.value.message
    assert "[DEFAULT] state_path or [database] connection" in refused.value.message
    assert not database.parent.exists()

    db = bootstrap.build(conf, check_schema=False, create_database=True).db
    migration.upgrade(db)
    db.dispose()
    assert database.exists()


def test_a_lifecycle_plugins_options_are_read_with_their_values(
        tmp_path: pathlib.Path) -> None:
    conf_file = tmp_path / "kiln.conf"
    conf_file.write_text("[lifecycle_approval]\nrules_file = /etc/kiln/approval.yaml\n")
    conf = config.load(["--config-file", str(conf_file)])

    # Not yet registered (the plugin is not loaded in this process): registered here.
    assert config.plugin_options(conf, ["approval", "no-such-plugin"]) == {
        "approval": [config.OptionValue("lifecycle_approval", "rules_file",
                                        "/etc/kiln/approval.yaml", False)],
        "no-such-plugin": []}


def test_option_values_keep_a_secret_options_value_and_say_it_is_secret() -> None:
    conf = config.load([])
    opts = [cfg.StrOpt("token", secret=True, default="s3cret"), cfg.IntOpt("port", default=1)]
    conf.register_opts(opts, group="vault")  # as the plugin registers its own

    assert config.option_values(conf, [("vault", opts), (None, [cfg.BoolOpt("debug")])]) == [
        config.OptionValue("vault", "token", "s3cret", True),
        config.OptionValue("vault", "port", 1, False),
        config.OptionValue("DEFAULT", "debug", False, False)]


def test_a_group_listed_as_an_optgroup_is_named_and_every_value_is_json(
        tmp_path: pathlib.Path) -> None:
    # oslo.config's list_opts may name a group by its OptGroup; an option's type may
    # parse to an object JSON cannot hold (an IP address), shown as its text.
    conf_file = tmp_path / "kiln.conf"
    conf_file.write_text("[vault]\naddress = 10.0.0.1\n")
    conf = config.load(["--config-file", str(conf_file)])
    group = cfg.OptGroup("vault", title="The vault plugin")
    opts = [cfg.IPOpt("address"), cfg.ListOpt("hosts", default=["a", "b"]),
            cfg.DictOpt("limits", default={"cpu": "2"})]

    values = config.option_values(conf, [(group, opts)])

    assert values == [config.OptionValue("vault", "address", "10.0.0.1", False),
                      config.OptionValue("vault", "hosts", ["a", "b"], False),
                      config.OptionValue("vault", "limits", {"cpu": "2"}, False)]
    assert json.loads(json.dumps([dataclasses.asdict(value) for value in values]))
