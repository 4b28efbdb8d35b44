"""The type of the resource a step acts on, so workers can limit how many steps of one
type they run at once ([engine] type_concurrency) when they claim.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-22 18:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0010'
down_revision: str | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('steps', schema=None) as batch_op:
        batch_op.add_column(sa.Column('resource_type', sa.String(length=255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('steps', schema=None) as batch_op:
        batch_op.drop_column('resource_type')
