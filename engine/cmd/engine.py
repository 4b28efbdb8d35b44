"""``kiln-engine``: one worker process; start more of them to scale out."""

from __future__ import annotations

import signal
import threading
from collections.abc import Sequence

from engine import bootstrap


def main(argv: Sequence[str] | None = None) -> int:
    kiln = bootstrap.start(argv, "kiln-engine")
    stop = threading.Event()
    worker = kiln.worker()

    def shut_down(*_: object) -> None:
        stop.set()
        worker.wake()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, shut_down)
    print(f"Kiln engine worker {worker.id} running", flush=True)
    worker.run(stop)
    kiln.db.dispose()
    return 0
