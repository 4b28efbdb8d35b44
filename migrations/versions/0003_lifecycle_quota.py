"""The quota lifecycle plugin's usage table: one row per stack that holds quota.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 14:00:00

Must match ``plugins.lifecycle.quota.store.USAGE`` exactly (names and types included).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('lifecycle_quota_usage',
    sa.Column('stack_id', sa.String(length=36), nullable=False),
    sa.Column('tenant_id', sa.String(length=36), nullable=False),
    sa.Column('resources', sa.Integer(), nullable=False),
    sa.Column('pending_resources', sa.Integer(), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('stack_id', name='pk_lifecycle_quota_usage')
    )
    with op.batch_alter_table('lifecycle_quota_usage', schema=None) as batch_op:
        batch_op.create_index('ix_lifecycle_quota_usage_tenant_id', ['tenant_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('lifecycle_quota_usage', schema=None) as batch_op:
        batch_op.drop_index('ix_lifecycle_quota_usage_tenant_id')

    op.drop_table('lifecycle_quota_usage')
