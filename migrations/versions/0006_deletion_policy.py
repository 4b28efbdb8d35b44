"""A resource's deletion policy, kept with the resource: a delete honours the policy of
the definition that made the resource, even when the template no longer has it.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22 16:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('resources', schema=None) as batch_op:
        batch_op.add_column(sa.Column('deletion_policy', sa.String(length=16), nullable=False,
                                      server_default='Delete'))


def downgrade() -> None:
    with op.batch_alter_table('resources', schema=None) as batch_op:
        batch_op.drop_column('deletion_policy')
