"""Breakpoints: the hooks steps reached and wait on until a signal clears them
(``resource_hooks``, ``specs/breakpoints.rst``).

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28 09:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import engine.db.base

revision: str = '0019'
down_revision: str | None = '0018'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('resource_hooks',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('step_id', sa.Integer(), nullable=False),
    sa.Column('resource_id', sa.Integer(), nullable=False),
    sa.Column('hook', sa.String(length=16), nullable=False),
    sa.Column('reached_at', engine.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('cleared_at', engine.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['resource_id'], ['resources.id'],
                            name=op.f('fk_resource_hooks_resource_id_resources'),
                            ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['step_id'], ['steps.id'],
                            name=op.f('fk_resource_hooks_step_id_steps'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_resource_hooks')),
    sa.UniqueConstraint('step_id', 'hook', name=op.f('uq_resource_hooks_step_id_hook'))
    )
    op.create_index(op.f('ix_resource_hooks_resource_id'), 'resource_hooks', ['resource_id'],
                    unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_resource_hooks_resource_id'), table_name='resource_hooks')
    op.drop_table('resource_hooks')
