"""``kiln-engine``: one worker process; start more of them to scale out."""

from __future__ import annotations

import signal
import threading
from collections.abc import Sequence

from engine import bootstrap

#: The head of ``kiln-engine --help``.
DESCRIPTION = (
    "Run one Kiln worker: it claims the stack operations and resource steps that the API "
    "records in the database and carries them out. Start more of them, on this machine or "
    "others sharing the database, to scale out.")


def main(argv: Sequence[str] | None = None) -> int:
    kiln = bootstrap.start(argv, "kiln-engine", DESCRIPTION)
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
