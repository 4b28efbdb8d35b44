"""A PostgreSQL server of the test's own (initdb into a temporary directory, a free port),
so a test can stop and restart it without disturbing the machine's server that every
other test uses. It runs as the ``postgres`` user, as PostgreSQL insists."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence

import psycopg

from tests.functional import servers

BIN = next(iter(sorted(pathlib.Path("/usr/lib/postgresql").glob("*/bin"))), None)


def available() -> bool:
    return BIN is not None and os.geteuid() == 0 and shutil.which("runuser") is not None


class PrivatePostgreSQL:
    def __init__(self) -> None:
        if not available():
            raise RuntimeError("needs root, runuser and PostgreSQL's server binaries")
        # Not under pytest's temporary directory: the postgres user cannot enter it.
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="kiln-pg-"))
        self.data = self.root / "data"
        self.port = servers.free_port()
        shutil.chown(self.root, "postgres", "postgres")
        self._as_postgres("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres")
        self.start()
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute("CREATE DATABASE kiln")

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/kiln"

    def start(self) -> None:
        self._as_postgres("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w",
                          "-o", f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1",
                          "start")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                psycopg.connect(self.admin_url, connect_timeout=1).close()
                return
            except psycopg.OperationalError:
                time.sleep(0.1)
        raise RuntimeError((self.root / "log").read_text())

    def stop(self) -> None:
        self._as_postgres("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        """Stop the server if it runs, and delete its files."""
        subprocess.run(["runuser", "-u", "postgres", "--", str(BIN / "pg_ctl"), "-D",
                        str(self.data), "-m", "immediate", "-w", "stop"],
                       capture_output=True, timeout=60, cwd=str(self.root), check=False)
        shutil.rmtree(self.root, ignore_errors=True)

    def _as_postgres(self, program: str, *args: str) -> None:
        command: Sequence[str] = ["runuser", "-u", "postgres", "--", str(BIN / program), *args]
        subprocess.run(command, check=True, capture_output=True, timeout=120,
                       cwd=str(self.root))
