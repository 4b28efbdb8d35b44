"""Nested stacks: the stack and resource that own a child stack, and its depth.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22 16:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('stacks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('owner_id', sa.String(length=36), nullable=True))
        batch_op.add_column(sa.Column('parent_resource', sa.String(length=255),
                                      nullable=True))
        batch_op.add_column(sa.Column('nested_depth', sa.Integer(), nullable=False,
                                      server_default='0'))
        batch_op.create_index('ix_stacks_owner_id', ['owner_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('stacks', schema=None) as batch_op:
        batch_op.drop_index('ix_stacks_owner_id')
        batch_op.drop_column('nested_depth')
        batch_op.drop_column('parent_resource')
        batch_op.drop_column('owner_id')
