"""``kiln-api``: the HTTP API under gunicorn; each gunicorn worker builds its own app."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from gunicorn.app.base import BaseApplication

from engine import bootstrap

#: The head of ``kiln-api --help``.
DESCRIPTION = (
    "Serve Kiln's Heat-compatible HTTP API under gunicorn: [api] workers processes of "
    "[api] threads threads each. It only records stack operations in the database; "
    "kiln-engine workers sharing that database (PostgreSQL, for more than one process) "
    "carry them out.")


class _Gunicorn(BaseApplication):
    def __init__(self, argv: Sequence[str], options: dict[str, Any]) -> None:
        self._argv = list(argv)
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        # NOTE: built after the fork, so no database connection is shared between workers.
        conf = bootstrap.load_config(self._argv, "kiln-api")
        return bootstrap.build(conf).wsgi_app()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # Fail before forking, not in every worker.
    kiln = bootstrap.start(args, "kiln-api", DESCRIPTION)
    conf = kiln.conf
    kiln.db.dispose()
    print(f"Kiln API listening on {kiln.api_url}/v1/<tenant-id>", flush=True)
    _Gunicorn(args, {
        "bind": f"{conf.api.bind_host}:{conf.api.bind_port}",
        "workers": conf.api.workers, "threads": conf.api.threads,
        "worker_class": "gthread", "accesslog": "-", "graceful_timeout": 10,
    }).run()
    return 0
