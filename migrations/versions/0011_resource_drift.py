"""Where a resource's live state differs from its template, as its last check (or a
converging update) observed it: ``{property: {expected, actual}}``; null when never seen.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 01:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0011'
down_revision: str | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')


def upgrade() -> None:
    with op.batch_alter_table('resources', schema=None) as batch_op:
        batch_op.add_column(sa.Column('drift', JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('resources', schema=None) as batch_op:
        batch_op.drop_column('drift')
