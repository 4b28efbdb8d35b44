"""Fast takeover: a worker's claims are its own while its liveness row lives. Each worker
renews ``workers.alive_until`` at every heartbeat; another worker that finds it past sets
``workers.fenced_at``, and from then on anyone may claim what the fenced worker held.

Rows written before this revision: a worker's liveness is its last heartbeat (so one that
is not running any more is fenced by the first heartbeat of a new worker). Every engine
must be stopped before the upgrade, as for any migration: an engine of the old revision
renews no liveness, and would be fenced while it works.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27 09:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import engine.db.base

revision: str = '0015'
down_revision: str | None = '0014'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('workers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('alive_until',
                                      engine.db.base.UTCDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('fenced_at',
                                      engine.db.base.UTCDateTime(timezone=True), nullable=True))
    op.execute('UPDATE workers SET alive_until = heartbeat_at')


def downgrade() -> None:
    with op.batch_alter_table('workers', schema=None) as batch_op:
        batch_op.drop_column('fenced_at')
        batch_op.drop_column('alive_until')
