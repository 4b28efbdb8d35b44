"""When a token stops authenticating by itself (``kiln-manage token create --expires-in``);
null, as for every token issued before, means it lives until revoked.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 03:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import engine.db.base

revision: str = '0013'
down_revision: str | None = '0012'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('tokens', schema=None) as batch_op:
        batch_op.add_column(sa.Column('expires_at', engine.db.base.UTCDateTime(timezone=True),
                                      nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('tokens', schema=None) as batch_op:
        batch_op.drop_column('expires_at')
