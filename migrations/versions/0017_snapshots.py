"""Stack snapshots (``POST …/snapshots``): a stack's definition and its resources' data,
kept for a restore.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28 09:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import engine.db.base

revision: str = '0017'
down_revision: str | None = '0016'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    op.create_table('snapshots',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('stack_id', sa.String(length=36), nullable=False),
    sa.Column('tenant_id', sa.String(length=36), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('status_reason', sa.Text(), nullable=True),
    sa.Column('data', JSON, nullable=True),
    sa.Column('created_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['stack_id'], ['stacks.id'],
                            name=op.f('fk_snapshots_stack_id_stacks'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_snapshots'))
    )
    op.create_index(op.f('ix_snapshots_stack_id'), 'snapshots', ['stack_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_snapshots_stack_id'), table_name='snapshots')
    op.drop_table('snapshots')
