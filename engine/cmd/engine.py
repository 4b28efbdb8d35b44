"""``kiln-engine``: one worker process; start more of them to scale out."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Sequence

from engine import bootstrap
from engine.errors import KilnError


def main(argv: Sequence[str] | None = None) -> int:
    conf = bootstrap.load_config(list(sys.argv[1:] if argv is None else argv), "kiln-engine")
    try:
        kiln = bootstrap.build(conf)
    except KilnError as exc:
        print(f"kiln-engine: {exc}", file=sys.stderr)
        return 1
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    worker = kiln.worker()
    print(f"Kiln engine worker {worker.id} running", flush=True)
    worker.run(stop)
    kiln.db.dispose()
    return 0
