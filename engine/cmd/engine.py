"""``kiln-engine``: one worker process; start more of them to scale out. With
``[engine] metrics_port`` it serves its Prometheus metrics on a port of its own."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Sequence

from engine import bootstrap, metrics

#: The head of ``kiln-engine --help``.
DESCRIPTION = (
    "Run one Kiln worker: it claims the stack operations and resource steps that the API "
    "records in the database and carries them out. Start more of them, on this machine or "
    "others sharing the database, to scale out.")


def main(argv: Sequence[str] | None = None) -> int:
    kiln = bootstrap.start(argv, "kiln-engine", DESCRIPTION)
    host, port = kiln.conf.engine.metrics_host, kiln.conf.engine.metrics_port
    stop_metrics = None
    if port:
        try:
            stop_metrics = metrics.serve(host, port)
        except OSError as exc:
            # Usually another kiln-engine on this machine with the same port: one line,
            # as kiln-all says it of its API port.
            print(f"kiln-engine: cannot serve metrics on {host}:{port}: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            kiln.db.dispose()
            return 1
        shown = f"[{host}]" if ":" in host else host
        print(f"Kiln engine metrics at http://{shown}:{port}/metrics", flush=True)
    stop = threading.Event()
    worker = kiln.worker()

    def shut_down(*_: object) -> None:
        stop.set()
        worker.wake()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, shut_down)
    print(f"Kiln engine worker {worker.id} running", flush=True)
    with metrics.queue_depth_reported(kiln.queue_depth):
        worker.run(stop)
    if stop_metrics is not None:
        stop_metrics()
    kiln.db.dispose()
    return 0
