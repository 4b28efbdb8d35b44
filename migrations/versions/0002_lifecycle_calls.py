"""Lifecycle plugin calls: the requester's context and call progress on operations, and
the call details on events; the request payload of operations (adopt data).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 13:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSON = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('operations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('context', JSON, nullable=False,
                                      server_default='{}'))
        batch_op.add_column(sa.Column('lifecycle', JSON, nullable=False,
                                      server_default='{}'))
        batch_op.add_column(sa.Column('payload', JSON, nullable=True))
    with op.batch_alter_table('events', schema=None) as batch_op:
        batch_op.add_column(sa.Column('lifecycle', JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('events', schema=None) as batch_op:
        batch_op.drop_column('lifecycle')
    with op.batch_alter_table('operations', schema=None) as batch_op:
        batch_op.drop_column('payload')
        batch_op.drop_column('lifecycle')
        batch_op.drop_column('context')
