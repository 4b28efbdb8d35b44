"""Event sinks: a stack's sinks beside its environment (``stacks.event_sinks``), and the
durable outbox of the events owed to them (``event_deliveries``).

Stacks stored before this revision keep ``event_sinks`` null: their environments' sinks
were stored and never sent (any type was accepted), and they are sent from the stack's
next update, which sets the column with the environment.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28 09:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import engine.db.base

revision: str = '0018'
down_revision: str | None = '0017'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    with op.batch_alter_table('stacks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('event_sinks', JSON, nullable=True))
    op.create_table('event_deliveries',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('event_id', sa.String(length=36), nullable=False),
    sa.Column('stack_id', sa.String(length=36), nullable=False),
    sa.Column('target', sa.String(length=2048), nullable=False),
    sa.Column('secret', sa.Text(), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('next_attempt_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('claim', sa.String(length=36), nullable=True),
    sa.Column('last_error', sa.String(length=255), nullable=False),
    sa.Column('created_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('given_up_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['stack_id'], ['stacks.id'],
                            name=op.f('fk_event_deliveries_stack_id_stacks'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_event_deliveries'))
    )
    op.create_index(op.f('ix_event_deliveries_next_attempt_at'), 'event_deliveries',
                    ['next_attempt_at'], unique=False)
    op.create_index(op.f('ix_event_deliveries_stack_id'), 'event_deliveries', ['stack_id'],
                    unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_event_deliveries_stack_id'), table_name='event_deliveries')
    op.drop_index(op.f('ix_event_deliveries_next_attempt_at'),
                  table_name='event_deliveries')
    op.drop_table('event_deliveries')
    with op.batch_alter_table('stacks', schema=None) as batch_op:
        batch_op.drop_column('event_sinks')
