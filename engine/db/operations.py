"""Left only for ``engine.worker.step``'s import, until it reads ``request_id_of`` from
``engine.db.queries``; operations are written by ``engine.db.transitions``."""

from __future__ import annotations

from engine.db.queries import request_id_of as request_id_of
