"""``kiln-all``: the API and a worker in one process, for one machine (SQLite default).

The API is served by waitress, a production WSGI server with a thread pool; the worker
runs the same loop as ``kiln-engine`` in a thread beside it.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from waitress.server import create_server

from engine import bootstrap, metrics

# waitress warns "Task queue depth is N" for every request that waits for a free thread:
# under a burst that is a line per request, written while holding the lock its threads
# take their next request with. Request latency is measured by Kiln's own metrics.
WAITRESS_QUEUE_LOGGER = "waitress.queue"

#: The head of ``kiln-all --help``.
DESCRIPTION = (
    "Run Kiln, an orchestration service compatible with OpenStack Heat, on one machine: "
    "the Heat API (served by waitress) and a worker that carries out stack operations, in "
    "one process. The database is a SQLite file under state_path unless [database] "
    "connection names another. Create it first with kiln-manage db upgrade.")


def main(argv: Sequence[str] | None = None) -> int:
    kiln = bootstrap.start(argv, "kiln-all", DESCRIPTION)
    conf = kiln.conf
    logging.getLogger(WAITRESS_QUEUE_LOGGER).setLevel(logging.ERROR)
    stop = threading.Event()
    worker = kiln.worker()
    thread = threading.Thread(target=worker.run, args=(stop,), name="kiln-worker", daemon=True)
    # waitress's channels (its wake-up pipe first); kept so a failed bind can close them.
    channels: dict[int, Any] = {}
    try:
        server = create_server(kiln.wsgi_app(), map=channels, host=conf.api.bind_host,
                               port=conf.api.bind_port, threads=conf.api.threads, ident="kiln")
    except OSError as exc:
        # Usually another kiln-all (or another service) on the port: one line, as for every
        # other refusal to start, not waitress's traceback.
        print(f"kiln-all: cannot listen on {conf.api.bind_host}:{conf.api.bind_port}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        for channel in list(channels.values()):
            channel.close()
        kiln.db.dispose()
        return 1

    def shut_down(*_: object) -> None:
        if stop.is_set():
            return  # a second signal while shutting down changes nothing
        stop.set()
        worker.wake()
        # waitress's run() returns on SystemExit, after closing its connections. Closing
        # only the listening socket is not enough: the loop keeps polling clients' open
        # keep-alive connections and never returns.
        raise SystemExit

    thread.start()
    print(f"Kiln is listening on {kiln.api_url} (Heat API v1 at {kiln.api_url}/v1/<tenant-id>)",
          flush=True)
    try:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, shut_down)
        with metrics.queue_depth_reported(kiln.queue_depth):  # /metrics on the API's port
            server.run()
    except OSError:
        if not stop.is_set():
            raise
    finally:
        stop.set()
        worker.wake()
        # Its hand-back: a heartbeat interval for operations in flight, one transaction
        # (which on SQLite may wait for the write lock).
        thread.join(timeout=30)
        kiln.db.dispose()
    return 0
