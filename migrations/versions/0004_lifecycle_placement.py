"""The placement lifecycle plugin's reservations.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 15:00:00

The table is ``plugins.lifecycle.placement.store.RESERVATIONS``; keep the two identical.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('lifecycle_placement_reservations',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('stack_id', sa.String(length=36), nullable=False),
    sa.Column('resource_name', sa.String(length=255), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('tenant_id', sa.String(length=36), nullable=False),
    sa.Column('resource_type', sa.String(length=255), nullable=False),
    sa.Column('rack', sa.String(length=255), nullable=False),
    sa.Column('host', sa.String(length=255), nullable=False),
    sa.Column('amounts', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name='pk_lifecycle_placement_reservations'),
    sa.UniqueConstraint('stack_id', 'resource_name', 'state',
                        name='uq_lifecycle_placement_reservations_stack_resource_state'),
    sa.CheckConstraint("state IN ('held', 'pending')",
                       name='ck_lifecycle_placement_reservations_state'),
    )


def downgrade() -> None:
    op.drop_table('lifecycle_placement_reservations')
