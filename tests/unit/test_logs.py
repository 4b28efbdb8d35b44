"""engine.logs: the two formats, the log context a block binds (third-party lines
included), the secrets it masks, and configure's handler, level, file and floors; with
the real logging module writing real files. bootstrap.log_settings reads the options."""

from __future__ import annotations

import contextvars
import logging
import os
import pathlib
import re
import threading

import pytest

from engine import bootstrap, config, logs
from tests.unit.conftest import Logged

LOG = logging.getLogger("kiln.test")
ABOUT = {"request_id": "req-1", "tenant_id": "t-1", "stack_name": "web",
         "stack_id": "s-1", "operation_id": "op-1"}
TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"


def configure(path: pathlib.Path, **settings: str) -> None:
    logs.configure(logs.LogSettings(file=str(path), **settings))


def test_text_lines_keep_the_old_shape_with_the_context_in_brackets(
        tmp_path: pathlib.Path, root_logging: logging.Logger) -> None:
    path = tmp_path / "kiln.log"
    configure(path)

    LOG.info("about nothing")
    with logs.bound(**ABOUT):
        LOG.warning("about %s", "something")
    with logs.bound(request_id="req-2", stack_id="s-2"):
        LOG.info("partly")

    lines = path.read_text().splitlines()
    pid = os.getpid()
    assert re.fullmatch(rf"{TIME} {pid} INFO kiln.test \[-\] about nothing", lines[0])
    assert re.fullmatch(rf"{TIME} {pid} WARNING kiln.test \[req-1 tenant=t-1 stack=web/s-1 "
                        r"op=op-1\] about something", lines[1])
    assert lines[2].endswith(" [req-2 tenant=- stack=-/s-2 op=-] partly")


def test_json_lines_hold_every_field_and_the_traceback(logged: Logged) -> None:
    with logs.bound(**ABOUT):
        LOG.info("plain", extra={"status": 201})
        try:
            raise ValueError("broken")
        except ValueError:
            LOG.exception("failed")
    LOG.info("outside")

    plain, failed, outside = logged()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", plain.pop("time"))
    assert plain == {"level": "INFO", "logger": "kiln.test", "message": "plain",
                     "process": os.getpid(), "thread": threading.current_thread().name,
                     **ABOUT, "status": 201}
    assert "exc_info" not in plain
    assert failed["exc_info"].startswith("Traceback (most recent call last):")
    assert failed["exc_info"].endswith("ValueError: broken")
    assert {name: outside[name] for name in logs.FIELDS} == dict.fromkeys(logs.FIELDS)


def test_a_block_binds_its_fields_over_the_outer_ones_and_unbinds_them(
        logged: Logged) -> None:
    with logs.bound(request_id="req-1", tenant_id="t-1"):
        with logs.bound(stack_name="web", tenant_id="t-2", stack_id=None):
            assert logs.current() == {"request_id": "req-1", "tenant_id": "t-2",
                                      "stack_name": "web"}
        assert logs.current() == {"request_id": "req-1", "tenant_id": "t-1"}
    assert logs.current() == {}
    with pytest.raises(TypeError, match="not log context fields: resource"):
        logs.bind(resource="x")


def test_third_party_lines_and_copied_contexts_carry_the_context(logged: Logged) -> None:
    def elsewhere() -> None:
        logging.getLogger("some.library").info("from a library's thread")

    with logs.bound(**ABOUT):
        thread = threading.Thread(target=contextvars.copy_context().run, args=(elsewhere,))
        thread.start()
        thread.join()
        bare = threading.Thread(target=elsewhere)  # a new thread starts with nothing bound
        bare.start()
        bare.join()

    copied, bare_line = logged()
    assert copied["logger"] == "some.library"
    assert {name: copied[name] for name in logs.FIELDS} == ABOUT
    assert bare_line["request_id"] is None


def test_bound_secrets_are_masked_in_messages_arguments_and_tracebacks(
        logged: Logged) -> None:
    with logs.bound(request_id="req-1", secrets=["hunter2", "hunter2-long", ""]):
        LOG.info("password %s and %s", "hunter2", "hunter2-long")
        try:
            raise RuntimeError("bad value hunter2")
        except RuntimeError:
            LOG.exception("failed with hunter2")
        LOG.info("one argument short: %s %s", "hunter2")  # reported, not raised
    LOG.info("after the block: hunter2")

    masked, failed, unfit, after = logged()
    assert masked["message"] == "password ****** and ******"
    assert failed["message"] == "failed with ******"
    assert "hunter2" not in failed["exc_info"]
    assert failed["exc_info"].endswith("RuntimeError: bad value ******")
    assert unfit["message"] == ("one argument short: %s %s (arguments that do not fit it: "
                                "('******',))")
    assert after["message"] == "after the block: hunter2"


def test_a_short_secret_is_masked_where_it_stands_alone(logged: Logged) -> None:
    with logs.bound(secrets=["42"]):
        LOG.info("count 42 of 1420 in step-42x, port=42")

    assert logged()[0]["message"] == "count ****** of 1420 in step-42x, port=******"


def test_a_text_line_is_one_line_whatever_its_message_holds(
        tmp_path: pathlib.Path, root_logging: logging.Logger) -> None:
    path = tmp_path / "kiln.log"
    configure(path)

    LOG.info("resource %s failed", "web\n2026-11-26 00:00:00,000 1 INFO kiln.access forged")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        LOG.exception("with a traceback")

    lines = path.read_text().splitlines()
    assert lines[0].endswith(r"resource web\n2026-11-26 00:00:00,000 1 INFO kiln.access "
                             "forged failed")
    assert lines[1].endswith("with a traceback")
    assert lines[2] == "Traceback (most recent call last):"  # the traceback keeps its lines


def test_the_level_the_floors_and_a_second_configure(
        tmp_path: pathlib.Path, root_logging: logging.Logger) -> None:
    for name in logs.FLOORS:  # as a process starts (root_logging puts them back)
        logging.getLogger(name).setLevel(logging.NOTSET)
    path = tmp_path / "kiln.log"
    configure(path, level="DEBUG")
    configure(path, level="WARNING")  # kiln-api's workers configure again after the fork
    LOG.info("dropped")
    LOG.warning("kept")
    configure(path, level="DEBUG")
    logging.getLogger("botocore.endpoint").debug("a request body")
    logging.getLogger("urllib3.connectionpool").debug("headers")
    logging.getLogger("stevedore").debug("kept at debug")

    assert [h.get_name() for h in root_logging.handlers].count("kiln") == 1
    messages = [line.split("] ", 1)[1] for line in path.read_text().splitlines()]
    assert messages == ["kept", "kept at debug"]


def test_the_file_is_reopened_after_logrotate_moves_it(
        tmp_path: pathlib.Path, root_logging: logging.Logger) -> None:
    path = tmp_path / "kiln.log"
    configure(path)
    LOG.info("before")
    path.rename(tmp_path / "kiln.log.1")
    LOG.info("after")

    assert (tmp_path / "kiln.log.1").read_text().endswith("before\n")
    assert path.read_text().endswith("after\n")


def test_a_config_file_sets_up_logging_and_its_handlers_get_the_context(
        tmp_path: pathlib.Path, root_logging: logging.Logger) -> None:
    path = tmp_path / "custom.log"
    config_file = tmp_path / "logging.conf"
    config_file.write_text(f"""\
[loggers]
keys = root
[handlers]
keys = file
[formatters]
keys = custom
[logger_root]
level = INFO
handlers = file
[handler_file]
class = FileHandler
args = ({str(path)!r},)
formatter = custom
[formatter_custom]
format = %(levelname)s %(request_id)s %(stack_name)s %(message)s
""")
    logs.configure(logs.LogSettings(config_file=str(config_file)))
    with logs.bound(**ABOUT):
        LOG.info("custom")

    assert path.read_text() == "INFO req-1 web custom\n"
    with pytest.raises(FileNotFoundError):
        logs.configure(logs.LogSettings(config_file=str(tmp_path / "missing.conf")))


def test_settings_from_the_options(tmp_path: pathlib.Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in [name for name in os.environ if name.startswith("OS_")]:
        monkeypatch.delenv(name)
    state = tmp_path / "state"
    monkeypatch.setenv("OS_DEFAULT__STATE_PATH", str(state))
    assert bootstrap.log_settings(config.load([])) == logs.LogSettings()

    monkeypatch.setenv("OS_DEFAULT__LOG_LEVEL", "warning")
    monkeypatch.setenv("OS_DEFAULT__LOG_FILE", "logs/kiln.log")
    monkeypatch.setenv("OS_DEFAULT__LOG_FORMAT", "json")
    monkeypatch.setenv("OS_DEFAULT__LOG_CONFIG_FILE", "~/logging.conf")
    assert bootstrap.log_settings(config.load([])) == logs.LogSettings(
        level="WARNING", file=str(state / "logs" / "kiln.log"), format="json",
        config_file=str(tmp_path / "home" / "logging.conf"))

    monkeypatch.setenv("OS_DEFAULT__DEBUG", "true")  # debug means DEBUG, whatever the level
    monkeypatch.setenv("OS_DEFAULT__LOG_FILE", "/var/log/kiln/kiln.log")
    settings = bootstrap.log_settings(config.load([]))
    assert (settings.level, settings.file) == ("DEBUG", "/var/log/kiln/kiln.log")


def test_a_log_file_that_cannot_be_opened_stops_the_command_with_one_line(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], root_logging: logging.Logger) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OS_DEFAULT__STATE_PATH", str(tmp_path / "state"))
    monkeypatch.setenv("OS_DEFAULT__LOG_FILE", str(tmp_path / "no-such-dir" / "kiln.log"))

    with pytest.raises(SystemExit) as exit_:
        bootstrap.load_config([], "kiln-engine")

    assert exit_.value.code == 1
    assert capsys.readouterr().err == (
        f"kiln-engine: cannot set up logging from {tmp_path}/no-such-dir/kiln.log: "
        "No such file or directory\n")
