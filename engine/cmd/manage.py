"""``kiln-manage``: the admin CLI; wiring here, commands in ``engine.cli``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from engine import bootstrap
from engine.cli import app


def main(argv: Sequence[str] | None = None) -> int:
    def build(config_args: Sequence[str], create_database: bool) -> bootstrap.Kiln:
        # cliff has set up the command's logging (-v, -q, --log-file): see engine.cli.app.
        conf = bootstrap.load_config(config_args, "kiln-manage", configure_logs=False)
        return bootstrap.build(conf, check_schema=False, create_database=create_database)

    return app.main(list(sys.argv[1:] if argv is None else argv), build)
