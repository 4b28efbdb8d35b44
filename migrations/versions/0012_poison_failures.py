"""How many claims of an operation or step have passed since it last made progress, so
one that keeps failing on a bug, or keeps killing its worker, is ended after a few tries
(engine/worker/poison.py) rather than retried every lease for ever.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 23:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0012'
down_revision: str | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    for table in ('operations', 'steps'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('failures', sa.Integer(), server_default='0',
                                          nullable=False))


def downgrade() -> None:
    for table in ('operations', 'steps'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column('failures')
