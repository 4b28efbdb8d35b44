"""Signals: what resources took through ``POST …/signal``, and the tokens that may send
them (``OS::Heat::WaitConditionHandle``).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 10:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import engine.db.base

revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    op.create_table('resource_signals',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('resource_id', sa.Integer(), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('details', JSON, nullable=False),
    sa.Column('created_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['resource_id'], ['resources.id'],
                            name=op.f('fk_resource_signals_resource_id_resources'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_resource_signals'))
    )
    op.create_index('ix_resource_signals_resource_id_generation', 'resource_signals',
                    ['resource_id', 'generation'], unique=False)
    op.create_table('signal_tokens',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('resource_id', sa.Integer(), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['resource_id'], ['resources.id'],
                            name=op.f('fk_signal_tokens_resource_id_resources'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_signal_tokens')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_signal_tokens_token_hash'))
    )
    op.create_index(op.f('ix_signal_tokens_resource_id'), 'signal_tokens', ['resource_id'],
                    unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_signal_tokens_resource_id'), table_name='signal_tokens')
    op.drop_table('signal_tokens')
    op.drop_index('ix_resource_signals_resource_id_generation',
                  table_name='resource_signals')
    op.drop_table('resource_signals')
