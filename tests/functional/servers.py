"""Real Kiln processes for functional tests: free ports, readiness deadlines, honest logs."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from engine.clock import utcnow
from engine.db import migration
from engine.db.session import Database
from engine.services.tenants import TenantService

BIN = pathlib.Path(sys.executable).parent
READY_SECONDS = 30.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def kiln_environment(state_path: pathlib.Path, database_url: str | None,
                     port: int | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "KILN_"))}
    # A home of its own: every Kiln command reads ~/.kiln/kiln.conf when it is given no
    # --config-file, and the developer's own (which `make run` writes) must not reach the
    # servers under test. The entry-point cache stays the real one: rebuilding it costs
    # each process a tenth of a second.
    home = state_path.parent / f"{state_path.name}-home"
    home.mkdir(parents=True, exist_ok=True)
    env["XDG_CACHE_HOME"] = os.environ.get("XDG_CACHE_HOME") or str(
        pathlib.Path.home() / ".cache")
    env["HOME"] = str(home)
    env.update({
        "OS_DEFAULT__STATE_PATH": str(state_path),
        # The idle poll as an operator runs it (new work wakes a worker at once,
        # engine.db.wakeup) and a heartbeat five times within the ten-second lease: every
        # test process keeps two idle servers up for the whole run (conftest.py), whose
        # polls at 0.25 s and beats at 0.5 s cost 4 % of a core per process, some 20 s of
        # a run on two cores (1.6 % at 1 s and 2 s, the event sinks' poll included, measured
        # over 30 s).
        "OS_ENGINE__IDLE_POLL_SECONDS": "1.0",
        "OS_ENGINE__MAX_STEP_POLL_SECONDS": "0.2",
        "OS_ENGINE__HEARTBEAT_INTERVAL_SECONDS": "2.0",
        "OS_ENGINE__LEASE_SECONDS": "10",
        "OS_API__WORKERS": "1",
    })
    if database_url:
        env["OS_DATABASE__CONNECTION"] = database_url
    if port is not None:
        env["OS_API__BIND_PORT"] = str(port)
    env.update(extra)
    if "OS_ENGINE__LEASE_SECONDS" in extra and "OS_ENGINE__HEARTBEAT_INTERVAL_SECONDS" not in extra:
        # A short lease (a test of takeover) is renewed four times within it (the
        # defaults: six): at only twice, one late beat would pause the worker.
        env["OS_ENGINE__HEARTBEAT_INTERVAL_SECONDS"] = str(
            min(1.0, float(extra["OS_ENGINE__LEASE_SECONDS"]) / 4))
    return env


def manage(env: Mapping[str, str], *args: str, check: bool = True,
           cwd: pathlib.Path | None = None) -> subprocess.CompletedProcess[str]:
    return checked(subprocess.run([str(BIN / "kiln-manage"), *args], env=dict(env),
                                  text=True, capture_output=True, timeout=120, cwd=cwd),
                   check)


def checked(result: subprocess.CompletedProcess[str], check: bool
            ) -> subprocess.CompletedProcess[str]:
    """``result``, or an AssertionError showing the command and its output when
    ``check`` and it failed."""
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, result.args))} failed "
                             f"({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def manage_here(env: Mapping[str, str], *args: str, check: bool = True
                ) -> subprocess.CompletedProcess[str]:
    """``kiln-manage`` as :func:`manage` runs it, but its own ``main`` in this process,
    under ``env`` with its streams captured: the same parsing, wiring and output without
    the second of CPU a new interpreter spends on its imports, which a hundred commands a
    run add up to. kiln-manage builds everything per command, so runs share nothing; the
    process's environment, logging and evaluation budget are put back afterwards."""
    from engine import budget
    from engine.cmd import manage as kiln_manage

    saved_env, saved_budget = dict(os.environ), budget.limits()
    root = logging.getLogger()
    saved_logging = (root.level, root.handlers[:], root.filters[:], {
        key: logger.level for key, logger in logging.Logger.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)})
    out, err = io.StringIO(), io.StringIO()
    os.environ.clear()
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = kiln_manage.main(list(args))
            except SystemExit as exit_:  # argparse's usage errors and --help
                code = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        budget.configure(saved_budget)
        level, handlers, filters, levels = saved_logging
        root.setLevel(level)
        root.handlers[:], root.filters[:] = handlers, filters
        for key, logger_level in levels.items():
            logging.getLogger(key).setLevel(logger_level)
    return checked(subprocess.CompletedProcess(["kiln-manage", *args], code,
                                               out.getvalue(), err.getvalue()), check)


def openstack_forked(env: Mapping[str, str], *args: str, check: bool = True,
                     timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """The ``openstack`` CLI (python-openstackclient with heatclient's plugin) as its
    executable runs it, under ``env``, in a child forked from this process, which has
    imported the CLI once: a command then costs its own work, not the second of imports a
    new interpreter spends. The child is thrown away after each command (the CLI keeps
    clients from one run to the next in class attributes, so runs must not share a
    process); it writes to its own files and leaves with ``os._exit``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its own deprecations, at import
        from heatclient.common import event_utils
        from openstackclient import shell

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:  # the child: never returns
            # Untraced: a coverage tool's tracer would slow the CLI down, and the child
            # never saves what it would measure.
            sys.settrace(None)
            threading.settrace(None)
            code = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 -- os._exit ends it
                sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                os.environ.clear()
                os.environ.update(env)
                logging.getLogger().handlers.clear()
                warnings.simplefilter("ignore")
                _poll_quickly(event_utils)
                code = shell.main(list(args))
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
            except BaseException:  # noqa: BLE001 -- reported as the executable would
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                raise AssertionError(f"openstack {' '.join(args)}: no answer in {timeout} s")
            time.sleep(0.01)
        out.seek(0)
        err.seek(0)
        return checked(subprocess.CompletedProcess(
            ["openstack", *args], os.waitstatus_to_exitcode(status),
            out.read().decode(errors="replace"), err.read().decode(errors="replace")), check)


#: How often the CLI's ``--wait`` polls in :func:`openstack_forked`'s children.
WAIT_POLL_SECONDS = 0.5


def _poll_quickly(event_utils: types.ModuleType) -> None:
    """Make the CLI's ``--wait`` poll every :data:`WAIT_POLL_SECONDS` unless it is given
    ``--poll``. Only ``stack create`` takes ``--poll``; update, the stack actions, adopt and
    delete wait by heatclient's ``poll_for_events`` with its default of 5 s, which left
    the tests waiting out whole periods after the stack had finished (40 s of the 70 s of
    the CLI operations' module). The same requests (events after a marker, then the stack)
    in the same order, only sooner: what the tests check of Kiln is unchanged."""
    poll_for_events = event_utils.poll_for_events

    def quick(*args: Any, **kwargs: Any) -> Any:
        if len(args) < 4:  # poll_period is its fourth parameter
            kwargs.setdefault("poll_period", WAIT_POLL_SECONDS)
        return poll_for_events(*args, **kwargs)

    event_utils.poll_for_events = quick


@dataclasses.dataclass
class Credentials:
    tenant_id: str
    token: str


def new_tenant(env: Mapping[str, str], name: str, role: str = "member") -> Credentials:
    """A tenant with one token, written through the engine's own TenantService on the
    Kiln's database. kiln-manage does the same (``test_manage`` drives it), but as a
    process it costs seconds of imports, and most tests want a tenant or two."""
    with _database(env) as database:
        tenants = TenantService(database, utcnow)
        tenant = tenants.create_tenant(name)
        issued = tenants.create_token(tenant.id, role)
    return Credentials(tenant.id, issued.secret)


def new_token(env: Mapping[str, str], tenant_id: str, role: str) -> Credentials:
    """One more token for a tenant, written as ``new_tenant`` writes one."""
    with _database(env) as database:
        issued = TenantService(database, utcnow).create_token(tenant_id, role)
    return Credentials(tenant_id, issued.secret)


def migrate(env: Mapping[str, str]) -> None:
    """``kiln-manage db upgrade``, in this process (``test_manage`` runs the command)."""
    with _database(env) as database:
        migration.upgrade(database)


@contextlib.contextmanager
def _database(env: Mapping[str, str]) -> Iterator[Database]:
    database = Database(_url_of(env))
    try:
        yield database
    finally:
        database.dispose()


def _url_of(env: Mapping[str, str]) -> str:
    """The URL the Kiln processes with ``env`` use (``engine.config.database_url``)."""
    return env.get("OS_DATABASE__CONNECTION") or (
        "sqlite:///" + os.path.join(env["OS_DEFAULT__STATE_PATH"], "kiln.sqlite"))


class Process:
    """A Kiln process with its output in a log file, shown when something goes wrong."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str],
                 log_path: pathlib.Path) -> None:
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 -- closed in stop()
        self.popen = subprocess.Popen(list(command), env=dict(env), stdout=self._log,
                                      stderr=subprocess.STDOUT)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 15.0) -> int:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._log.close()
        return self.popen.returncode


def wait_until_serving(process: Process, url: str) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            raise AssertionError(f"server exited with {process.popen.returncode}:\n"
                                 f"{process.log()}")
        try:
            urllib.request.urlopen(url, timeout=1)
        except urllib.error.HTTPError as exc:
            if exc.code == 300:  # version discovery answers 300 Multiple Choices
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"server not serving {url} after {READY_SECONDS}s:\n{process.log()}")


@dataclasses.dataclass
class Kiln:
    """A running Kiln: its URL, its environment (for kiln-manage) and its processes."""

    url: str
    env: dict[str, str]
    processes: list[Process]

    def endpoint(self, tenant_id: str) -> str:
        return f"{self.url}/v1/{tenant_id}"

    def logs(self) -> str:
        return "\n".join(p.log() for p in self.processes)

    def stop(self) -> None:
        for process in self.processes:
            process.stop()


def start_all(state_path: pathlib.Path, database_url: str | None, **extra_env: str) -> Kiln:
    """kiln-all: API and worker in one process."""
    state_path.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = kiln_environment(state_path, database_url, port, **extra_env)
    migrate(env)
    process = Process([str(BIN / "kiln-all")], env, state_path / "kiln-all.log")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(process, url + "/")
    except BaseException:
        process.stop()
        raise
    return Kiln(url, env, [process])


def start_split(state_path: pathlib.Path, database_url: str, engines: int = 1,
                **extra_env: str) -> Kiln:
    """kiln-api under gunicorn plus separate kiln-engine processes."""
    state_path.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = kiln_environment(state_path, database_url, port, **extra_env)
    migrate(env)
    processes = [Process([str(BIN / "kiln-api")], env, state_path / "kiln-api.log")]
    processes += [Process([str(BIN / "kiln-engine")], env, state_path / f"kiln-engine-{i}.log")
                  for i in range(engines)]
    url = f"http://127.0.0.1:{port}"
    kiln = Kiln(url, env, processes)
    try:
        wait_until_serving(processes[0], url + "/")
    except BaseException:
        kiln.stop()
        raise
    return kiln
