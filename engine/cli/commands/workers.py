"""``kiln-manage worker list|forget``: the engine processes, as their heartbeats show."""

from __future__ import annotations

import argparse
import datetime
from typing import Any

from cliff.command import Command

from engine.cli.base import KilnLister, KilnShowOne, ago, when
from engine.clock import utcnow

FIELDS = ("id", "host", "pid", "started_at", "heartbeat_age", "steps_held", "alive",
          "stopped_at")


def _row(worker: Any, now: datetime.datetime) -> tuple[Any, ...]:
    return (worker.id, worker.host, worker.pid, when(worker.started_at),
            ago(worker.heartbeat_at, now), worker.steps_held, worker.alive,
            when(worker.stopped_at))


class WorkerList(KilnLister):
    """List the engine workers: host, pid, heartbeat age, steps held, alive or dead.

    Alive means its liveness renewed within its lease, neither stopped nor fenced. A dead
    worker is fenced by the others, which resume its work."""

    example = "kiln-manage worker list --dead"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--dead", action="store_true", help="only dead workers")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        now = utcnow()
        workers = self.kiln.workers.list_workers()
        if parsed_args.dead:
            workers = [w for w in workers if not w.alive]
        return FIELDS, [_row(w, now) for w in workers]


class WorkerForget(KilnShowOne):
    """Remove a dead worker from the list.

    Named by its id or the first characters of it. A live one is refused: it would
    only register again."""

    example = "kiln-manage worker forget 8c1d"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("worker", help="id or its first characters (4 or more)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        record = self.kiln.operator.forget_worker(parsed_args.worker)
        return FIELDS, _row(record, utcnow())


COMMANDS: dict[str, type[Command]] = {"worker list": WorkerList, "worker forget": WorkerForget}
