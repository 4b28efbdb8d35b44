"""``kiln-api``: the HTTP API under gunicorn; each gunicorn worker builds its own app.

Its workers keep their metrics in files of one directory, which /metrics sums
(prometheus_client's multiprocess mode). prometheus_client chooses that mode when it is
first imported, and ``engine.bootstrap`` imports it (through ``engine.metrics``): so this
module imports bootstrap only inside its functions, once :func:`main` has set
``PROMETHEUS_MULTIPROC_DIR``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from gunicorn import glogging
from gunicorn.app.base import BaseApplication
from oslo_config import cfg

from engine import config

#: prometheus_client's variable: the directory of the workers' metric files.
METRICS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"

#: The head of ``kiln-api --help``.
DESCRIPTION = (
    "Serve Kiln's Heat-compatible HTTP API under gunicorn: [api] workers processes of "
    "[api] threads threads each. It only records stack operations in the database; "
    "kiln-engine workers sharing that database (PostgreSQL, for more than one process) "
    "carry them out.")


class _GunicornLogs(glogging.Logger):
    """gunicorn's own lines (started, worker booted, worker timed out) go through Kiln's
    logging: the same format and file as every other line (``engine.logs``)."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for handler in list(self.error_log.handlers):
            self.error_log.removeHandler(handler)
        self.error_log.propagate = True


class _Gunicorn(BaseApplication):
    def __init__(self, argv: Sequence[str], options: dict[str, Any], *,
                 metrics_dir: str) -> None:
        self._argv = list(argv)
        self._options = options
        self._metrics_dir = metrics_dir
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        from engine import bootstrap  # imported by main already: see the docstring

        # NOTE: built after the fork, so no database connection is shared between workers.
        conf = bootstrap.load_config(self._argv, "kiln-api")
        return bootstrap.build(conf).wsgi_app(metrics_multiprocess_dir=self._metrics_dir)


def metrics_directory(conf: cfg.ConfigOpts) -> str:
    """Where the workers keep their metrics: ``PROMETHEUS_MULTIPROC_DIR`` when the
    operator set it, else ``<state_path>/metrics/kiln-api-<bind_port>`` (a kiln-api of
    its own per port, should two share a state_path). Created here; emptied only once
    this kiln-api holds its port (:func:`empty_metrics_directory`)."""
    directory = os.environ.get(METRICS_DIR_VARIABLE) or os.path.join(
        conf.state_path, "metrics", f"kiln-api-{conf.api.bind_port}")
    os.makedirs(directory, exist_ok=True)
    return directory


def empty_metrics_directory(directory: str) -> None:
    """Remove an earlier run's metric files: their counts would add to this run's, and a
    reused pid's file would be written on from where the dead process left it. Run from
    gunicorn's ``when_ready`` (the port is bound, no worker is forked yet): a second
    kiln-api started on a busy port exits before it, leaving the running one's files."""
    for name in os.listdir(directory):
        if name.endswith(".db"):
            os.remove(os.path.join(directory, name))


def _child_exit(metrics_dir: str) -> Callable[[Any, Any], None]:
    """gunicorn's ``child_exit`` hook: a worker that exited keeps no live gauge."""
    def child_exit(_server: Any, worker: Any) -> None:
        from engine import metrics  # imported by main already: see the docstring

        metrics.mark_process_dead(worker.pid, metrics_dir)

    return child_exit


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # Read once for the metrics directory, before prometheus_client is imported (a bad
    # option or --help ends the process here, as bootstrap.start would).
    conf = config.load(args, prog="kiln-api", description=DESCRIPTION)
    if "prometheus_client" in sys.modules:  # a module-level import that pulls it in
        raise RuntimeError("kiln-api: prometheus_client was imported before "
                           f"{METRICS_DIR_VARIABLE} was set; /metrics would miss workers")
    try:
        metrics_dir = metrics_directory(conf)
    except OSError as exc:
        print(f"kiln-api: cannot prepare the metrics directory: {exc}", file=sys.stderr)
        return 1
    os.environ[METRICS_DIR_VARIABLE] = metrics_dir
    from engine import bootstrap

    # Fail before forking, not in every worker.
    kiln = bootstrap.start(args, "kiln-api", DESCRIPTION)
    conf = kiln.conf
    kiln.db.dispose()
    print(f"Kiln API listening on {kiln.api_url}/v1/<tenant-id>", flush=True)
    _Gunicorn(args, {
        "bind": f"{conf.api.bind_host}:{conf.api.bind_port}",
        "workers": conf.api.workers, "threads": conf.api.threads,
        "worker_class": "gthread", "graceful_timeout": 10,
        # No access log of gunicorn's: Kiln's middleware writes one line per request,
        # with its request id and tenant (engine.api.middleware.AccessLog).
        "accesslog": None, "logger_class": _GunicornLogs,
        "loglevel": bootstrap.log_settings(conf).level.lower(),
        "when_ready": lambda _server: empty_metrics_directory(metrics_dir),
        "child_exit": _child_exit(metrics_dir),
    }, metrics_dir=metrics_dir).run()
    return 0
