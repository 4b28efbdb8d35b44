"""A nested stack's view of the resource that owns it (``resource_facade``): that
resource's metadata, deletion policy and update policy when the child was last defined.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-22 16:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')


def upgrade() -> None:
    with op.batch_alter_table('stacks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('facade', JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('stacks', schema=None) as batch_op:
        batch_op.drop_column('facade')
